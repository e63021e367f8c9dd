"""What each listener speaks and how it authenticates: ``listeners`` with
``listener.security.protocol.map``, and the listener's TLS and SASL settings, each read with
Kafka's listener override (``listener.name.<listener>.<key>`` over ``<key>``, the listener
name in lower case, as Kafka's ``ListenerName.configPrefix``).

``validate_security`` runs inside ``KafkaConfig``: every check that needs no file happens
before anything starts (one ``ConfigException`` line): each listener has a protocol, advertised
listeners are listeners, a SASL listener enables only mechanisms the emulator serves (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER; Kafka's default GSSAPI is refused) each with its JAAS
line (``listener.name.<l>.<mechanism>.sasl.jaas.config``, Kafka's broker-side location; its
login module must be the mechanism's), and a security key the emulator does not define
(``sasl.kerberos.*``, ``sasl.server.callback.handler.class``, a listener override of an unknown
key or listener) stops start-up rather than being ignored: nothing is served unauthenticated
or in plaintext by mistake. The TLS context itself (which reads the key store) is built when
the socket server starts (``ListenerSecurity.create_ssl_context``), failing there with one line.

Immutable values; safe from any thread.
"""
from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Callable, Mapping

from kafka_emu.broker.security import oauthbearer, plain, scram
from kafka_emu.broker.security.auth import SecurityProtocol
from kafka_emu.broker.security.jaas import JaasEntry, parse_jaas_config
from kafka_emu.broker.security.sasl_server import SaslServer
from kafka_emu.broker.security.ssl_principal_mapper import SslPrincipalMapper
from kafka_emu.common.config_def import ConfigException, ConfigValue

LISTENER_PREFIX = "listener.name."
LOGIN_MODULES = {plain.MECHANISM: plain.LOGIN_MODULE, oauthbearer.MECHANISM: oauthbearer.LOGIN_MODULE,
                 **{m.mechanism_name: scram.LOGIN_MODULE for m in scram.ScramMechanism}}
SUPPORTED_MECHANISMS = tuple(LOGIN_MODULES)
# the keys a listener may override besides ``ssl.*`` (Kafka: every listener-reconfigurable key)
LISTENER_KEYS = ("sasl.enabled.mechanisms", "connections.max.reauth.ms")
# keys a listener override may carry behind its mechanism (``plain.sasl.jaas.config``)
MECHANISM_KEYS = ("sasl.jaas.config", "connections.max.reauth.ms")
SECURITY_PREFIXES = ("sasl.", "ssl.", "security.")

ScramLookup = Callable[[str, "scram.ScramMechanism"], "scram.ScramCredential | None"]


def parse_protocol_map(text: str) -> dict[str, SecurityProtocol]:
    """``NAME:PROTOCOL,...`` -> {NAME: protocol} (Kafka's ``listenerSecurityProtocolMap``)."""
    out: dict[str, SecurityProtocol] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, proto = item.strip().partition(":")
        if not sep or not name.strip():
            raise ConfigException("listener.security.protocol.map", text,
                                  f"Map entry '{item.strip()}' is not in the form NAME:PROTOCOL")
        try:
            protocol = SecurityProtocol[proto.strip().upper()]
        except KeyError:
            raise ConfigException("listener.security.protocol.map", text,
                                  f"No enum constant SecurityProtocol.{proto.strip().upper()}") from None
        if name.strip().upper() in out:
            raise ConfigException("listener.security.protocol.map", text, f"Duplicate listener {name.strip()}")
        out[name.strip().upper()] = protocol
    return out


def listener_names(listeners: str) -> list[str]:
    return [item.strip().partition("://")[0].upper() for item in listeners.split(",") if item.strip()]


