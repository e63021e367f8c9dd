"""KafkaConfig: the broker's configuration, parsed through one table of definitions.

``KAFKA_CONFIG_DEF`` is the emulator's counterpart of Kafka's ``KafkaConfig.configDef`` (itself
assembled from ``ServerConfigs``, ``SocketServerConfigs``, ``ReplicationConfigs``,
``ServerLogConfigs``, ``GroupCoordinatorConfig`` ...): every broker key the emulator reads, with
Kafka's name, type, default, validator and doc. As Kafka's ``KafkaConfig`` includes the storage
module's ``ServerLogConfigs`` and ``CleanerConfig``, this table includes the log layer's broker keys
(``broker.storage.log_config``: ``log.dirs``, the broker-level synonyms of the topic configs such
as ``log.retention.hours``, the log manager's and cleaner's settings), defined there because the
log reads them and imports nothing of the server. The group coordinator's defaults are stated in
``coordinator.group.config.DEFAULTS``, the transaction coordinator's in
``coordinator.transaction.config.DEFAULTS`` (the coordinators do not import the broker); this
table takes them from there and adds the types.

Every way in goes through the table: a ``server.properties`` file
(``kafka_emu.common.properties.load_properties``, Kafka's ``Utils.loadProps``), a dict
(``EmbeddedCluster``, the pytest fixture) and the command line. A bad value raises
``ConfigException`` naming key, value and what is expected; ``kafka-emu`` prints that one line and
exits 2. A given key the emulator will not act on (one Kafka defines but the emulator does not
implement, or one nobody defines) is collected in ``KafkaConfig.ignored`` and logged once per key
(``log_ignored``), as Kafka logs unknown keys; ``emulator.strict.config=true`` makes it an error.

Differences from Kafka on purpose:
* ``broker.id`` defaults to 0 (Kafka: -1, and KRaft requires ``node.id``); either of ``broker.id``
  and ``node.id`` sets both.
* ``listeners`` defaults to empty: a bare ``KafkaServer`` serves in-process requests only
  (``EmbeddedCluster`` defaults to ``PLAINTEXT://127.0.0.1:0``, ``kafka-emu serve`` to
  ``--host``/``--port``).
* A broker key changes at run time (AlterConfigs, ``broker.server.dynamic_config``) only where Kafka
  marks it dynamic and the emulator applies the change at once (``Dynamic.APPLIED``); the keys
  Kafka can change but the emulator reads only at start-up (``num.io.threads`` ...) are refused
  and described read-only.
* ``log.level``, ``log.format``, ``log.level.<logger>`` and ``emulator.*`` are the emulator's own.
* ``log.dir`` has no default (Kafka: ``/tmp/kafka-logs``): without ``log.dirs``/``log.dir`` the
  logs live in memory and nothing touches the disk.

Immutable after construction (read from any thread without a lock).
"""
from __future__ import annotations

import re
from typing import Mapping

import structlog

from kafka_emu.broker.security.auth import SecurityProtocol
from kafka_emu.broker.security.listener_security import validate_security
from kafka_emu.broker.security.ssl_principal_mapper import SslPrincipalMapper
from kafka_emu.broker.server import cpu_affinity
from kafka_emu.broker.storage.log_config import LOG_MANAGER_KEYS, SERVER_LOG_KEYS
from kafka_emu.common.kafka_releases import LATEST as LATEST_RELEASE, RELEASE_NAMES, FeatureLevels, KafkaRelease, release
from kafka_emu.common.config_def import (
    STRICT_CONFIG,
    ConfigDef,
    ConfigException,
    Dynamic,
    ConfigKey,
    ConfigValue,
    Importance,
    Range,
    Type,
    ValidList,
    ValidString,
    ignored_message,
    strict_refusal,
)
from kafka_emu.coordinator.group.config import CLASSIC, CONSUMER, MIGRATION_POLICIES, REBALANCE_PROTOCOLS
from kafka_emu.coordinator.share.config import (
    DEFAULTS as SHARE_DEFAULTS, MAX_SHARE_VERSION, SHARE_VERSION, SHARE_VERSION_FEATURE,
)
from kafka_emu.coordinator.group.config import DEFAULTS as GROUP_DEFAULTS
from kafka_emu.coordinator.transaction.config import DEFAULTS as TXN_DEFAULTS
from kafka_emu.coordinator.transaction.config import (
    LATEST_PRODUCTION_TRANSACTION_VERSION, MAX_TRANSACTION_VERSION, TRANSACTION_VERSION, TRANSACTION_VERSION_FEATURE,
)
from kafka_emu.logsetup import FORMATS as LOG_FORMATS, LEVELS as LOG_LEVELS

__all__ = ["API_COMPATIBILITY", "KAFKA_3_9", "KAFKA_4X", "KAFKA_VERSION", "ConfigException", "KafkaConfig", "KAFKA_CONFIG_DEF",
           "STRICT_CONFIG"]

_log = structlog.get_logger("broker.config")

MIB = 1024 * 1024
LISTENER_PORT_REUSED = "kafka.emu.listener.port.reused"
HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW
# emulator.kafka.version: the Kafka release the broker answers as (kafka_emu.common.kafka_releases):
# its API versions, features and config defaults. emulator.api.compatibility is its deprecated
# predecessor, whose values name releases.
KAFKA_VERSION = "emulator.kafka.version"
API_COMPATIBILITY = "emulator.api.compatibility"
KAFKA_4X, KAFKA_3_9 = "4.x", "3.9"
COMPATIBILITY_ALIASES: dict[str, str] = {KAFKA_4X: LATEST_RELEASE, KAFKA_3_9: "3.9"}


def _cpu_affinity(name: str, value: ConfigValue) -> None:
    cpu_affinity.resolve(value)


def _transaction_version(name: str, value: ConfigValue) -> None:
    if value is not None:
        Range.between(0, MAX_TRANSACTION_VERSION)(name, value)


