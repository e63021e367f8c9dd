"""EmbeddedCluster: N in-process brokers sharing one MetadataStore (the emulated controller).

::

    with EmbeddedCluster(brokers=3, config={"min.insync.replicas": 2}) as cluster:
        cluster.create_topic("t", partitions=3, replication_factor=3)
        cluster.produce("t", 0, [(b"k", b"v")])          # acks=-1 through the leader's channel
        cluster.stop_broker(1); cluster.start_broker(1)  # crash and restart emulation

``stop_broker`` emulates a crash (threads end; in-flight delayed operations of its partitions
complete with NOT_LEADER_OR_FOLLOWER; leaders move with an epoch bump). Each broker's logs
survive in ``cluster.logs[broker_id]`` (the "disk"), so ``start_broker`` restarts it on them:
truncate to HW, rejoin as follower, rejoin the ISR once caught up.

With ``log.dirs`` (or ``log.dir``) the logs are also files (``broker.storage.persistent_log``) and
the controller state a JSON snapshot (``broker.storage.log_dirs``): a new process on the same
directories gets the topics, group offsets and producer state back. The directories are
checked and locked at construction (``ConfigException``: unwritable, in use, another
cluster's); with several brokers broker ``i`` uses ``<dir>/broker-<i>``.

The release: ``kafka_version="4.1"`` (or ``emulator.kafka.version`` in ``config``) makes every
broker answer as that Kafka release (its API versions, the features ApiVersions reports, its
config defaults; docs/compatibility.md); default the newest the emulator knows.
``cluster.kafka_version`` is the release in force (a ``KafkaRelease``: ``.name``, ``.tag``).

Lowered defaults (``EMBEDDED_DEFAULTS``, for speed in tests; any can be overridden):
``num.io.threads`` 4 (Kafka 8), ``replica.fetch.backoff.ms`` 50 (Kafka 1000),
``offsets.topic.num.partitions`` 10 (Kafka 50), ``group.consumer.heartbeat.interval.ms`` 250
(Kafka 5000) with ``group.consumer.min.heartbeat.interval.ms`` 100 (Kafka 5000): a KIP-848
member learns of partitions to revoke or to take at its next heartbeat, so ten confluent-kafka
consumer-protocol members own all partitions in about 0.3 s instead of 5 s; the same for share
groups (``group.share.heartbeat.interval.ms`` 250, min 100), and
``share.coordinator.state.topic.num.partitions`` 10 (Kafka 50: the first share group of a cluster
creates ``__share_group_state``). Everything else is Kafka's default. The
emulator's own ``emulator.cpu.affinity`` (``broker.server.cpu_affinity``) is resolved once per
cluster, so every broker's threads share the same CPU (``cpus``; None when placement is left to
the OS).

The configuration goes through ``broker.server.config.KafkaConfig`` at construction: a bad value raises
``ConfigException`` before any broker starts, a key without effect is logged once (refused under
``emulator.strict.config=true``); ``create_topic`` checks topic configs the same way
(``broker.storage.log_config``).

``reset()`` empties the cluster between tests (every group and every non-internal topic
deleted); the pytest plugin's module-scoped users call it to start each test clean.

``metrics_port`` (None: off; 0: a free port) serves the cluster's Prometheus metrics
(``metrics.serve_cluster_metrics``) on ``metrics_host`` once the brokers are up;
``metrics_url`` is then ``http://host:port/metrics``. ``close()`` stops the endpoint before the
brokers, so no scrape races a shutdown.

``schema_registry_port`` (None: off; 0: a free port) starts an embedded Confluent Schema
Registry (``broker.cluster.schema_registry``, the ``registry`` extra) on
``schema_registry_host`` once the brokers are up, stored in the compacted ``_schemas`` topic;
``schema_registry_url`` is then ``http://host:port``. ``reset()`` empties it too.

Test control (``broker.cluster.control``, see docs/testing-failure.md): ``inject_errors``,
``set_latency``, ``intercept``, ``isolate``/``heal``, ``move_leader``,
``move_group_coordinator``, ``clear_faults`` and the ``faults(...)`` context manager make the
cluster misbehave on purpose; ``record_requests=True`` (or a ring capacity) keeps what clients
sent for ``requests()``; ``time="offset"`` or ``"manual"`` (or a ``MockTime``) lets
``advance_time(ms)`` move every broker's clock at once and returns once what fell due has run.

Locking: ``_lock`` guards the broker map and start/stop transitions.
"""
from __future__ import annotations

