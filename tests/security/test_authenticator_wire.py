"""The SASL authenticator and the TLS layer at the wire, with a raw client: ports of
SaslServerAuthenticatorTest and SaslAuthenticatorTest (handshake and authenticate versions,
unsupported mechanisms, requests out of turn, failures answered then closed after
connection.failed.authentication.delay.ms, raw tokens after SaslHandshake v0, KIP-368 session
expiry and re-authentication), and fuzz cases (TLS garbage, plaintext on a TLS port, malformed
SASL tokens, unfinished handshakes) that must close only their own connection."""
from __future__ import annotations

import base64
import json
import os
import socket
import ssl
import struct
import time
from datetime import timedelta
from typing import Any, Iterator

import confluent_kafka
import pytest
from kio.index import load_request_schema

from kafka_emu.broker.cluster.cluster_security import ClusterSecurity
from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.protocol.adapter import response_schema
from kafka_emu.broker.protocol.codec import decode_response, encode_request
from kafka_emu.broker.security.scram import ScramFormatter, ScramMechanism
from kafka_emu.common.errors import Errors

pytestmark = pytest.mark.timeout(60)
pytest_plugins = ["pytester"]

DELAY_MS = 200
SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS, METADATA = 17, 36, 18, 3


class Raw:
    """A blocking client speaking frames; ``sock`` may be wrapped in TLS."""

    def __init__(self, bootstrap: str, context: ssl.SSLContext | None = None) -> None:
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=10)
        self.sock = context.wrap_socket(sock, server_hostname=host) if context else sock
        self.correlation_id = 0

    def request(self, api_key: int, version: int, **fields: Any) -> Any:
        body = load_request_schema(api_key, version)(**fields)
        self.correlation_id += 1
        self.sock.sendall(encode_request(body, self.correlation_id))
        size = struct.unpack(">i", self.exact(4))[0]
        corr, response = decode_response(self.exact(size), response_schema(api_key, version))
        assert corr == self.correlation_id
        return response

    def token(self, data: bytes) -> bytes:
        """A bare SASL token (after SaslHandshake v0) and the server's answer."""
        self.sock.sendall(struct.pack(">i", len(data)) + data)
        return self.exact(struct.unpack(">i", self.exact(4))[0])

    def exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the broker")
            out += chunk
        return out

    def closed_within(self, timeout_s: float) -> float:
        """Seconds until the broker closed the connection (fails if it stays open)."""
        start = time.monotonic()
        self.sock.settimeout(timeout_s)
        try:
            while self.sock.recv(1024):
                pass
        except (ConnectionError, ssl.SSLError):
            pass
        except TimeoutError:
            raise AssertionError("the connection stayed open") from None
        return time.monotonic() - start

    def handshake(self, mechanism: str, version: int = 1) -> Any:
        return self.request(SASL_HANDSHAKE, version, mechanism=mechanism)

    def authenticate(self, token: bytes, version: int = 2) -> Any:
        return self.request(SASL_AUTHENTICATE, version, auth_bytes=token)

    def plain(self, user: str, password: str, version: int = 2) -> Any:
        assert int(self.handshake("PLAIN").error_code) == 0
        return self.authenticate(f"\0{user}\0{password}".encode(), version)

    def close(self) -> None:
        self.sock.close()


def scram_login(client: Raw, user: str, password: str, version: int = 2, raw: bool = False) -> Any:
    """A SCRAM-SHA-256 exchange; the last answer (SaslAuthenticate response, or the raw token)."""
    formatter = ScramFormatter(ScramMechanism.SCRAM_SHA_256)
    bare = f"n={user},r=fyko+d2lbbFgONRv9qkxdawL"
    send = client.token if raw else (lambda t: client.authenticate(t, version))
    first = send(f"n,,{bare}".encode())
    first_text = (first if raw else bytes(first.auth_bytes)).decode()
    fields = dict(f.split("=", 1) for f in first_text.split(","))
    salted = formatter.salted_password(password, base64.b64decode(fields["s"]), int(fields["i"]))
    without_proof = f"c=biws,r={fields['r']}"
    client_key = formatter.client_key(salted)
    signature = formatter.hmac(formatter.stored_key(client_key), f"{bare},{first_text},{without_proof}".encode())
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    return send(f"{without_proof},p={proof}".encode())