def _resolve_kafka_version(given: Mapping[str, object], values: dict[str, ConfigValue]) -> str | None:
    """``emulator.kafka.version`` from the deprecated ``emulator.api.compatibility`` when only that
    is given; returns the deprecation line to log, if any."""
    alias = values[API_COMPATIBILITY]
    if alias is None:
        return None
    named = COMPATIBILITY_ALIASES[str(alias)]
    if KAFKA_VERSION in given and values[KAFKA_VERSION] != named:
        raise ConfigException(API_COMPATIBILITY, alias, f"contradicts {KAFKA_VERSION}={values[KAFKA_VERSION]} "
                                                        f"(it is deprecated: set {KAFKA_VERSION} alone)")
    values[KAFKA_VERSION] = named
    return f"{API_COMPATIBILITY} is deprecated: use {KAFKA_VERSION}={named} instead of {API_COMPATIBILITY}={alias}"


def _apply_release(given: Mapping[str, object], values: dict[str, ConfigValue]) -> None:
    """The release's config defaults for the keys not given, and its finalized feature levels
    the emulator lets one set: ``transaction.version`` (4.0+: 2; 3.9, which cannot finalize more:
    0) and ``share.version`` (4.2: 1; 4.1: 0, share groups off until the feature is upgraded; 3.9
    and 4.0, which have no such feature: 0)."""
    kafka = release(str(values[KAFKA_VERSION]))
    for name, default in kafka.config_defaults.items():
        if name not in given:
            values[name] = default   # type: ignore[assignment]
    _resolve_feature_level(kafka, values, TRANSACTION_VERSION, TRANSACTION_VERSION_FEATURE,
                           LATEST_PRODUCTION_TRANSACTION_VERSION)
    _resolve_feature_level(kafka, values, SHARE_VERSION, SHARE_VERSION_FEATURE, MAX_SHARE_VERSION)


def _resolve_feature_level(kafka: KafkaRelease, values: dict[str, ConfigValue], key: str, feature: str,
                           implemented: int) -> None:
    """``key``, the finalized level of ``feature``: as given (within the release's supported
    levels), else what a newly formatted cluster of the release finalizes, capped at the level the
    emulator implements. A feature the release does not list runs at 0 only."""
    levels = kafka.features.get(feature, FeatureLevels(0, 0, 0))
    level = values[key]
    if level is None:
        values[key] = min(levels.default, implemented)
    elif not levels.min <= int(level) <= levels.max:   # type: ignore[call-overload]
        raise ConfigException(key, level, f"Kafka {kafka.name} finalizes {feature} {levels.min}-{levels.max} "
                                          f"({KAFKA_VERSION}={kafka.name})")


def _share_version(name: str, value: ConfigValue) -> None:
    if value is not None:
        Range.between(0, MAX_SHARE_VERSION)(name, value)


def _rebalance_protocols(name: str, value: ConfigValue) -> None:
    if value is None:
        return
    ValidList((CLASSIC, CONSUMER))(name, value)
    if CLASSIC not in value:   # type: ignore[operator]
        raise ConfigException(f"Disabling the '{CLASSIC}' protocol is not supported.")


def _resolve_group_configs(values: dict[str, ConfigValue]) -> None:
    """``group.coordinator.rebalance.protocols`` defaults to what the release runs (4.0 and later:
    classic and consumer; 3.9: classic, its consumer protocol being early access);
    the consumer and share group timeouts must hold together (Kafka's ``GroupCoordinatorConfig`` and
    ``ShareGroupConfig`` checks)."""
    if values[REBALANCE_PROTOCOLS] is None:
        values[REBALANCE_PROTOCOLS] = list(GROUP_DEFAULTS[REBALANCE_PROTOCOLS]) \
            if release(str(values[KAFKA_VERSION])).at_least("4.0") else [CLASSIC]
    checks = (
        ("max.heartbeat.interval.ms", ">=", "min.heartbeat.interval.ms"),
        ("heartbeat.interval.ms", ">=", "min.heartbeat.interval.ms"),
        ("heartbeat.interval.ms", "<=", "max.heartbeat.interval.ms"),
        ("max.session.timeout.ms", ">=", "min.session.timeout.ms"),
        ("session.timeout.ms", ">=", "min.session.timeout.ms"),
        ("session.timeout.ms", "<=", "max.session.timeout.ms"),
        ("heartbeat.interval.ms", "<", "session.timeout.ms"),
    )
    share_checks = (
        ("record.lock.duration.ms", ">=", "min.record.lock.duration.ms"),
        ("record.lock.duration.ms", "<=", "max.record.lock.duration.ms"),
        ("delivery.count.limit", ">=", "min.delivery.count.limit"),
        ("delivery.count.limit", "<=", "max.delivery.count.limit"),
    )
    words = {">=": "greater than or equal to", "<=": "less than or equal to", "<": "less than"}
    for prefix, left, op, right in ([("group.consumer.", *c) for c in checks] + [("group.share.", *c) for c in checks]
                                    + [("group.share.", *c) for c in share_checks]):
        a, b = values[prefix + left], values[prefix + right]
        ok = a >= b if op == ">=" else a <= b if op == "<=" else a < b   # type: ignore[operator]
        if not ok:
            raise ConfigException(f"{prefix}{left} must be {words[op]} {prefix}{right}")


_ENDPOINT = re.compile(r"[A-Za-z0-9_]+://\[?[0-9a-zA-Z\-%._:]*\]?:[0-9]+")


def _listeners(name: str, value: ConfigValue) -> None:
    """Kafka's ``SocketServerConfigs.listenerListToEndPoints``: NAME://host:port, comma separated."""
    for item in str(value or "").split(","):
        if item.strip() and not _ENDPOINT.fullmatch(item.strip()):
            raise ConfigException(name, value, f"Unable to parse {item.strip()} to a broker endpoint "
                                               f"(expected NAME://host:port)")