import contextlib
import threading
from time import monotonic, sleep
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import structlog

from kafka_emu.broker.server import cpu_affinity
from kafka_emu.broker.server.config import KAFKA_VERSION, LISTENER_PORT_REUSED, STRICT_CONFIG, KafkaConfig
from kafka_emu.broker.cluster.cluster_security import ClusterSecurity
from kafka_emu.common.config_def import ConfigException
from kafka_emu.common.kafka_releases import KafkaRelease
from kafka_emu.broker.cluster.control import ClusterControl, ErrorInjection, RequestRecord
from kafka_emu.broker.cluster.control.time_control import make_time
from kafka_emu.broker.cluster.inprocess_client import fetch_request, produce_request, send
from kafka_emu.broker.server.kafka_server import KafkaServer
from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.log_config import validate_topic_configs
from kafka_emu.broker.storage.log_dirs import ClusterStorage, configured_log_dirs
from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC, MetadataStore, TopicInfo
from kafka_emu.broker.server.partition_state import PartitionState
from kafka_emu.broker.storage.record_batch import build_batch, iter_records
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.logsetup import ensure_configured as ensure_logging_configured
from kafka_emu.timer.time import Time

if TYPE_CHECKING:
    from kafka_emu.broker.cluster.control.control import Interceptor
    from kafka_emu.broker.cluster.schema_registry.rest import SchemaRegistryServer
    from kafka_emu.metrics.cluster import ClusterMetrics

_log = structlog.get_logger("broker.cluster")

EMBEDDED_DEFAULTS: dict[str, Any] = {
    "num.io.threads": 4,
    "replica.fetch.backoff.ms": 50,
    "offsets.topic.num.partitions": 10,
    "group.consumer.heartbeat.interval.ms": 250,
    "group.consumer.min.heartbeat.interval.ms": 100,
    "share.coordinator.state.topic.num.partitions": 10,
    "group.share.heartbeat.interval.ms": 250,
    "group.share.min.heartbeat.interval.ms": 100,
}


# ---- socket server ----
DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:0"
# Kafka's num.network.threads is 3; in one CPython process extra processors only add GIL
# contention (16 connections on one broker: ~8.5k req/s with 3, ~11k with 1), so the embedded
# cluster defaults to 1. Set num.network.threads to override.
EMBEDDED_NETWORK_THREADS = 1