def unsecured_token(sub: str, exp_s: float) -> str:
    def b64(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return f"{b64({'alg': 'none'})}.{b64({'sub': sub, 'exp': exp_s})}."


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    security = ClusterSecurity("SASL_PLAINTEXT", mechanisms=("PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"))
    config = {"connection.failed.authentication.delay.ms": DELAY_MS, "offsets.topic.replication.factor": 1,
              "listener.name.sasl_plaintext.scram-sha-256.connections.max.reauth.ms": "400"}
    with EmbeddedCluster(brokers=1, security=security, config=config) as c:
        yield c


@pytest.fixture()
def client(cluster: EmbeddedCluster) -> Iterator[Raw]:
    c = Raw(cluster.bootstrap_servers)
    yield c
    c.close()


def test_api_versions_handshake_and_authenticate(client: Raw) -> None:
    """SaslServerAuthenticatorTest.testApiVersionsRequestWithServerSupportedVersion, then a
    SaslHandshake v1 and SaslAuthenticate v2 PLAIN login, then ordinary requests."""
    versions = client.request(API_VERSIONS, 3, client_software_name="raw", client_software_version="1")
    listed = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in versions.api_keys}
    assert listed[SASL_HANDSHAKE] == (0, 1) and listed[SASL_AUTHENTICATE] == (0, 2)
    handshake = client.handshake("PLAIN")
    assert int(handshake.error_code) == 0
    assert list(handshake.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"]
    answer = client.authenticate(b"\0alice\0alice-secret")
    assert (int(answer.error_code), answer.session_lifetime) == (0, timedelta(0))
    assert client.request(METADATA, 12, topics=None, allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False).brokers
    # after authentication they reach KafkaApis: ILLEGAL_SASL_STATE (this client used v2, but
    # sends the handshake at v0: it is a re-authentication only with SaslAuthenticate v1+ seen)
    assert int(client.authenticate(b"x").error_code) == Errors.ILLEGAL_SASL_STATE


def test_unsupported_mechanism(client: Raw) -> None:
    """SaslServerAuthenticatorTest / SaslAuthenticatorTest.testUnsupportedMechanism."""
    answer = client.handshake("GSSAPI")
    assert int(answer.error_code) == Errors.UNSUPPORTED_SASL_MECHANISM
    assert "SCRAM-SHA-256" in answer.mechanisms
    assert client.closed_within(5) >= DELAY_MS / 1000 * 0.8


def test_request_before_handshake_closes_without_answer(client: Raw) -> None:
    """SaslServerAuthenticatorTest.testUnexpectedRequestTypeWithValidRequestHeader."""
    with pytest.raises(ConnectionError):
        client.request(METADATA, 12, topics=None, allow_auto_topic_creation=False,
                       include_topic_authorized_operations=False)


def test_wrong_password_answered_then_closed_after_the_delay(client: Raw) -> None:
    """SaslAuthenticatorTest.testInvalidPasswordSaslPlain, with connection.failed.authentication.delay.ms."""
    answer = client.plain("alice", "wrong")
    assert int(answer.error_code) == Errors.SASL_AUTHENTICATION_FAILED
    assert answer.error_message == "Authentication failed: Invalid username or password"
    assert client.closed_within(5) >= DELAY_MS / 1000 * 0.8


def test_scram_failure_message_does_not_leak(client: Raw) -> None:
    """An unknown SCRAM user is told only that its credentials were invalid."""
    assert int(client.handshake("SCRAM-SHA-256").error_code) == 0
    answer = client.authenticate(b"n,,n=mallory,r=abc")
    assert int(answer.error_code) == Errors.SASL_AUTHENTICATION_FAILED
    assert answer.error_message == ("Authentication failed during authentication due to invalid credentials "
                                    "with SASL mechanism SCRAM-SHA-256")


def test_other_request_while_authenticating_is_illegal_sasl_state(client: Raw) -> None:
    """SaslServerAuthenticatorTest: a Kafka request other than SaslAuthenticate during the exchange."""
    assert int(client.handshake("PLAIN").error_code) == 0
    answer = client.request(16, 4, states_filter=())   # ListGroups
    assert int(answer.error_code) == Errors.ILLEGAL_SASL_STATE
    client.closed_within(5)


def test_handshake_v0_raw_scram_tokens(client: Raw) -> None:
    """SaslAuthenticatorTest.testDisabledSaslAuthenticateHeader...: after SaslHandshake v0 the
    tokens travel bare, size-prefixed, and the connection then serves requests."""
    assert int(client.handshake("SCRAM-SHA-256", version=0).error_code) == 0
    assert scram_login(client, "alice", "alice-secret", raw=True).startswith(b"v=")
    assert client.request(API_VERSIONS, 3, client_software_name="raw", client_software_version="1").api_keys


def test_oauthbearer_unsecured_token(cluster: EmbeddedCluster) -> None:
    good, expired = Raw(cluster.bootstrap_servers), Raw(cluster.bootstrap_servers)
    try:
        assert int(good.handshake("OAUTHBEARER").error_code) == 0
        message = f"n,,\x01auth=Bearer {unsecured_token('alice', time.time() + 60)}\x01\x01".encode()
        answer = good.authenticate(message)
        assert int(answer.error_code) == 0 and 55_000 < answer.session_lifetime.total_seconds() * 1000 <= 60_000
        assert int(expired.handshake("OAUTHBEARER").error_code) == 0
        message = f"n,,\x01auth=Bearer {unsecured_token('alice', time.time() - 60)}\x01\x01".encode()
        challenge = expired.authenticate(message)
        assert int(challenge.error_code) == 0 and json.loads(challenge.auth_bytes) == {"status": "invalid_token"}
        answer = expired.authenticate(b"\x01")
        assert (int(answer.error_code), answer.error_message) == (Errors.SASL_AUTHENTICATION_FAILED,
                                                                  '{"status":"invalid_token"}')
    finally:
        good.close()
        expired.close()


def test_session_expiry_and_reauthentication(cluster: EmbeddedCluster) -> None:
    """KIP-368 (SaslAuthenticatorTest.testCannotReauthenticateWithDifferentPrincipal and
    testReauthenticationSessionExpires...): the SCRAM session lasts 400 ms here; a
    re-authentication before its end keeps the connection, another principal is refused, and a
    request after the end closes the connection."""
    server = cluster.broker(0).socket_server
    c = Raw(cluster.bootstrap_servers)
    try:
        assert int(c.handshake("SCRAM-SHA-256").error_code) == 0
        assert scram_login(c, "alice", "alice-secret").session_lifetime == timedelta(milliseconds=400)
        before = server.stats()["successful_reauthentications"]
        assert int(c.handshake("SCRAM-SHA-256").error_code) == 0          # re-authentication
        assert int(scram_login(c, "alice", "alice-secret").error_code) == 0
        assert server.stats()["successful_reauthentications"] == before + 1
        expired_before = server.stats()["expired_connections_killed"]
        time.sleep(0.45)   # the session lifetime itself is what is tested
        with pytest.raises(ConnectionError):
            c.request(API_VERSIONS, 3, client_software_name="raw", client_software_version="1")
        assert server.stats()["expired_connections_killed"] == expired_before + 1
    finally:
        c.close()
    c = Raw(cluster.bootstrap_servers)
    try:
        assert int(c.handshake("SCRAM-SHA-256").error_code) == 0
        scram_login(c, "alice", "alice-secret")
        assert int(c.handshake("SCRAM-SHA-256").error_code) == 0
        answer = scram_login(c, "bob", "bob-secret")
        assert int(answer.error_code) == Errors.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == "Cannot change principals during re-authentication from User.alice: User.bob"
    finally:
        c.close()


def test_kafka_fixture_marker_security(pytester: pytest.Pytester) -> None:
    """The pytest plugin's ``security`` option: a SASL_SSL cluster and its client settings in one line."""
    pytester.makepyfile("""
        import confluent_kafka, pytest

        @pytest.mark.kafka_cluster(brokers=1, security="SASL_SSL")
        def test_secured(kafka_cluster):
            cfg = kafka_cluster.client_config(user="alice", mechanism="SCRAM-SHA-512")
            assert cfg["security.protocol"] == "SASL_SSL"
            p = confluent_kafka.Producer(cfg)
            p.produce("t", b"x")
            assert p.flush(20) == 0
    """)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


# --- fuzz: each bad connection closes alone -------------------------------------------------

@pytest.fixture(scope="module")
def tls_cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=1, security=ClusterSecurity("SASL_SSL", mechanisms=("PLAIN",)),
                         config={"offsets.topic.replication.factor": 1,
                                 "connection.failed.authentication.delay.ms": 0}) as c:
        yield c