DEFAULT_PROTOCOL_MAP = ",".join(f"{p.name}:{p.name}" for p in
                                (SecurityProtocol.SASL_SSL, SecurityProtocol.PLAINTEXT, SecurityProtocol.SSL,
                                 SecurityProtocol.SASL_PLAINTEXT))
DEFAULT_PRINCIPAL_BUILDER = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
LISTENER_PREFIX = "listener.name."


def _protocol_map(name: str, value: ConfigValue) -> None:
    from kafka_emu.broker.security.listener_security import parse_protocol_map

    parse_protocol_map(str(value or ""))


def _principal_rules(name: str, value: ConfigValue) -> None:
    SslPrincipalMapper(str(value or ""))


def _authorizer_class(name: str, value: ConfigValue) -> None:
    if value == ACL_AUTHORIZER:
        raise ConfigException(name, value, f"Kafka 4 removed the ZooKeeper-based AclAuthorizer: use {STANDARD_AUTHORIZER}")
    if value not in ("", None, STANDARD_AUTHORIZER):
        raise ConfigException(name, value, f"the emulator's authorizer is {STANDARD_AUTHORIZER} (or none)")


def _key(name: str, type_: Type, default: ConfigValue, validator: object, importance: Importance,
         doc: str, implemented: bool = True, dynamic: Dynamic = Dynamic.READ_ONLY) -> ConfigKey:
    return ConfigKey(name, type_, default, validator, importance, doc, implemented,  # type: ignore[arg-type]
                     dynamic=dynamic)


def _group(name: str, type_: Type, validator: object, importance: Importance, doc: str) -> ConfigKey:
    return _key(name, type_, GROUP_DEFAULTS[name], validator, importance, doc)


def _txn(name: str, type_: Type, validator: object, importance: Importance, doc: str) -> ConfigKey:
    return _key(name, type_, TXN_DEFAULTS[name], validator, importance, doc)


_AT_LEAST_0, _AT_LEAST_1 = Range.at_least(0), Range.at_least(1)

