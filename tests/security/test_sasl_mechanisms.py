"""The SASL mechanisms and TLS principal mapping, ported from Kafka's unit tests:
ScramFormatterTest, ScramSaslServerTest, PlainSaslServerTest, OAuthBearerUnsecuredJwsTest and
OAuthBearerUnsecuredValidatorCallbackHandlerTest, SslPrincipalMapperTest, JaasConfigTest."""
from __future__ import annotations

import base64
import json
import time

import pytest

from kafka_emu.broker.security.jaas import parse_jaas_config
from kafka_emu.broker.security.oauthbearer import OAuthBearerSaslServer, UnsecuredValidator
from kafka_emu.broker.security.plain import PlainSaslServer
from kafka_emu.broker.security.sasl_server import SaslAuthenticationException, SaslException
from kafka_emu.broker.security.scram import ScramFormatter, ScramMechanism, ScramSaslServer
from kafka_emu.broker.security.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper
from kafka_emu.common.config_def import ConfigException

pytestmark = pytest.mark.timeout(30)


# --- ScramFormatterTest / ScramSaslServerTest ----------------------------------------------------

def test_rfc7677_example() -> None:
    """ScramFormatterTest.rfc7677Example: the RFC's SCRAM-SHA-256 exchange, end to end."""
    formatter = ScramFormatter(ScramMechanism.SCRAM_SHA_256)
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = formatter.generate_credential("pencil", 4096, salt)
    server = ScramSaslServer(ScramMechanism.SCRAM_SHA_256, lambda user: credential if user == "user" else None)
    server.formatter.secure_random_string = lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"   # the RFC's server nonce
    first = server.evaluate_response(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = server.evaluate_response(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.authorization_id == "user"


def _client_exchange(mechanism: ScramMechanism, user: str, password: str, stored: str,
                     authzid: str = "", known: str | None = None) -> ScramSaslServer:
    formatter = ScramFormatter(mechanism)
    credential = formatter.generate_credential(stored, 4096)
    server = ScramSaslServer(mechanism, lambda u: credential if u == (known or user) else None)
    bare = f"n={user},r=clientnonce"
    first = server.evaluate_response(f"n,{'a=' + authzid if authzid else ''},{bare}".encode()).decode()
    fields = dict(f.split("=", 1) for f in first.split(","))
    salted = formatter.salted_password(password, base64.b64decode(fields["s"]), int(fields["i"]))
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{bare},{first},{without_proof}".encode()
    client_key = formatter.client_key(salted)
    signature = formatter.hmac(formatter.stored_key(client_key), auth_message)
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    final = server.evaluate_response(f"{without_proof},p={proof}".encode())
    assert final == b"v=" + base64.b64encode(formatter.hmac(formatter.server_key(salted), auth_message))
    return server


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_scram_round_trip_and_wrong_password(mechanism: ScramMechanism) -> None:
    """ScramSaslServerTest.validImplicitAuthorizationId / validExplicitAuthorizationId."""
    assert _client_exchange(mechanism, "alice", "secret", "secret").authorization_id == "alice"
    assert _client_exchange(mechanism, "alice", "secret", "secret", authzid="alice").complete
    with pytest.raises(SaslException, match="Invalid client credentials"):
        _client_exchange(mechanism, "alice", "wrong", "secret")


def test_scram_unknown_user_and_other_authorization_id() -> None:
    """ScramSaslServerTest.invalidAuthorizationId; an unknown user fails without saying so."""
    with pytest.raises(SaslException, match="Invalid user credentials"):
        _client_exchange(ScramMechanism.SCRAM_SHA_256, "mallory", "x", "x", known="alice")
    with pytest.raises(SaslAuthenticationException, match="authorization id that is different from username"):
        _client_exchange(ScramMechanism.SCRAM_SHA_256, "alice", "secret", "secret", authzid="bob")
    server = ScramSaslServer(ScramMechanism.SCRAM_SHA_512, lambda u: None)
    with pytest.raises(SaslException, match="Invalid SCRAM client first message format"):
        server.evaluate_response(b"y,,n=alice,r=abc")   # channel binding: not supported, as in Kafka


def test_scram_saslname_escapes() -> None:
    """ScramFormatterTest.saslName: =2C is ',' and =3D is '='."""
    assert _client_exchange(ScramMechanism.SCRAM_SHA_256, "a=3Db=2Cc", "pw", "pw", known="a=b,c").authorization_id == "a=b,c"


# --- PlainSaslServerTest -----------------------------------------------------------------------

@pytest.mark.parametrize("message, expected", [
    (b"\0alice\0alice-secret", "alice"),                       # noAuthorizationIdSpecified
    (b"alice\0alice\0alice-secret", "alice"),                  # authorizationIdEqualsAuthenticationId
])
def test_plain_valid(message: bytes, expected: str) -> None:
    server = PlainSaslServer({"alice": "alice-secret"})
    assert server.evaluate_response(message) == b"" and server.authorization_id == expected


@pytest.mark.parametrize("message, error", [
    (b"bob\0alice\0alice-secret", "authorization id that is different from username"),   # ...NotEqualsAuthenticationId
    (b"\0alice\0wrong", "Invalid username or password"),
    (b"\0mallory\0x", "Invalid username or password"),
    (b"\0\0x", "username not specified"),
    (b"\0alice\0", "password not specified"),
    (b"alice\0alice-secret", "expected 3 tokens, got 2"),
    (b"a\0b\0c\0d", "expected 3 tokens, got 4"),
])
def test_plain_invalid(message: bytes, error: str) -> None:
    with pytest.raises(SaslAuthenticationException, match=error):
        PlainSaslServer({"alice": "alice-secret"}).evaluate_response(message)


# --- OAuthBearerUnsecuredJwsTest / validator ----------------------------------------------------

def _b64(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def _token(claims: dict, header: dict | None = None, signature: str = "") -> str:
    return f"{_b64(header or {'alg': 'none'})}.{_b64(claims)}.{signature}"


def _message(token: str, authzid: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}\x01\x01".encode()


def test_oauthbearer_valid_token_and_lifetime() -> None:
    now = time.time()
    server = OAuthBearerSaslServer(UnsecuredValidator({}))
    assert server.evaluate_response(_message(_token({"sub": "alice", "iat": now, "exp": now + 60}))) == b""
    assert server.authorization_id == "alice"
    assert abs(server.credential_expiration_ms - (now + 60) * 1000) < 5


@pytest.mark.parametrize("claims, header, signature, status", [
    ({"exp": 1e12}, None, "", "invalid_token"),                              # no sub
    ({"sub": "a"}, None, "", "invalid_token"),                               # no exp
    ({"sub": "a", "exp": 1}, None, "", "invalid_token"),                     # expired
    ({"sub": "a", "exp": 1e12, "iat": 1e12 - 1}, None, "", "invalid_token"),   # issued in the future
    ({"sub": "a", "exp": 1e12}, {"alg": "HS256"}, "", "invalid_token"),      # not unsecured
    ({"sub": "a", "exp": 1e12}, None, "c2ln", "invalid_token"),             # signed
    ({"sub": "a", "exp": 1e12, "scope": "read"}, None, "", "insufficient_scope"),
])
def test_oauthbearer_invalid_tokens(claims: dict, header: dict | None, signature: str, status: str) -> None:
    """OAuthBearerUnsecuredValidatorCallbackHandlerTest: a refused token gets RFC 7628's error
    challenge, and the client's ^A then fails the authentication with it."""
    server = OAuthBearerSaslServer(UnsecuredValidator({"unsecuredValidatorRequiredScope": "write"}
                                                      if status == "insufficient_scope" else {}))
    challenge = json.loads(server.evaluate_response(_message(_token(claims, header, signature))))
    assert challenge["status"] == status
    with pytest.raises(SaslAuthenticationException, match=status):
        server.evaluate_response(b"\x01")


def test_oauthbearer_malformed_and_authzid() -> None:
    server = OAuthBearerSaslServer(UnsecuredValidator({"unsecuredValidatorPrincipalClaimName": "user"}))
    with pytest.raises(SaslException, match="Invalid OAUTHBEARER client first message"):
        server.evaluate_response(b"n,,auth=Bearer x")
    with pytest.raises(SaslAuthenticationException, match="different from the token's principal name"):
        server.evaluate_response(_message(_token({"user": "alice", "exp": 1e12}), authzid="bob"))


# --- SslPrincipalMapperTest ----------------------------------------------------------------------

def test_ssl_principal_mapper() -> None:
    """SslPrincipalMapperTest.testSslPrincipalMapper."""
    rules = ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
             "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, DEFAULT")
    mapper = SslPrincipalMapper(rules)
    assert mapper.get_name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.get_name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.get_name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert mapper.get_name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert mapper.get_name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"


def test_ssl_principal_mapper_invalid_rules_and_no_match() -> None:
    """SslPrincipalMapperTest.testInvalidRules; a rule list without DEFAULT can fail to map."""
    for rules in ("default", "DEFAUL", "DEFAULT/L", "RULE:/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/LU"):
        with pytest.raises(ConfigException):
            SslPrincipalMapper(rules)
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper("RULE:^CN=(.*)$/$1/").get_name("O=nobody")


def test_jaas_config_parsing() -> None:
    """JaasConfigTest: quoted values, escapes, flags; one module only; a malformed entry refused."""
    entry = parse_jaas_config('org.apache.kafka.common.security.plain.PlainLoginModule required '
                              'user_alice="al;ice" user_bob=bob "x"="y";'.replace('"x"="y"', 'k="a \\" b"'), "k")[0]
    assert entry.flag == "required" and entry.options == {"user_alice": "al;ice", "user_bob": "bob", "k": 'a " b'}
    for bad in ("Module required", "Module maybe;", "Module required a;", "M required; N required;"):
        with pytest.raises(ConfigException):
            parse_jaas_config(bad, "k")