def _tls_context(cluster: EmbeddedCluster) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(cluster.security.ca_path))


def _still_serving(cluster: EmbeddedCluster) -> None:
    c = Raw(cluster.bootstrap_servers, _tls_context(cluster))
    try:
        assert int(c.plain("alice", "alice-secret").error_code) == 0
    finally:
        c.close()


@pytest.mark.parametrize("garbage", [os.urandom(64), b"\x16\x03\x01\x00\x05hello" * 3, b"GET / HTTP/1.1\r\n\r\n",
                                     encode_request(load_request_schema(API_VERSIONS, 3)(
                                         client_software_name="plain", client_software_version="1"), 1)])
def test_fuzz_not_tls_on_a_tls_port(tls_cluster: EmbeddedCluster, garbage: bytes) -> None:
    """TLS garbage and plaintext Kafka on a TLS listener: that connection is closed (a failed
    authentication), the others are served."""
    server = tls_cluster.broker(0).socket_server
    failures = server.stats()["failed_authentications"]
    host, port = tls_cluster.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(garbage)
        s.settimeout(5)
        try:
            while s.recv(4096):
                pass
        except ConnectionError:
            pass
    assert server.stats()["failed_authentications"] == failures + 1
    _still_serving(tls_cluster)


def test_fuzz_unfinished_handshakes_do_not_hold_the_processor(tls_cluster: EmbeddedCluster) -> None:
    """A client that stops mid-handshake (TLS or SASL) holds only its own connection: others
    authenticate and are served meanwhile (the handshake is non-blocking, Kafka's SslTransportLayer)."""
    host, port = tls_cluster.bootstrap_servers.rsplit(":", 1)
    stalled = [socket.create_connection((host, int(port)), timeout=10) for _ in range(3)]
    stalled[0].sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")   # the start of a ClientHello
    half = Raw(tls_cluster.bootstrap_servers, _tls_context(tls_cluster))   # TLS done, SASL never started
    half_sasl = Raw(tls_cluster.bootstrap_servers, _tls_context(tls_cluster))
    assert int(half_sasl.handshake("PLAIN").error_code) == 0               # ...and one stopped after its handshake
    try:
        p = confluent_kafka.Producer(tls_cluster.client_config(user="alice"))
        p.produce("fuzz-ok", b"x")
        assert p.flush(20) == 0
    finally:
        for s in stalled:
            s.close()
        half.close()
        half_sasl.close()