@dataclass(frozen=True)
class ListenerSecurity:
    """One listener's protocol and resolved TLS/SASL settings."""

    listener: str
    protocol: SecurityProtocol
    settings: Mapping[str, ConfigValue] = field(default_factory=dict)   # ssl.* (listener override applied)
    mechanisms: tuple[str, ...] = ()
    jaas: Mapping[str, JaasEntry] = field(default_factory=dict)
    reauth_ms: Mapping[str, int] = field(default_factory=dict)
    failed_authentication_delay_ms: int = 100
    principal_mapper: SslPrincipalMapper = field(default_factory=SslPrincipalMapper)

    def create_ssl_context(self) -> ssl.SSLContext:
        from kafka_emu.broker.security.ssl_factory import create_server_context

        try:
            return create_server_context(self.settings)
        except ConfigException as exc:
            raise ConfigException(f"listener {self.listener}: {exc}") from None

    def sasl_server(self, mechanism: str, scram_credentials: ScramLookup) -> SaslServer:
        """A server object for one authentication with ``mechanism`` (one of ``mechanisms``)."""
        options = self.jaas[mechanism].options
        if mechanism == plain.MECHANISM:
            return plain.PlainSaslServer(plain.users_of(options))
        if mechanism == oauthbearer.MECHANISM:
            return oauthbearer.OAuthBearerSaslServer(oauthbearer.UnsecuredValidator(options))
        kind = scram.ScramMechanism.from_name(mechanism)
        assert kind is not None
        return scram.ScramSaslServer(kind, lambda user: scram_credentials(user, kind))


class _Resolver:
    """A listener's view of the config: override first, then the broker-wide value."""

    def __init__(self, originals: Mapping[str, object], values: Mapping[str, ConfigValue], listener: str) -> None:
        from kafka_emu.broker.server.config import KAFKA_CONFIG_DEF

        self.table = KAFKA_CONFIG_DEF
        self.values = values
        self.prefix = f"{LISTENER_PREFIX}{listener.lower()}."
        self.overrides = {k[len(self.prefix):]: v for k, v in originals.items() if k.startswith(self.prefix)}

    def get(self, key: str, base: str | None = None) -> ConfigValue:
        """``key`` of this listener (``base``: the broker-wide key whose definition parses it)."""
        base = base or key
        definition = self.table.key(base)
        assert definition is not None, base
        if key in self.overrides:
            return definition.parse(self.prefix + key, self.overrides[key])
        return self.values.get(base)


def _check_overrides(originals: Mapping[str, object], listeners: list[str]) -> None:
    from kafka_emu.broker.server.config import KAFKA_CONFIG_DEF

    known = {n.lower() for n in listeners}
    for key in originals:
        if not key.startswith(LISTENER_PREFIX):
            continue
        listener, _, rest = key[len(LISTENER_PREFIX):].partition(".")
        if listener not in known:
            raise ConfigException(f"The configuration '{key}' names listener '{listener}', which is not in listeners")
        mechanism, _, mech_key = rest.partition(".")
        if mechanism.upper() in SUPPORTED_MECHANISMS + ("GSSAPI",) and mech_key in MECHANISM_KEYS:
            continue
        definition = KAFKA_CONFIG_DEF.key(rest)
        if definition is None or not (rest.startswith("ssl.") or rest in LISTENER_KEYS):
            raise ConfigException(f"The configuration '{key}' is not supported by the emulator")


def _check_unknown(originals: Mapping[str, object]) -> None:
    from kafka_emu.broker.server.config import KAFKA_CONFIG_DEF

    for key in originals:
        if key.startswith(SECURITY_PREFIXES) and KAFKA_CONFIG_DEF.key(key) is None:
            hint = " (the broker reads listener.name.<listener>.<mechanism>.sasl.jaas.config)" \
                if key == "sasl.jaas.config" else ""
            raise ConfigException(f"The configuration '{key}' is not supported by the emulator{hint}; a security "
                                  f"setting is never ignored")


