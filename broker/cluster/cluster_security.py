"""ClusterSecurity: a secured in-process cluster in one argument, and the client settings that
reach it (``EmbeddedCluster(security=...)``, ``cluster.client_config(user=...)``).

``ClusterSecurity(protocol)`` (or just the protocol's name) gives the cluster one listener of
that protocol. For TLS it makes a throwaway CA and a broker certificate for 127.0.0.1/localhost
(``broker.security.certs``) and sets the listener's key store inline (PEM); ``client_auth``
(``ssl.client.auth``) asks clients for certificates, which ``client_config`` issues per user
(``CN=<user>``, so the principal is ``User:CN=<user>`` unless ``ssl.principal.mapping.rules``
says otherwise). For SASL it enables ``mechanisms`` with ``users`` (name -> password): PLAIN's
JAAS line lists them and their SCRAM credentials (4096 iterations, Kafka's minimum) are put in
the cluster metadata as AlterUserScramCredentials would. ``authorizer=True`` adds the
``StandardAuthorizer`` with ``super_users`` (default: ``admin``). The PEM files clients need
(CA, client certificates) are written under a temporary directory removed by ``close``.

``client_config(user, client=...)`` returns the settings of confluent-kafka (``"confluent"``,
dotted librdkafka names), kafka-python (``"kafka-python"``) or aiokafka (``"aiokafka"``, with
an ``ssl_context``), for the cluster's bootstrap servers on that listener.
"""
from __future__ import annotations

import shutil
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_emu.broker.security.auth import SecurityProtocol
from kafka_emu.broker.server.config import STANDARD_AUTHORIZER
from kafka_emu.common.config_def import ConfigException

DEFAULT_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
DEFAULT_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
CLIENTS = ("confluent", "kafka-python", "aiokafka")
SCRAM_ITERATIONS = 4096


@dataclass
class ClusterSecurity:
    protocol: str = "SASL_SSL"
    mechanisms: tuple[str, ...] = DEFAULT_MECHANISMS
    users: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_USERS))
    client_auth: str = "none"
    authorizer: bool = False
    super_users: tuple[str, ...] = ("admin",)

    def __post_init__(self) -> None:
        try:
            self.kind = SecurityProtocol[self.protocol.upper()]
        except KeyError:
            raise ConfigException(f"security={self.protocol!r}: expected one of "
                                  f"{', '.join(p.name for p in SecurityProtocol)}") from None
        self.listener = self.kind.name
        self._dir: Path | None = None
        self.ca: Any = None
        self.ca_path: Path | None = None

    @staticmethod
    def of(value: "ClusterSecurity | str | None") -> "ClusterSecurity | None":
        return ClusterSecurity(value) if isinstance(value, str) else value

    # ------------------------------------------------------------------ broker side
    def broker_config(self) -> dict[str, Any]:
        """The broker properties of the secured listener (certificates made here)."""
        prefix = f"listener.name.{self.listener.lower()}."
        props: dict[str, Any] = {"listeners": f"{self.listener}://127.0.0.1:0"}
        if self.kind.uses_tls:
            from kafka_emu.broker.security.certs import CertificateAuthority

            self._dir = Path(tempfile.mkdtemp(prefix="kafka-emu-certs-"))
            self.ca = CertificateAuthority()
            self.ca_path = self._dir / "ca.pem"
            self.ca_path.write_text(self.ca.cert_pem)
            broker = self.ca.issue("kafka-emu-broker", ("127.0.0.1", "localhost"))
            props.update({prefix + "ssl.keystore.type": "PEM", prefix + "ssl.keystore.certificate.chain": broker.cert_pem,
                          prefix + "ssl.keystore.key": broker.key_pem, prefix + "ssl.client.auth": self.client_auth})
            if self.client_auth != "none":
                props.update({prefix + "ssl.truststore.type": "PEM",
                              prefix + "ssl.truststore.certificates": self.ca.cert_pem})
        if self.kind.uses_sasl:
            props[prefix + "sasl.enabled.mechanisms"] = ",".join(self.mechanisms)
            for mechanism in self.mechanisms:
                props[prefix + f"{mechanism.lower()}.sasl.jaas.config"] = self._jaas(mechanism)
        if self.authorizer:
            props["authorizer.class.name"] = STANDARD_AUTHORIZER
            props["super.users"] = ";".join(f"User:{u}" for u in self.super_users)
        return props

    def _jaas(self, mechanism: str) -> str:
        if mechanism == "PLAIN":
            users = " ".join(f'user_{name}="{password}"' for name, password in self.users.items())
            return f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
        if mechanism == "OAUTHBEARER":
            return "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
        return "org.apache.kafka.common.security.scram.ScramLoginModule required;"

    def scram_credentials(self) -> dict[tuple[str, Any], Any]:
        """The users' credentials for the SCRAM mechanisms enabled."""
        from kafka_emu.broker.security.scram import ScramFormatter, ScramMechanism

        out = {}
        for mechanism in self.mechanisms:
            kind = ScramMechanism.from_name(mechanism)
            if kind is None:
                continue
            formatter = ScramFormatter(kind)
            for user, password in self.users.items():
                out[(user, kind)] = formatter.generate_credential(password, SCRAM_ITERATIONS)
        return out

    def close(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    # ------------------------------------------------------------------ client side
    def client_config(self, bootstrap_servers: str, user: str | None = None, client: str = "confluent",
                      mechanism: str | None = None, password: str | None = None) -> dict[str, Any]:
        if client not in CLIENTS:
            raise ValueError(f"client must be one of {', '.join(CLIENTS)}, not {client!r}")
        if self.kind.uses_sasl:
            if user is None:
                raise ValueError("a SASL cluster's client_config needs user=")
            mechanism = mechanism or self.mechanisms[0]
            if mechanism not in self.mechanisms:
                raise ValueError(f"mechanism {mechanism} is not enabled (enabled: {', '.join(self.mechanisms)})")
            password = password if password is not None else self.users.get(user, "")
        cert = self._client_certificate(user) if self.kind.uses_tls and self.client_auth != "none" and user else None
        protocol = self.kind.name
        if client == "confluent":
            out: dict[str, Any] = {"bootstrap.servers": bootstrap_servers, "security.protocol": protocol}
            if self.kind.uses_sasl:
                out.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
            if self.kind.uses_tls:
                out["ssl.ca.location"] = str(self.ca_path)
                if cert:
                    out.update({"ssl.certificate.location": cert[0], "ssl.key.location": cert[1]})
            return out
        out = {"bootstrap_servers": bootstrap_servers, "security_protocol": protocol}
        if self.kind.uses_sasl:
            out.update({"sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password})
        if self.kind.uses_tls:
            if client == "kafka-python":
                out["ssl_cafile"] = str(self.ca_path)
                if cert:
                    out.update({"ssl_certfile": cert[0], "ssl_keyfile": cert[1]})
            else:
                context = ssl.create_default_context(cafile=str(self.ca_path))
                if cert:
                    context.load_cert_chain(cert[0], cert[1])
                out["ssl_context"] = context
        return out

    def _client_certificate(self, user: str) -> tuple[str, str]:
        assert self._dir is not None and self.ca is not None
        cert_path, key_path = self._dir / f"{user}.pem", self._dir / f"{user}.key"
        if not cert_path.exists():
            issued = self.ca.issue(user, client=True)
            key_path.write_text(issued.key_pem)
            cert_path.write_text(issued.cert_pem)
        return str(cert_path), str(key_path)