BROKER_KEYS: tuple[ConfigKey, ...] = (
    # ServerConfigs / KRaftConfigs
    _key("broker.id", Type.INT, 0, None, HIGH, "The broker id of this server."),
    _key("node.id", Type.INT, -1, None, HIGH, "The node id of this server (-1: broker.id)."),
    _key("broker.rack", Type.STRING, None, None, MEDIUM, "Rack of the broker, reported in Metadata."),
    _key("num.io.threads", Type.INT, 8, _AT_LEAST_1, HIGH,
         "The number of threads the server uses for processing requests.", dynamic=Dynamic.NOT_APPLIED),
    _key("queued.max.requests", Type.INT, 500, _AT_LEAST_1, HIGH,
         "The number of queued requests allowed before blocking the network threads."),
    _key("telemetry.max.bytes", Type.INT, 1 * MIB, _AT_LEAST_1, LOW,
         "The maximum size (after compression if compression is used) of telemetry metrics pushed "
         "from a client to the broker (KIP-714)."),
    _key("max.request.partition.size.limit", Type.INT, 2000, _AT_LEAST_1, LOW,
         "The maximum number of partitions can be served in one request (DescribeTopicPartitions)."),
    _key("queued.max.request.bytes", Type.LONG, -1, None, MEDIUM,
         "The number of queued bytes allowed before no more requests are read (the network "
         "processors stop reading sockets until memory is released); -1 (or 0): no limit."),
    _key("transaction.partition.verification.enable", Type.BOOLEAN, True, None, LOW,
         "Verify with the transaction coordinator that a partition was added to a transaction "
         "before a transactional batch opens that transaction on it (KIP-890 part 1).",
         dynamic=Dynamic.NOT_APPLIED),
    _key("add.partitions.to.txn.retry.backoff.ms", Type.INT, 20, _AT_LEAST_1, LOW,
         "How long the partition leader waits before asking the transaction coordinator again to add "
         "a partition (Produce v12+, TxnOffsetCommit v5) that answered CONCURRENT_TRANSACTIONS."),
    _key("add.partitions.to.txn.retry.backoff.max.ms", Type.INT, 100, _AT_LEAST_0, LOW,
         "How long the partition leader keeps retrying such an add (capped by request.timeout.ms) "
         "before it answers CONCURRENT_TRANSACTIONS."),
    _key(TRANSACTION_VERSION, Type.INT, None, _transaction_version, HIGH,
         "The finalized transaction.version feature level ApiVersions reports (0-2; 2 is KIP-890 "
         "part 2: implicit partition adding, an epoch bump per EndTxn). Default: what a newly formatted "
         f"cluster of {KAFKA_VERSION} finalizes (4.0 and later: 2; 3.9: 0, the only level it runs)."),
    _key(SHARE_VERSION, Type.INT, None, _share_version, HIGH,
         "The finalized share.version feature level ApiVersions reports (0-1); 0 turns share groups "
         "(KIP-932) off, their APIs answering UNSUPPORTED_VERSION. Default: what a newly formatted "
         f"cluster of {KAFKA_VERSION} finalizes (4.2: 1; 4.1: 0; 3.9 and 4.0, which have no share "
         "groups: 0, the only level they take)."),
    _key("request.timeout.ms", Type.INT, 30000, _AT_LEAST_0, MEDIUM,
         "How long the broker waits for the requests it makes itself, e.g. the replication of "
         "transaction markers it appends for WriteTxnMarkers."),
    _key("message.max.bytes", Type.INT, 1 * MIB + 12, _AT_LEAST_0, HIGH,
         "The largest record batch size allowed.", dynamic=Dynamic.APPLIED),
    _key("auto.create.topics.enable", Type.BOOLEAN, True, None, HIGH,
         "Enable auto creation of topics on the server (Metadata requests)."),
    _key("num.partitions", Type.INT, 1, _AT_LEAST_1, MEDIUM, "The default number of log partitions per topic."),
    _key("default.replication.factor", Type.INT, 1, None, MEDIUM,
         "The replication factor for automatically created topics and CreateTopics without one."),
    _key("fetch.purgatory.purge.interval.requests", Type.INT, 1000, None, MEDIUM,
         "The purge interval (in number of requests) of the fetch request purgatory."),
    _key("producer.purgatory.purge.interval.requests", Type.INT, 1000, None, MEDIUM,
         "The purge interval (in number of requests) of the producer request purgatory."),
    _key("delete.records.purgatory.purge.interval.requests", Type.INT, 1, None, MEDIUM,
         "The purge interval (in number of requests) of the delete records request purgatory."),
    # SocketServerConfigs
    _key("listeners", Type.STRING, "", _listeners, HIGH,
         "Comma-separated listener URIs (PLAINTEXT://host:port); empty: in-process requests only."),
    _key("advertised.listeners", Type.STRING, None, _listeners, HIGH,
         "Listeners published to clients if different from listeners."),
    _key("num.network.threads", Type.INT, 3, _AT_LEAST_1, HIGH,
         "The number of threads the server uses for receiving requests and sending responses.", dynamic=Dynamic.NOT_APPLIED),
    _key("socket.request.max.bytes", Type.INT, 100 * MIB, _AT_LEAST_1, HIGH,
         "The maximum number of bytes in a socket request."),
    _key("connections.max.idle.ms", Type.LONG, 600000, None, MEDIUM,
         "Idle connections timeout: the server closes connections idle longer than this."),
    # security: listeners' protocols, TLS, SASL (SocketServerConfigs, SslConfigs, SaslConfigs, BrokerSecurityConfigs)
    _key("listener.security.protocol.map", Type.STRING, DEFAULT_PROTOCOL_MAP, _protocol_map, LOW,
         "Map between listener names and security protocols (NAME:PROTOCOL, comma separated)."),
    _key("sasl.enabled.mechanisms", Type.LIST, ["GSSAPI"], None, MEDIUM,
         "The SASL mechanisms enabled on SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER "
         "(GSSAPI, Kafka's default, is refused on a SASL listener)."),
    _key("connections.max.reauth.ms", Type.LONG, 0, _AT_LEAST_0, MEDIUM,
         "Session lifetime of a SASL connection (KIP-368): the client re-authenticates before it ends, "
         "else the broker closes the connection at its next request. 0: no limit."),
    _key("connection.failed.authentication.delay.ms", Type.INT, 100, _AT_LEAST_0, LOW,
         "How long a connection that failed authentication stays open (its failure answered) before it is closed."),
    _key("ssl.keystore.type", Type.STRING, "JKS", None, MEDIUM,
         "The key store's format: PEM or PKCS12 (Kafka's default JKS cannot be read by the emulator)."),
    _key("ssl.keystore.location", Type.STRING, None, None, HIGH, "The key store file (PKCS12, or PEM with key and chain)."),
    _key("ssl.keystore.password", Type.PASSWORD, None, None, HIGH, "The key store's password (PKCS12)."),
    _key("ssl.key.password", Type.PASSWORD, None, None, HIGH, "The private key's password."),
    _key("ssl.keystore.certificate.chain", Type.PASSWORD, None, None, HIGH,
         "The certificate chain in PEM (ssl.keystore.type=PEM)."),
    _key("ssl.keystore.key", Type.PASSWORD, None, None, HIGH, "The private key in PEM (ssl.keystore.type=PEM)."),
    _key("ssl.truststore.type", Type.STRING, "JKS", None, MEDIUM,
         "The trust store's format: PEM or PKCS12 (Kafka's default JKS cannot be read by the emulator)."),
    _key("ssl.truststore.location", Type.STRING, None, None, HIGH, "The trust store file."),
    _key("ssl.truststore.password", Type.PASSWORD, None, None, HIGH, "The trust store's password (PKCS12)."),
    _key("ssl.truststore.certificates", Type.PASSWORD, None, None, HIGH,
         "The trusted certificates in PEM (ssl.truststore.type=PEM)."),
    _key("ssl.client.auth", Type.STRING, "none", ValidString(("required", "requested", "none")), MEDIUM,
         "Whether TLS clients must (required), may (requested) or do not (none) present a certificate."),
    _key("ssl.enabled.protocols", Type.LIST, ["TLSv1.2", "TLSv1.3"], None, MEDIUM,
         "The TLS protocol versions served (TLSv1.2, TLSv1.3)."),
    _key("ssl.protocol", Type.STRING, "TLSv1.3", ValidString(("TLSv1.2", "TLSv1.3", "TLS")), MEDIUM,
         "The TLS protocol of the context (the versions served are ssl.enabled.protocols)."),
    _key("ssl.cipher.suites", Type.LIST, [], None, LOW,
         "Cipher suites by their IANA names (empty: OpenSSL's defaults)."),
    _key("ssl.principal.mapping.rules", Type.STRING, "DEFAULT", _principal_rules, LOW,
         "Rules mapping a client certificate's subject to a principal name (RULE:pattern/replacement/[LU], DEFAULT)."),
    _key("ssl.endpoint.identification.algorithm", Type.STRING, "https", None, LOW,
         "Host name verification of the server certificate by clients (inter-broker traffic is in process: "
         "read by no one here)."),
    _key("ssl.provider", Type.STRING, None, None, LOW, "Java's security provider (only unset is accepted)."),
    _key("ssl.keymanager.algorithm", Type.STRING, "SunX509", None, LOW, "Java's key manager (only the default)."),
    _key("ssl.trustmanager.algorithm", Type.STRING, "PKIX", None, LOW, "Java's trust manager (only the default)."),
    _key("ssl.secure.random.implementation", Type.STRING, None, None, LOW,
         "Java's SecureRandom (only unset is accepted)."),
    _key("ssl.engine.factory.class", Type.CLASS, None, None, LOW, "A custom SSLEngine factory (only unset is accepted)."),
    ConfigKey(LISTENER_PREFIX, Type.PASSWORD, None, None, MEDIUM,
              "listener.name.<listener>.<config>: a TLS or SASL setting for one listener "
              "(<mechanism>.sasl.jaas.config for a SASL mechanism's users).", prefix=True),
    _key("principal.builder.class", Type.CLASS, DEFAULT_PRINCIPAL_BUILDER,
         ValidString((DEFAULT_PRINCIPAL_BUILDER,)), MEDIUM,
         "How principals are built (only Kafka's DefaultKafkaPrincipalBuilder)."),
    # authorizer (ServerConfigs, StandardAuthorizer)
    _key("authorizer.class.name", Type.STRING, "", _authorizer_class, LOW,
         f"The authorizer: empty (none) or {STANDARD_AUTHORIZER}."),
    _key("super.users", Type.STRING, None, None, LOW,
         "Principals allowed everything by the authorizer (User:a;User:b)."),
    _key("allow.everyone.if.no.acl.found", Type.BOOLEAN, False, None, LOW,
         "Whether a resource without any ACL is open to everyone (the authorizer's default otherwise denies)."),
    # inter-broker traffic stays in process: accepted, without effect
    _key("security.inter.broker.protocol", Type.STRING, "PLAINTEXT", ValidString(tuple(p.name for p in SecurityProtocol)),
         MEDIUM, "Security protocol between brokers (replication is in process here).", implemented=False),
    _key("inter.broker.listener.name", Type.STRING, None, None, MEDIUM,
         "Listener between brokers (replication is in process here).", implemented=False),
    _key("sasl.mechanism.inter.broker.protocol", Type.STRING, "GSSAPI", None, MEDIUM,
         "SASL mechanism between brokers (replication is in process here).", implemented=False),
    # QuotaConfig
    _key("quota.window.num", Type.INT, 11, _AT_LEAST_1, LOW, "The number of samples to retain in memory for client quotas."),
    _key("quota.window.size.seconds", Type.INT, 1, _AT_LEAST_1, LOW, "The time span of each sample for client quotas."),
    _key("controller.quota.window.num", Type.INT, 11, _AT_LEAST_1, LOW,
         "The number of samples to retain in memory for controller mutation quotas."),
    _key("controller.quota.window.size.seconds", Type.INT, 1, _AT_LEAST_1, LOW,
         "The time span of each sample for controller mutations quotas."),
    # ReplicationConfigs
    _key("num.replica.fetchers", Type.INT, 1, None, HIGH,
         "Number of fetcher threads used to replicate records from each source broker.", dynamic=Dynamic.NOT_APPLIED),
    _key("replica.lag.time.max.ms", Type.LONG, 30000, None, HIGH,
         "A follower that has not caught up to the leader's log end for this long leaves the ISR."),
    _key("replica.fetch.wait.max.ms", Type.INT, 500, None, MEDIUM,
         "The maximum wait time for each fetcher request issued by follower replicas."),
    _key("replica.fetch.min.bytes", Type.INT, 1, None, HIGH,
         "Minimum bytes expected for each fetch response of a follower."),
    _key("replica.fetch.max.bytes", Type.INT, 1 * MIB, _AT_LEAST_0, MEDIUM,
         "The number of bytes of messages to attempt to fetch for each partition."),
    _key("replica.fetch.response.max.bytes", Type.INT, 10 * MIB, _AT_LEAST_0, MEDIUM,
         "Maximum bytes expected for the entire fetch response of a follower."),
    _key("replica.fetch.backoff.ms", Type.INT, 1000, _AT_LEAST_0, MEDIUM,
         "The amount of time to sleep when a fetch partition error occurs."),
    _key("max.incremental.fetch.session.cache.slots", Type.INT, 1000, _AT_LEAST_0, MEDIUM,
         "The maximum number of incremental fetch sessions (KIP-227) a broker keeps: here those "
         "of follower fetchers; consumers' fetches are sessionless."),
    _key("min.insync.replicas", Type.INT, 1, _AT_LEAST_1, HIGH,
         "The minimum number of in-sync replicas that must acknowledge an acks=all write.", dynamic=Dynamic.APPLIED),
    _key("unclean.leader.election.enable", Type.BOOLEAN, False, None, HIGH,
         "Allow replicas not in the ISR to be elected leader as a last resort.", implemented=False, dynamic=Dynamic.NOT_APPLIED),
    # GroupCoordinatorConfig
    _group("group.min.session.timeout.ms", Type.INT, None, MEDIUM,
           "The minimum allowed session timeout for registered consumers."),
    _group("group.max.session.timeout.ms", Type.INT, None, MEDIUM,
           "The maximum allowed session timeout for registered consumers."),
    _group("group.initial.rebalance.delay.ms", Type.INT, None, MEDIUM,
           "How long the coordinator waits for more members to join a new group before rebalancing."),
    _group("group.max.size", Type.INT, _AT_LEAST_1, MEDIUM,
           "The maximum number of consumers that a single consumer group can accommodate."),
    _group("offsets.topic.num.partitions", Type.INT, _AT_LEAST_1, HIGH,
           "The number of partitions for the offset commit topic."),
    _key("offsets.topic.replication.factor", Type.SHORT, 3, _AT_LEAST_1, HIGH,
         "The replication factor for the offsets topic (capped at the live brokers)."),
    _group("offsets.commit.timeout.ms", Type.INT, _AT_LEAST_1, HIGH,
           "Offset commits wait this long for the offsets topic's replicas."),
    _group("offset.metadata.max.bytes", Type.INT, None, HIGH,
           "The maximum size for a metadata entry associated with an offset commit."),
    _group("offsets.retention.minutes", Type.INT, _AT_LEAST_1, HIGH,
           "Committed offsets of an empty group are kept this long."),
    _group("offsets.retention.check.interval.ms", Type.LONG, _AT_LEAST_1, HIGH,
           "Frequency at which to check for stale offsets."),
    _key(REBALANCE_PROTOCOLS, Type.LIST, None, _rebalance_protocols, MEDIUM,
         "The enabled rebalance protocols: classic, and consumer (KIP-848). Default: classic,consumer from "
         f"{KAFKA_VERSION}=4.0 on, classic for 3.9. Streams groups are not served."),
    _group("group.consumer.session.timeout.ms", Type.INT, _AT_LEAST_1, MEDIUM,
           "The timeout to detect client failures when using the consumer group protocol."),
    _group("group.consumer.min.session.timeout.ms", Type.INT, _AT_LEAST_1, MEDIUM,
           "The minimum allowed session timeout for registered consumers."),
    _group("group.consumer.max.session.timeout.ms", Type.INT, _AT_LEAST_1, MEDIUM,
           "The maximum allowed session timeout for registered consumers."),
    _group("group.consumer.heartbeat.interval.ms", Type.INT, _AT_LEAST_1, MEDIUM,
           "The heartbeat interval given to the members of a consumer group."),
    _group("group.consumer.min.heartbeat.interval.ms", Type.INT, _AT_LEAST_1, MEDIUM,
           "The minimum heartbeat interval for registered consumers."),
    _group("group.consumer.max.heartbeat.interval.ms", Type.INT, _AT_LEAST_1, MEDIUM,
           "The maximum heartbeat interval for registered consumers."),
    _group("group.consumer.max.size", Type.INT, _AT_LEAST_1, MEDIUM,
           "The maximum number of consumers that a single consumer group (consumer protocol) can accommodate."),
    _group("group.consumer.assignors", Type.LIST, ValidList(("uniform", "range")), MEDIUM,
           "The server side assignors, the first the default: uniform, range (custom assignor classes "
           "are not supported)."),
    _group("group.consumer.migration.policy", Type.STRING, ValidString(MIGRATION_POLICIES, case_insensitive=True),
           MEDIUM, "Which non-empty group conversions happen: classic to consumer groups (upgrade), back "
                   "(downgrade), both (bidirectional) or neither (disabled)."),
    # ShareGroupConfig (KIP-932)
    _group("group.share.session.timeout.ms", Type.INT, _AT_LEAST_1, MEDIUM,
           "The timeout to detect client failures when using the share group protocol."),
    _group("group.share.min.session.timeout.ms", Type.INT, _AT_LEAST_1, MEDIUM,
           "The minimum allowed session timeout for share group members."),
    _group("group.share.max.session.timeout.ms", Type.INT, _AT_LEAST_1, MEDIUM,
           "The maximum allowed session timeout for share group members."),
    _group("group.share.heartbeat.interval.ms", Type.INT, _AT_LEAST_1, MEDIUM,
           "The heartbeat interval given to the members of a share group."),
    _group("group.share.min.heartbeat.interval.ms", Type.INT, _AT_LEAST_1, MEDIUM,
           "The minimum heartbeat interval for share group members."),
    _group("group.share.max.heartbeat.interval.ms", Type.INT, _AT_LEAST_1, MEDIUM,
           "The maximum heartbeat interval for share group members."),
    _group("group.share.max.size", Type.INT, Range.between(1, 1000), MEDIUM,
           "The maximum number of members that a single share group can accommodate."),
    _group("group.share.assignors", Type.LIST, ValidList(("simple",)), MEDIUM,
           "The server-side assignors of share groups: simple (custom assignor classes are not supported)."),
    _group("group.share.record.lock.duration.ms", Type.INT, Range.between(1000, 3_600_000), MEDIUM,
           "The record acquisition lock duration in milliseconds for share groups."),
    _group("group.share.min.record.lock.duration.ms", Type.INT, Range.between(1000, 30_000), MEDIUM,
           "The record acquisition lock minimum duration in milliseconds for share groups."),
    _group("group.share.max.record.lock.duration.ms", Type.INT, Range.between(30_000, 3_600_000), MEDIUM,
           "The record acquisition lock maximum duration in milliseconds for share groups."),
    _group("group.share.delivery.count.limit", Type.INT, Range.between(2, 10), MEDIUM,
           "The maximum number of delivery attempts for a record delivered to a share group."),
    _group("group.share.min.delivery.count.limit", Type.INT, Range.between(2, 10), MEDIUM,
           "The minimum delivery count limit a share group may set (share.delivery.count.limit)."),
    _group("group.share.max.delivery.count.limit", Type.INT, Range.between(2, 10), MEDIUM,
           "The maximum delivery count limit a share group may set (share.delivery.count.limit)."),
    _group("group.share.partition.max.record.locks", Type.INT, Range.between(100, 10_000), MEDIUM,
           "Share-group record lock limit per share-partition: at most this many records in flight."),
    _group("group.share.max.share.sessions", Type.INT, Range.between(1000, 30_000), MEDIUM,
           "The maximum number of share sessions per broker."),
    _key("share.fetch.purgatory.purge.interval.requests", Type.INT, 1000, None, MEDIUM,
         "The purge interval (in number of requests) of the share fetch request purgatory."),
    # ShareCoordinatorConfig
    *(_key(name, Type.INT, default, _AT_LEAST_1, MEDIUM, doc) for name, default, doc in (
        ("share.coordinator.state.topic.num.partitions", SHARE_DEFAULTS["share.coordinator.state.topic.num.partitions"],
         "The number of partitions for the share-group state topic."),
        ("share.coordinator.state.topic.replication.factor",
         SHARE_DEFAULTS["share.coordinator.state.topic.replication.factor"],
         "Replication factor for the share-group state topic (capped at the live brokers)."),
        ("share.coordinator.state.topic.min.isr", SHARE_DEFAULTS["share.coordinator.state.topic.min.isr"],
         "min.insync.replicas of the share-group state topic."),
        ("share.coordinator.state.topic.segment.bytes", SHARE_DEFAULTS["share.coordinator.state.topic.segment.bytes"],
         "segment.bytes of the share-group state topic."),
        ("share.coordinator.snapshot.update.records.per.snapshot",
         SHARE_DEFAULTS["share.coordinator.snapshot.update.records.per.snapshot"],
         "The number of update records the share coordinator writes between snapshot records."),
        ("share.coordinator.write.timeout.ms", SHARE_DEFAULTS["share.coordinator.write.timeout.ms"],
         "How long the share coordinator waits for its writes to be replicated."))),
    # TransactionStateManagerConfig / TransactionLogConfig
    _txn("transaction.max.timeout.ms", Type.INT, _AT_LEAST_1, HIGH,
         "The maximum allowed timeout for transactions (InitProducerId above it: INVALID_TRANSACTION_TIMEOUT)."),
    _txn("transactional.id.expiration.ms", Type.INT, _AT_LEAST_1, HIGH,
         "How long the coordinator keeps an idle transactional id before expiring it."),
    _txn("transaction.abort.timed.out.transaction.cleanup.interval.ms", Type.INT, _AT_LEAST_1, LOW,
         "The interval at which to roll back transactions that have timed out."),
    _txn("transaction.remove.expired.transaction.cleanup.interval.ms", Type.INT, _AT_LEAST_1, LOW,
         "The interval at which to remove transactions that have expired."),
    _txn("transaction.state.log.num.partitions", Type.INT, _AT_LEAST_1, HIGH,
         "The number of partitions for the transaction topic."),
    _txn("transaction.state.log.replication.factor", Type.SHORT, _AT_LEAST_1, HIGH,
         "The replication factor for the transaction topic (capped at the live brokers)."),
    _txn("transaction.state.log.min.isr", Type.INT, _AT_LEAST_1, HIGH,
         "min.insync.replicas of the transaction topic."),
    _txn("transaction.state.log.segment.bytes", Type.INT, Range.at_least(1 * MIB), HIGH,
         "segment.bytes of the transaction topic."),
    *SERVER_LOG_KEYS,   # broker.storage.log_config: Kafka's ServerLogConfigs
    _key("replica.high.watermark.checkpoint.interval.ms", Type.LONG, 5000, _AT_LEAST_1, HIGH,
         "How often the high watermarks are saved to replication-offset-checkpoint (with log.dirs)."),
    *LOG_MANAGER_KEYS,  # broker.storage.log_config: the log manager's tasks, CleanerConfig
    _key(KAFKA_VERSION, Type.STRING, LATEST_RELEASE, ValidString(RELEASE_NAMES), HIGH,
         "The Kafka release the broker answers as: the API versions it serves and advertises, the "
         "features ApiVersions reports and the config defaults of that release (docs/compatibility.md)."),
    _key(API_COMPATIBILITY, Type.STRING, None, ValidString(tuple(COMPATIBILITY_ALIASES)), LOW,
         f"Deprecated: use {KAFKA_VERSION}. {KAFKA_4X} means the newest release ({LATEST_RELEASE}), "
         f"{KAFKA_3_9} means 3.9."),
    _key(STRICT_CONFIG, Type.BOOLEAN, False, None, HIGH,
         "Refuse keys the emulator does not implement or nobody defines (default: warn)."),
    _key(cpu_affinity.CONFIG_KEY, Type.STRING, cpu_affinity.DEFAULT, _cpu_affinity, MEDIUM,
         "CPUs of the cluster's threads: auto (one CPU), none (the OS decides) or a list of CPU numbers."),
    _key("log.level", Type.STRING, None, ValidString(tuple(LOG_LEVELS) + ("warn",), case_insensitive=True), MEDIUM,
         "Minimum level of the emulator's log events (the command line's --log-level wins)."),
    _key("log.format", Type.STRING, None, ValidString(LOG_FORMATS), MEDIUM,
         "Format of the emulator's log events (the command line's --log-format wins)."),
    ConfigKey("log.level.", Type.STRING, None, ValidString(tuple(LOG_LEVELS) + ("warn",), case_insensitive=True),
              LOW, "log.level.<logger>: level of one logger and its children.", prefix=True),
    ConfigKey(LISTENER_PORT_REUSED, Type.BOOLEAN, False, None, LOW,
              "Set by EmbeddedCluster: the listener port is the one this broker had before a restart.",
              internal=True),
)