def _sasl(resolver: _Resolver, listener: str) -> tuple[tuple[str, ...], dict[str, JaasEntry], dict[str, int]]:
    mechanisms = tuple(m.strip().upper() for m in resolver.get("sasl.enabled.mechanisms") or [] if m.strip())
    if not mechanisms:
        raise ConfigException(f"listener {listener}: sasl.enabled.mechanisms is empty")
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported:
        raise ConfigException(f"listener {listener}: sasl.enabled.mechanisms {','.join(unsupported)} is not supported "
                              f"by the emulator (it serves {', '.join(SUPPORTED_MECHANISMS)})")
    jaas: dict[str, JaasEntry] = {}
    reauth: dict[str, int] = {}
    for mechanism in mechanisms:
        key = f"{mechanism.lower()}.sasl.jaas.config"
        text = resolver.overrides.get(key)
        full = f"{resolver.prefix}{key}"
        if not text:
            raise ConfigException(f"listener {listener}: SASL mechanism {mechanism} has no JAAS configuration "
                                  f"({full})")
        entry = parse_jaas_config(str(text), full)[0]
        if entry.login_module != LOGIN_MODULES[mechanism]:
            raise ConfigException(full, "[hidden]", f"{mechanism} needs login module {LOGIN_MODULES[mechanism]}, "
                                                    f"not {entry.login_module}")
        if mechanism == oauthbearer.MECHANISM:
            try:
                oauthbearer.UnsecuredValidator(entry.options)
            except ValueError as exc:
                raise ConfigException(full, "[hidden]", str(exc)) from None
        jaas[mechanism] = entry
        per_mechanism = f"{mechanism.lower()}.connections.max.reauth.ms"
        reauth[mechanism] = int(resolver.get(per_mechanism, "connections.max.reauth.ms")  # type: ignore[arg-type]
                                if per_mechanism in resolver.overrides else resolver.get("connections.max.reauth.ms"))
    return mechanisms, jaas, reauth


def _listener_security(originals: Mapping[str, object], values: Mapping[str, ConfigValue], listener: str,
                       protocol: SecurityProtocol) -> ListenerSecurity:
    resolver = _Resolver(originals, values, listener)
    from kafka_emu.broker.server.config import KAFKA_CONFIG_DEF

    settings = {name: resolver.get(name) for name in KAFKA_CONFIG_DEF.keys if name.startswith("ssl.")}
    mechanisms: tuple[str, ...] = ()
    jaas: dict[str, JaasEntry] = {}
    reauth: dict[str, int] = {}
    if protocol.uses_sasl:
        mechanisms, jaas, reauth = _sasl(resolver, listener)
    if protocol.uses_tls:
        from kafka_emu.broker.security.ssl_factory import check_settings

        try:
            check_settings(settings)
        except ConfigException as exc:
            raise ConfigException(f"listener {listener}: {exc}") from None
    return ListenerSecurity(listener, protocol, settings, mechanisms, jaas, reauth,
                            int(values["connection.failed.authentication.delay.ms"]),  # type: ignore[arg-type]
                            SslPrincipalMapper(str(settings["ssl.principal.mapping.rules"] or "")))


def listener_securities(originals: Mapping[str, object], values: Mapping[str, ConfigValue]
                        ) -> dict[str, ListenerSecurity]:
    """Every listener's security, by listener name (ConfigException, one line, if refused)."""
    _check_unknown(originals)
    protocols = parse_protocol_map(str(values["listener.security.protocol.map"] or ""))
    names = listener_names(str(values["listeners"] or ""))
    _check_overrides(originals, names)
    for name in listener_names(str(values.get("advertised.listeners") or "")):
        if name not in names:
            raise ConfigException(f"advertised.listeners: listener {name} is not in listeners")
    out: dict[str, ListenerSecurity] = {}
    for name in names:
        if name in out:
            raise ConfigException("listeners", values["listeners"], f"Each listener must have a different name, "
                                                                     f"{name} is repeated")
        if name not in protocols:
            raise ConfigException(f"No security protocol defined for listener {name} "
                                  f"(listener.security.protocol.map)")
        out[name] = _listener_security(originals, values, name, protocols[name])
    return out


def validate_security(originals: Mapping[str, object], values: Mapping[str, ConfigValue]) -> None:
    listener_securities(originals, values)
