"""SslFactory: a listener's TLS server context from Kafka's ``ssl.*`` settings (Kafka's
``SslFactory`` and ``DefaultSslEngineFactory``), built with Python's ``ssl``.

Key store (``ssl.keystore.type``): ``PEM`` with the certificate chain and key inline
(``ssl.keystore.certificate.chain``, ``ssl.keystore.key``) or in one file
(``ssl.keystore.location``), the key decrypted with ``ssl.key.password`` if encrypted;
``PKCS12`` (``ssl.keystore.location``, ``ssl.keystore.password``, ``ssl.key.password``), read
through ``cryptography``. Trust store (``ssl.truststore.type``): ``PEM`` (inline
``ssl.truststore.certificates`` or ``ssl.truststore.location``) or ``PKCS12``. Kafka's default
type is ``JKS``, a Java format Python cannot read: a JKS store (given, or by default with a
location) is refused at start-up with one line, as is any other type.

``ssl.client.auth`` ``required``/``requested``/``none`` (CERT_REQUIRED, CERT_OPTIONAL,
CERT_NONE), ``ssl.enabled.protocols`` (a contiguous range of TLSv1.2 and TLSv1.3),
``ssl.cipher.suites`` (IANA names, as Java takes them: the TLS 1.2 ones are translated to
OpenSSL's names; TLS 1.3 suites cannot be restricted through Python's ``ssl``, so a list that
names some but not all of them is refused).

Differences from Kafka on purpose: JKS stores are refused (convert them: ``keytool
-importkeystore -deststoretype PKCS12``); ``ssl.provider``, ``ssl.keymanager.algorithm``,
``ssl.trustmanager.algorithm`` and ``ssl.secure.random.implementation`` are Java's and only
their defaults are accepted; no dynamic reconfiguration of a listener's key store.

The context is built once per listener at start-up and only read afterwards (``SSLContext``
is safe to share between threads).
"""
from __future__ import annotations

import os
import ssl
import tempfile
from pathlib import Path
from typing import Any, Mapping

from kafka_emu.common.config_def import ConfigException

KEYSTORE_TYPES = ("PEM", "PKCS12", "JKS")
CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
TLS13_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256")
# IANA (Java) names of the TLS 1.2 suites OpenSSL builds enable, and OpenSSL's names for them
TLS12_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
}
# Java-only settings: accepted at Kafka's default (or unset), refused otherwise
JAVA_DEFAULTS = {"ssl.provider": None, "ssl.keymanager.algorithm": "SunX509", "ssl.trustmanager.algorithm": "PKIX",
                 "ssl.secure.random.implementation": None, "ssl.engine.factory.class": None}

Settings = Mapping[str, Any]   # resolved ``ssl.*`` values of one listener (listener prefix applied)