# Kafka's broker keys the emulator does not model; given, they warn as "not implemented".
KAFKA_KEYS_NOT_DEFINED: tuple[str, ...] = (
    "advertised.host.name", "advertised.port", "alter.config.policy.class.name", "authorizer.class.name",
    "auto.include.jmx.reporter", "auto.leader.rebalance.enable", "background.threads", "broker.heartbeat.interval.ms",
    "broker.session.timeout.ms", "client.quota.callback.class", "cluster.id", "compression.codec",
    "controlled.shutdown.enable",
    "controlled.shutdown.max.retries", "controlled.shutdown.retry.backoff.ms", "controller.listener.names",
    "controller.quorum.bootstrap.servers", "controller.quorum.election.backoff.max.ms",
    "controller.quorum.election.timeout.ms", "controller.quorum.fetch.timeout.ms", "controller.quorum.voters",
    "create.topic.policy.class.name", "delete.topic.enable",
    "early.start.listeners", "fetch.max.bytes", "group.coordinator.threads",
    "host.name", "initial.broker.registration.timeout.ms", "inter.broker.protocol.version",
    "kafka.metrics.polling.interval.secs", "kafka.metrics.reporters", "leader.imbalance.check.interval.seconds",
    "leader.imbalance.per.broker.percentage", 
    "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second", "log.cleaner.threads",
    "log.dir.failure.timeout.ms", "log.message.downconversion.enable",
    "log.message.format.version", "log.message.timestamp.difference.max.ms",
    "max.connection.creation.rate", "max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
    "metadata.log.dir", "metadata.log.max.record.bytes.between.snapshots",
    "metadata.log.segment.bytes", "metadata.log.segment.ms", "metadata.max.idle.interval.ms",
    "metadata.max.retention.bytes", "metadata.max.retention.ms", "metric.reporters", "metrics.num.samples",
    "metrics.recording.level", "metrics.sample.window.ms", "num.recovery.threads.per.data.dir",
    "num.replica.alter.log.dirs.threads", "offsets.load.buffer.size", "offsets.topic.compression.codec",
    "offsets.topic.segment.bytes", "password.encoder.secret", "port", "process.roles",
    "replica.selector.class", "replica.socket.receive.buffer.bytes", "replica.socket.timeout.ms",
    "replication.quota.window.num", "replication.quota.window.size.seconds",
    "reserved.broker.max.id", "socket.connection.setup.timeout.max.ms",
    "socket.connection.setup.timeout.ms", "socket.listen.backlog.size", "socket.receive.buffer.bytes",
    "socket.send.buffer.bytes", 
    "transaction.state.log.load.buffer.size", "zookeeper.connect", "zookeeper.connection.timeout.ms",
    "zookeeper.session.timeout.ms",
)
KAFKA_PREFIXES_NOT_DEFINED: tuple[str, ...] = (
    "confluent.", "delegation.token.", "group.consumer.", "group.share.", "password.encoder.",
    "remote.log.", "sasl.", "security.", "share.", "ssl.", "unstable.", "zookeeper.",
)