@pytest.mark.parametrize("token", [b"", b"\xff" * 300, b"n,,n=alice", b"\0\0\0", b"n,,n=,r=", os.urandom(40)])
def test_fuzz_malformed_sasl_tokens(tls_cluster: EmbeddedCluster, token: bytes) -> None:
    """Malformed PLAIN tokens answer SASL_AUTHENTICATION_FAILED and close that connection only."""
    c = Raw(tls_cluster.bootstrap_servers, _tls_context(tls_cluster))
    try:
        assert int(c.handshake("PLAIN").error_code) == 0
        assert int(c.authenticate(token).error_code) == Errors.SASL_AUTHENTICATION_FAILED
        c.closed_within(5)
    finally:
        c.close()
    _still_serving(tls_cluster)


def test_fuzz_broken_frames_during_authentication(tls_cluster: EmbeddedCluster) -> None:
    """A truncated SaslAuthenticate, or a frame that is no Kafka request, closes the connection."""
    for frame in (struct.pack(">i", 6) + b"\x00\x24\x00\x02\x00\x00", struct.pack(">i", 4) + b"junk"):
        c = Raw(tls_cluster.bootstrap_servers, _tls_context(tls_cluster))
        try:
            if frame.endswith(b"\x00\x00"):
                assert int(c.handshake("PLAIN").error_code) == 0
            c.sock.sendall(frame)
            c.closed_within(5)
        finally:
            c.close()
    _still_serving(tls_cluster)