def broker_listeners(props: Mapping[str, Any], broker_id: int,
                     previous_ports: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Per-broker ``listeners``/``advertised.listeners`` from the cluster-wide ones.

    The cluster config names the first broker's addresses; broker ``i`` listens on port
    ``port + i`` of each listener (port 0 stays ephemeral for every broker). A restarted broker
    gets back the ephemeral ports it had (``previous_ports``, by listener name), as a real broker
    restarts on its ports, so clients' bootstrap lists stay valid; if one is taken meanwhile it
    falls back to new ones. Set ``listeners=""`` to run brokers without sockets (in-process
    requests only).
    """
    reused = False
    previous_ports = previous_ports or {}

    def shift(value: str, reuse: bool) -> str:
        nonlocal reused
        out = []
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            head, _, port = item.rpartition(":")
            previous = previous_ports.get(head.partition("://")[0].upper()) if reuse else None
            if int(port or 0):
                out.append(f"{head}:{int(port) + broker_id}")
            elif previous:
                reused = True
                out.append(f"{head}:{previous}")
            else:
                out.append(f"{head}:0")
        return ",".join(out)

    listeners = props.get("listeners", DEFAULT_LISTENERS)
    out: dict[str, Any] = {"listeners": shift(str(listeners), True) if listeners else ""}
    if reused:
        out[LISTENER_PORT_REUSED] = True
    advertised = props.get("advertised.listeners")
    if advertised:
        out["advertised.listeners"] = shift(str(advertised), False)
    return out
# ---- end socket server ----


class EmbeddedCluster:
    def __init__(self, brokers: int = 3, config: Mapping[str, Any] | None = None,
                 time: Time | str | None = None, offsets_topic: bool = True,
                 enable_coordinator: bool = True, start: bool = True,
                 metrics_port: int | None = None, metrics_host: str = "127.0.0.1",
                 record_requests: bool | int = False, schema_registry_port: int | None = None,
                 schema_registry_host: str = "127.0.0.1", security: ClusterSecurity | str | None = None,
                 kafka_version: str | None = None) -> None:
        # An embedding application that set up structlog keeps its set-up; otherwise only
        # warnings and errors are printed (structlog's own default prints debug events).
        ensure_logging_configured()
        self.num_brokers = brokers
        self.base_config: dict[str, Any] = dict(EMBEDDED_DEFAULTS)
        self.security = ClusterSecurity.of(security)
        if self.security is not None:
            self.base_config.update(self.security.broker_config())
        self.base_config.update(config or {})
        if kafka_version is not None:
            if KAFKA_VERSION in (config or {}) and str(config[KAFKA_VERSION]) != str(kafka_version):  # type: ignore[index]
                raise ConfigException(KAFKA_VERSION, config[KAFKA_VERSION],  # type: ignore[index]
                                      f"disagrees with kafka_version={kafka_version!r}")
            self.base_config[KAFKA_VERSION] = str(kafka_version)
        # every value checked (ConfigException) and every ignored key logged once, before any start
        checked = KafkaConfig(self.base_config)
        checked.log_ignored()
        # the release every broker answers as (emulator.kafka.version)
        self.kafka_version: KafkaRelease = checked.kafka_release
        # one CPU choice for the whole cluster: its brokers hand requests to each other too
        self.cpus = cpu_affinity.resolve(checked[cpu_affinity.CONFIG_KEY])
        self.base_config[cpu_affinity.CONFIG_KEY] = cpu_affinity.describe(self.cpus)
        self.time: Time = make_time(time)
        self.control = ClusterControl(self, record_requests)
        # with log.dirs: directories checked and locked, the persisted controller state back
        base_dirs = configured_log_dirs(checked)
        self.storage = ClusterStorage(base_dirs, brokers) if base_dirs else None
        self.metadata = MetadataStore(self.storage.cluster_id if self.storage is not None else None)
        self._min_insync_replicas = int(checked["min.insync.replicas"])
        if self.storage is None or self.storage.state is None:   # a newly formatted cluster
            self.metadata.write_activation_records(self.kafka_version, self._min_insync_replicas)
        if self.storage is not None:
            if self.storage.state is not None:
                self.metadata.restore_state(self.storage.state)
            self.metadata.on_change = self.storage.snapshot_file
            self.storage.snapshot_file(self.metadata)
        if self.security is not None and self.security.kind.uses_sasl:
            wanted = self.security.scram_credentials()   # the users' SCRAM logins, kept if persisted
            self.metadata.alter_scram_credentials(lambda current: {**wanted, **current})
        self.logs: dict[int, dict[tuple[str, int], UnifiedLog]] = {i: {} for i in range(brokers)}
        self.servers: dict[int, KafkaServer] = {}
        self.offsets_topic = offsets_topic
        self.enable_coordinator = enable_coordinator
        self._lock = threading.RLock()
        self._closed = False
        self._started = False
        self.metrics_port = metrics_port
        self.metrics_host = metrics_host
        self.metrics: ClusterMetrics | None = None    # while the endpoint runs
        self.schema_registry_port = schema_registry_port
        self.schema_registry_host = schema_registry_host
        self.schema_registry: SchemaRegistryServer | None = None   # while the registry runs
        if schema_registry_port is not None:
            from kafka_emu.broker.cluster.schema_registry import require_extra

            require_extra()
        if start:
            self.start()

    # ------------------------------------------------------------------ lifecycle
    def broker_config(self, broker_id: int) -> KafkaConfig:
        props = dict(self.base_config)
        props["broker.id"] = broker_id
        if self.storage is not None:   # each broker its own directories (broker.log_dirs)
            props.pop("log.dir", None)
            props["log.dirs"] = ",".join(str(d) for d in self.storage.broker_dirs(broker_id))
        # ---- socket server: one listener per broker ----
        props.setdefault("num.network.threads", EMBEDDED_NETWORK_THREADS)
        previous = self.servers.get(broker_id)
        previous_ss = getattr(previous, "socket_server", None)
        props.update(broker_listeners(props, broker_id, {} if previous_ss is None else
                                      {ep.listener_name: ep.port for ep in previous_ss.endpoints}))
        # ---- end socket server ----
        return KafkaConfig(props)

    def _new_server(self, broker_id: int) -> KafkaServer:
        return KafkaServer(self.broker_config(broker_id), self.metadata, self.time, self.logs[broker_id],
                           enable_coordinator=self.enable_coordinator, control=self.control)

    def start(self) -> "EmbeddedCluster":
        with self._lock:
            if self._started:
                return self
            for i in range(self.num_brokers):
                self.servers[i] = self._new_server(i).startup()
            # ---- socket server: per-broker listeners are started by KafkaServer ----
            self._started = True
        if self.offsets_topic:
            self.ensure_offsets_topic()
        if self.metrics_port is not None and self.metrics is None:
            from kafka_emu.metrics import serve_cluster_metrics

            self.metrics = serve_cluster_metrics(self, self.metrics_port, self.metrics_host)
        if self.schema_registry_port is not None and self.schema_registry is None:
            from kafka_emu.broker.cluster.schema_registry.rest import serve_schema_registry

            # its metrics: ClusterMetrics reads self.schema_registry at every scrape
            self.schema_registry = serve_schema_registry(self, self.schema_registry_port, self.schema_registry_host)
        return self

    @property
    def schema_registry_url(self) -> str | None:
        """``http://host:port`` of the embedded schema registry, None when off."""
        return self.schema_registry.url if self.schema_registry is not None else None

    @property
    def metrics_url(self) -> str | None:
        """``http://host:port/metrics`` of the cluster's Prometheus endpoint, None when off."""
        server = self.metrics.server if self.metrics is not None else None
        return server.url if server is not None else None

    def ensure_offsets_topic(self) -> None:
        cfg = self.broker_config(0)
        self.metadata.ensure_offsets_topic(cfg["offsets.topic.num.partitions"],
                                           cfg["offsets.topic.replication.factor"])

    # ---- socket server ----
    @property
    def bootstrap_servers(self) -> str:
        """``host:port,...`` of every live broker's listener, for any Kafka client."""
        with self._lock:
            servers = [s for _, s in sorted(self.servers.items()) if not s.stopped]
        return ",".join(s.bootstrap_server for s in servers if s.bootstrap_server)
    # ---- end socket server ----

    def bootstrap_servers_of(self, listener: str) -> str:
        """``host:port,...`` of every live broker's listener ``listener``."""
        with self._lock:
            servers = [s for _, s in sorted(self.servers.items()) if not s.stopped and s.socket_server is not None]
        return ",".join("%s:%d" % s.socket_server.advertised_endpoint(listener.upper()) for s in servers)

    def client_config(self, user: str | None = None, client: str = "confluent", mechanism: str | None = None,
                      password: str | None = None) -> dict[str, Any]:
        """Client settings reaching the secured listener as ``user`` (``cluster_security``)."""
        if self.security is None:
            return ({"bootstrap.servers": self.bootstrap_servers} if client == "confluent"
                    else {"bootstrap_servers": self.bootstrap_servers})
        return self.security.client_config(self.bootstrap_servers_of(self.security.listener), user, client,
                                           mechanism, password)

    def __enter__(self) -> "EmbeddedCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            servers = list(self.servers.values())
            metrics, self.metrics = self.metrics, None
            registry, self.schema_registry = self.schema_registry, None
        if registry is not None:
            registry.close()
        if metrics is not None:
            try:
                metrics.close()
            except Exception:  # noqa: BLE001 - the brokers must still go down
                _log.exception("metrics_close_failed")
        for s in servers:  # no elections while the whole cluster goes down
            s.shutdown(fence=False)
        self.control.close()
        if self.security is not None:
            self.security.close()
        if self.storage is not None:
            self.storage.release()

    # ------------------------------------------------------------------ topics
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None,
                     configs: Mapping[str, Any] | None = None) -> TopicInfo:
        cfg = self.broker_config(0)
        rf = replication_factor if replication_factor is not None else cfg["default.replication.factor"]
        overrides = validate_topic_configs(name, configs or {}, bool(cfg[STRICT_CONFIG]))
        return self.metadata.create_topic(name, partitions, rf, overrides)

    def delete_topic(self, name: str) -> bool:
        return self.metadata.delete_topic(name)

    # ------------------------------------------------------------------ reset
    def reset(self, timeout_s: float = 10.0) -> None:
        """Back to an empty cluster: faults cleared (``clear_faults``), recorded requests dropped,
        the schema registry emptied (its ``_schemas`` topic created anew),
        every consumer group and every non-internal topic deleted, as an admin would with
        DeleteGroups and DeleteTopics, the dynamic broker and group configs removed
        (IncrementalAlterConfigs DELETE) but for those a newly formatted cluster of the release has
        (KIP-966's cluster-level ``min.insync.replicas``, ``MetadataStore.write_activation_records``),
        and the client quotas (AlterClientQuotas); the brokers keep running, on the same clock.

        Groups go through each coordinator's DeleteGroups path, so a group that still has
        members is NON_EMPTY_GROUP, as in Kafka; topics go through the controller's deletion, as
        DeleteTopics does. Rounds repeat until nothing is left (a consumer closing right now
        leaves its group; a client may auto-create a topic again; a coordinator may be loading)
        and raise ``RuntimeError`` naming what is left after ``timeout_s``. ``__consumer_offsets``
        stays, with the deleted groups' tombstones.
        """
        deadline = monotonic() + timeout_s
        self.clear_faults()   # no injected error or isolation may stand in the deletions' way
        self.clear_requests()
        for resource in self.metadata.broker_config_resources():
            self.metadata.alter_broker_configs(resource, lambda _current: {})
        for group_id in self.metadata.group_config_resources():
            self.metadata.alter_group_configs(group_id, lambda _current: {})
        quotas = self.metadata.describe_client_quotas([], strict=False)
        if quotas:   # every client quota removed, as AlterClientQuotas would
            self.metadata.alter_client_quotas([(list(entity), [(key, None) for key in values])
                                               for entity, values in quotas])
        self.metadata.write_activation_records(self.kafka_version, self._min_insync_replicas)
        while True:
            left = self._delete_groups() + self._delete_topics()
            if not left:
                if self.schema_registry is not None:
                    self.schema_registry.registry.reset()
                return
            if monotonic() >= deadline:
                raise RuntimeError(f"reset: still present after {timeout_s:g} s: {', '.join(left)}")
            sleep(0.01)

    def _delete_groups(self) -> list[str]:
        """One DeleteGroups round on every live coordinator; what is left, for messages."""
        left: list[str] = []
        with self._lock:
            coordinators = [s.group_coordinator for s in self.servers.values()
                            if not s.stopped and s.group_coordinator is not None]
        for gc in coordinators:
            error, overviews = gc.handle_list_groups()
            if error != Errors.NONE:   # loading: its groups are not all listed yet
                left.append(f"coordinator {gc.broker_id} ({Errors(error).name})")
            result = gc.handle_delete_groups([o.group_id for o in overviews])
            left += [f"group {gid} ({Errors(err).name})" for gid, err in sorted(result.items())
                     if err not in (Errors.NONE, Errors.GROUP_ID_NOT_FOUND)]
        return left

    def _delete_topics(self) -> list[str]:
        """Delete every non-internal topic; the ones still there after (none, unless re-created)."""
        for name in self._user_topics():
            self.metadata.delete_topic(name)
        return [f"topic {name}" for name in self._user_topics()]

    def _user_topics(self) -> list[str]:
        return sorted(name for name, info in list(self.metadata.topics.items())
                      if not info.internal and name != OFFSETS_TOPIC)

    # ------------------------------------------------------------------ brokers
    def broker(self, broker_id: int) -> KafkaServer:
        return self.servers[broker_id]

    def live_brokers(self) -> list[int]:
        return self.metadata.live_broker_ids()

    def stop_broker(self, broker_id: int) -> None:
        with self._lock:
            server = self.servers.get(broker_id)
        if server is not None and not server.stopped:
            server.shutdown()

    def start_broker(self, broker_id: int) -> KafkaServer:
        with self._lock:
            server = self.servers.get(broker_id)
            if server is not None and not server.stopped:
                return server
            server = self.servers[broker_id] = self._new_server(broker_id)
            self.control.forget_isolation(broker_id)
        return server.startup()

    def leader_of(self, topic: str, partition: int = 0) -> int:
        st = self.metadata.partition_state(topic, partition)
        return st.leader if st is not None else -1

    def partition_state(self, topic: str, partition: int = 0) -> PartitionState | None:
        return self.metadata.partition_state(topic, partition)

    # ------------------------------------------------------------------ test control
    def inject_errors(self, api: str | int, errors: Iterable[str | int], *, broker: int | None = None,
                      topic: str | None = None, partition: int | None = None,
                      group: str | None = None) -> ErrorInjection:
        """The next requests of ``api`` matching the filters answer these errors, one each."""
        return self.control.inject_errors(api, errors, broker=broker, topic=topic,
                                          partition=partition, group=group)

    def faults(self, api: str | int, errors: Iterable[str | int], **filters: Any) -> contextlib.AbstractContextManager[ErrorInjection]:
        """``with cluster.faults(api="Produce", errors=[...]):`` injects, and clears every fault on exit."""
        return self.control.scoped(api, errors, **filters)

    def set_latency(self, broker: int, ms: int, api: str | int | None = None) -> None:
        self.control.set_latency(broker, ms, api)

    def intercept(self, api: str | int, fn: Interceptor | None) -> None:
        self.control.intercept(api, fn)

    def isolate(self, broker_id: int) -> None:
        self.control.isolate(broker_id)

    def heal(self, broker_id: int) -> None:
        self.control.heal(broker_id)

    def move_leader(self, topic: str, partition: int, broker_id: int) -> PartitionState:
        return self.control.move_leader(topic, partition, broker_id)

    def move_group_coordinator(self, group_id: str, broker_id: int) -> int:
        return self.control.move_group_coordinator(group_id, broker_id)

    def clear_faults(self) -> None:
        self.control.clear_faults()

    def advance_time(self, ms: float) -> None:
        """Jump every broker's clock forward by ``ms``; returns once what fell due has run."""
        self.control.advance_time(ms)

    def requests(self, api: str | int | None = None, broker: int | None = None,
                 client_id: str | None = None) -> list[RequestRecord]:
        return self.control.requests(api, broker, client_id)

    def clear_requests(self) -> None:
        self.control.clear_requests()

    # ------------------------------------------------------------------ convenience clients
    def produce(self, topic: str, partition: int, records: list[tuple[bytes | None, bytes | None]],
                acks: int = -1, timeout_ms: int = 30000, version: int = 9, **batch_kw: Any) -> tuple[int, int]:
        """Produce one batch through the current leader; (error code, base offset)."""
        leader = self.leader_of(topic, partition)
        server = self.servers.get(leader)
        if server is None or server.stopped:
            return Errors.NOT_LEADER_OR_FOLLOWER, -1
        body = produce_request(topic, partition, build_batch(records, **batch_kw), acks, timeout_ms, version)
        resp = send(server.request_channel, ApiKeys.PRODUCE, version, body, timeout_s=timeout_ms / 1000 + 10)
        if resp.body is None:
            return (Errors.NONE if acks == 0 and not resp.close_connection else Errors.NOT_LEADER_OR_FOLLOWER), -1
        p = resp.body.responses[0].partition_responses[0]
        return int(p.error_code), int(p.base_offset)

    def fetch(self, topic: str, partition: int, offset: int, broker_id: int | None = None,
              **kw: Any) -> Any:
        """A consumer fetch (kio v12 partition data) from the leader (or ``broker_id``)."""
        bid = self.leader_of(topic, partition) if broker_id is None else broker_id
        server = self.servers[bid]
        resp = send(server.request_channel, ApiKeys.FETCH, 12, fetch_request(topic, partition, offset, **kw))
        return resp.body.responses[0].partitions[0]

    def read_all(self, topic: str, partition: int, broker_id: int | None = None,
                 upto_hw: bool = False) -> list[tuple[int, bytes | None, bytes | None]]:
        """Every record in a broker's local log (the leader's by default), up to LEO or HW."""
        bid = self.leader_of(topic, partition) if broker_id is None else broker_id
        log = self.logs[bid].get((topic, partition))
        if log is None:
            return []
        server = self.servers.get(bid)
        p = server.partition(topic, partition) if server is not None and not server.stopped else None
        lock = p.lock if p is not None else threading.RLock()
        with lock:
            limit = log.high_watermark if upto_hw else log.log_end_offset
            batches = log.batches_from(log.log_start_offset)
        out = []
        for base, batch in batches:
            if base >= limit:
                break
            out.extend(r for r in iter_records(batch) if r[0] < limit)
        return out