KAFKA_CONFIG_DEF = ConfigDef(BROKER_KEYS, KAFKA_KEYS_NOT_DEFINED, KAFKA_PREFIXES_NOT_DEFINED)


def _unify_node_id(given: Mapping[str, object], values: dict[str, ConfigValue]) -> None:
    """KRaft's ``node.id`` and ``broker.id`` name one id: either sets both; both must agree."""
    if values["node.id"] == -1:
        values["node.id"] = values["broker.id"]
    elif "broker.id" not in given:
        values["broker.id"] = values["node.id"]
    elif values["broker.id"] != values["node.id"]:
        raise ConfigException(f"broker.id={values['broker.id']} and node.id={values['node.id']} must be equal "
                              f"when both are set")


def _check_queued_max_bytes(values: dict[str, ConfigValue]) -> None:
    """Kafka's ``KafkaConfig.validateValues``: a bounded request memory pool must hold the
    largest request (``SimpleMemoryPool``'s single allocations are at most
    ``socket.request.max.bytes``)."""
    queued, largest = values["queued.max.request.bytes"], values["socket.request.max.bytes"]
    if 0 < queued < largest:   # type: ignore[operator]
        raise ConfigException("queued.max.request.bytes", queued,
                              f"queued.max.request.bytes must be larger or equal to socket.request.max.bytes "
                              f"({largest})")