def _read(key: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigException(f"{key}: cannot read {path} ({exc.strerror or exc})") from None


def _password(settings: Settings, key: str) -> bytes | None:
    value = settings.get(key)
    return str(value).encode() if value else None


def _pkcs12(settings: Settings, key: str, password_key: str) -> tuple[Any, Any, list[Any]]:
    """(private key, certificate, additional certificates) of a PKCS12 store."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    location = settings.get(key.replace(".type", ".location"))
    if not location:
        raise ConfigException(f"{key}=PKCS12 needs {key.replace('.type', '.location')}")
    try:
        return pkcs12.load_key_and_certificates(_read(key, location), _password(settings, password_key))
    except ValueError as exc:
        raise ConfigException(f"{key}=PKCS12: cannot read {location} ({exc})") from None


def _store_type(settings: Settings, key: str) -> str:
    kind = str(settings.get(key) or "JKS").upper()
    if kind == "JKS":
        raise ConfigException(f"{key}=JKS (Kafka's default) cannot be read by the emulator: use PKCS12 or PEM "
                              f"(keytool -importkeystore -deststoretype PKCS12)")
    if kind not in KEYSTORE_TYPES:
        raise ConfigException(key, settings.get(key), "the emulator reads PEM and PKCS12 stores only")
    return kind


def _key_store_pem(settings: Settings) -> tuple[bytes, bytes | None]:
    """(PEM key and certificate chain, key password) of the listener's key store."""
    kind = _store_type(settings, "ssl.keystore.type")
    if kind == "PKCS12":
        from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

        key, cert, extra = _pkcs12(settings, "ssl.keystore.type", "ssl.keystore.password")
        if key is None or cert is None:
            raise ConfigException(f"ssl.keystore.location {settings.get('ssl.keystore.location')} holds no key entry")
        pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        pem += b"".join(c.public_bytes(Encoding.PEM) for c in [cert, *extra])
        return pem, None
    chain, key = settings.get("ssl.keystore.certificate.chain"), settings.get("ssl.keystore.key")
    location = settings.get("ssl.keystore.location")
    if chain or key:
        if not (chain and key):
            raise ConfigException("ssl.keystore.certificate.chain and ssl.keystore.key go together (ssl.keystore.type=PEM)")
        if location:
            raise ConfigException("ssl.keystore.location cannot be set with ssl.keystore.certificate.chain/ssl.keystore.key")
        return f"{key}\n{chain}\n".encode(), _password(settings, "ssl.key.password")
    if not location:
        raise ConfigException("an SSL listener needs a key store: ssl.keystore.location, or "
                              "ssl.keystore.certificate.chain with ssl.keystore.key (ssl.keystore.type=PEM)")
    return _read("ssl.keystore.location", location), _password(settings, "ssl.key.password")


def _trust_pem(settings: Settings) -> str | None:
    """The trusted certificates in PEM, None when no trust store is configured."""
    inline, location = settings.get("ssl.truststore.certificates"), settings.get("ssl.truststore.location")
    if not inline and not location:
        return None
    kind = _store_type(settings, "ssl.truststore.type")
    if kind == "PKCS12":
        from cryptography.hazmat.primitives.serialization import Encoding

        key, cert, extra = _pkcs12(settings, "ssl.truststore.type", "ssl.truststore.password")
        return "".join(c.public_bytes(Encoding.PEM).decode() for c in ([cert] if cert else []) + list(extra))
    if inline and location:
        raise ConfigException("ssl.truststore.location cannot be set with ssl.truststore.certificates")
    return str(inline) if inline else _read("ssl.truststore.location", location).decode("ascii", "replace")


def _load_chain(context: ssl.SSLContext, pem: bytes, password: bytes | None) -> None:
    """``load_cert_chain`` reads files only: the PEM goes through a private file that exists for
    the call alone."""
    fd, path = tempfile.mkstemp(prefix="kafka-emu-key-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        context.load_cert_chain(path, password=password)
    except ssl.SSLError as exc:
        raise ConfigException(f"the listener's key store cannot be loaded: {exc.reason or exc}") from None
    finally:
        os.unlink(path)


def _protocol_range(settings: Settings, context: ssl.SSLContext) -> None:
    value = settings.get("ssl.enabled.protocols") or ["TLSv1.2", "TLSv1.3"]
    unknown = [p for p in value if p not in _PROTOCOLS]
    if unknown:
        raise ConfigException("ssl.enabled.protocols", value, f"the emulator serves TLSv1.2 and TLSv1.3 only, not {unknown}")
    versions = sorted(_PROTOCOLS[p] for p in value)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]


def _ciphers(settings: Settings, context: ssl.SSLContext) -> None:
    suites = settings.get("ssl.cipher.suites") or []
    if not suites:
        return
    tls13 = [s for s in suites if s in TLS13_SUITES]
    if tls13 and len(tls13) != len(TLS13_SUITES):
        raise ConfigException("ssl.cipher.suites", suites, "Python's ssl cannot restrict the TLS 1.3 suites: "
                                                           "name all of them or none")
    unknown = [s for s in suites if s not in TLS12_SUITES and s not in TLS13_SUITES]
    if unknown:
        raise ConfigException("ssl.cipher.suites", suites, f"unknown or unsupported suites {unknown}")
    tls12 = [TLS12_SUITES[s] for s in suites if s in TLS12_SUITES]
    if not tls12:
        if context.minimum_version < ssl.TLSVersion.TLSv1_3:
            context.minimum_version = ssl.TLSVersion.TLSv1_3   # no TLS 1.2 suite left
        return
    context.set_ciphers(":".join(tls12))
    if not tls13 and context.maximum_version > ssl.TLSVersion.TLSv1_2:
        raise ConfigException("ssl.cipher.suites", suites, "TLSv1.3 is enabled but none of its suites is listed")


def check_java_settings(settings: Settings) -> None:
    for key, default in JAVA_DEFAULTS.items():
        value = settings.get(key)
        if value not in (None, "", default):
            raise ConfigException(key, value, f"Java's setting; the emulator accepts only Kafka's default ({default})")


def check_settings(settings: Settings) -> None:
    """The checks that read no file (``KafkaConfig`` runs them before anything starts)."""
    check_java_settings(settings)
    inline = settings.get("ssl.keystore.certificate.chain") or settings.get("ssl.keystore.key")
    if not inline or settings.get("ssl.keystore.type") not in (None, "JKS"):
        _store_type(settings, "ssl.keystore.type")
    elif str(settings.get("ssl.keystore.type")).upper() == "JKS":
        raise ConfigException("ssl.keystore.certificate.chain and ssl.keystore.key need ssl.keystore.type=PEM")
    if settings.get("ssl.truststore.location") or settings.get("ssl.truststore.certificates"):
        _store_type(settings, "ssl.truststore.type")


def create_server_context(settings: Settings) -> ssl.SSLContext:
    """The TLS server context of a listener (ConfigException, one line, for what cannot be served)."""
    check_java_settings(settings)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocol_range(settings, context)
    pem, password = _key_store_pem(settings)
    _load_chain(context, pem, password)
    client_auth = str(settings.get("ssl.client.auth") or "none").lower()
    context.verify_mode = CLIENT_AUTH[client_auth]
    trusted = _trust_pem(settings)
    if trusted:
        try:
            context.load_verify_locations(cadata=trusted)
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigException(f"the listener's trust store cannot be loaded: {exc}") from None
    elif client_auth != "none":
        raise ConfigException(f"ssl.client.auth={client_auth} needs a trust store (ssl.truststore.location or "
                              f"ssl.truststore.certificates)")
    _ciphers(settings, context)
    return context


def subject_of(der: bytes) -> str:
    """The RFC 2253 subject of a DER certificate (what Java's ``X500Principal.getName()`` gives)."""
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