def _check_replica_fetch_wait(values: dict[str, ConfigValue]) -> None:
    """Kafka's ``KafkaConfig.validateValues``: a follower's fetch may wait in the leader's purgatory
    up to ``replica.fetch.wait.max.ms``; longer than ``replica.lag.time.max.ms``, an idle but
    healthy follower would leave the ISR between two fetches."""
    wait, lag = values["replica.fetch.wait.max.ms"], values["replica.lag.time.max.ms"]
    if wait > lag:   # type: ignore[operator]
        raise ConfigException("replica.fetch.wait.max.ms", wait,
                              f"replica.fetch.wait.max.ms should always be less than or equal to "
                              f"replica.lag.time.max.ms ({lag}) to prevent frequent changes in ISR")


class KafkaConfig:
    """Typed broker configuration: every key of ``KAFKA_CONFIG_DEF`` (given or default).

    ``originals`` are the given values (their keys are DescribeConfigs' STATIC_BROKER_CONFIG),
    ``ignored`` the given keys without effect, each with its reason. Construction raises
    ``ConfigException`` on the first bad value, or on an ignored key under
    ``emulator.strict.config=true``; it logs nothing (``log_ignored`` does, once per key, so
    a cluster building one config per broker warns once).
    """

    def __init__(self, props: Mapping[str, object] | None = None) -> None:
        self.originals: dict[str, object] = {k: v for k, v in (props or {}).items() if v is not None}
        parsed = KAFKA_CONFIG_DEF.parse(self.originals)
        _unify_node_id(self.originals, parsed.values)
        self.deprecated: str | None = _resolve_kafka_version(self.originals, parsed.values)
        _apply_release(self.originals, parsed.values)
        _check_queued_max_bytes(parsed.values)
        _check_replica_fetch_wait(parsed.values)
        _resolve_group_configs(parsed.values)
        validate_security(self.originals, parsed.values)
        self.props: dict[str, ConfigValue] = parsed.values
        self.ignored: dict[str, str] = parsed.ignored
        if self.props[STRICT_CONFIG] and self.ignored:
            name, reason = next(iter(self.ignored.items()))
            raise strict_refusal(name, reason)

    def log_ignored(self) -> None:
        """Log the ignored keys and a deprecated key's replacement, one line each."""
        if self.deprecated is not None:
            _log.warning("config_deprecated", key=API_COMPATIBILITY, message=self.deprecated)
        for name, reason in self.ignored.items():
            _log.warning("config_ignored", key=name, reason=reason, message=ignored_message(name, reason))

    def __getitem__(self, key: str) -> ConfigValue:
        return self.props[key]

    def get(self, key: str, default: ConfigValue = None) -> ConfigValue:
        value = self.props.get(key)
        return default if value is None else value

    def __contains__(self, key: str) -> bool:
        return key in self.props

    def with_overrides(self, **props: object) -> "KafkaConfig":
        """A new config with ``props`` (``listeners=...``) added to the originals."""
        return KafkaConfig({**self.originals, **props})

    def as_dict(self) -> dict[str, ConfigValue]:
        return dict(self.props)

    @property
    def kafka_release(self) -> KafkaRelease:
        """The release the broker answers as (``emulator.kafka.version``)."""
        return release(str(self.props[KAFKA_VERSION]))

    @property
    def broker_id(self) -> int:
        return int(self.props["broker.id"])  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"KafkaConfig(broker.id={self.broker_id})"
