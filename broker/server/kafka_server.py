"""KafkaServer: one broker, owning its config, request channel, handler pool, replica manager
(with the Produce, Fetch and DeleteRecords purgatories and the action queue), replica fetchers, scheduler, the
group and transaction coordinators (when the ``coordinator`` package provides them) and, later,
the socket server.

Start-up order: request channel → replica manager → fetcher manager → coordinator → client
quota managers (their ``ThrottledChannelReaper`` threads; the cluster's quotas applied) →
KafkaApis and handler pool → scheduler (``isr-expiration`` every ``replica.lag.time.max.ms / 2``,
``kafka-log-retention`` every ``log.retention.check.interval.ms``, the log memory budget) → log
cleaner (``kafka-log-cleaner-thread-0``, when ``log.cleaner.enable``) →
socket server (if enabled) → registration with the metadata store, which pushes the partition
states (become leader / follower). A restarted broker first truncates every log it kept in
memory to its HW; with ``log.dirs`` the log manager then loads (recovers) the partition
directories it does not hold yet, before the broker registers; ``shutdown`` ends with the log
manager's clean shutdown (flush, checkpoints, ``.kafka_cleanshutdown``).
The broker listens to config records too (``_on_config_change``): topic config and dynamic broker
config changes reach its logs at once (``broker.server.dynamic_config``).

``shutdown()`` emulates a crash as far as clients can tell: the channel closes (in-process
senders of queued requests hear a disconnect), handlers, fetchers and the scheduler stop,
every partition goes offline so delayed produces and fetches complete with
NOT_LEADER_OR_FOLLOWER, the coordinator stops, and only then does the metadata store fence the
broker and elect new leaders. Every thread started here ends before ``shutdown`` returns.

Threads start on the CPUs of ``emulator.cpu.affinity`` (``broker.server.cpu_affinity``: one CPU by
default, as the interpreter lock makes a second one cost more in wake-ups than it gives).

Metrics: ``snapshot()`` gathers each component's own snapshot into one ``BrokerSnapshot`` (the
metrics package reads nothing else of a broker), and ``request_listeners`` (handed to the
request channel at start-up) lets request metrics attach before the broker starts.

Locking: ``_lock`` guards start/stop transitions and ``_pending_coordinator_elections``.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

import structlog

from kafka_emu.broker.server import cpu_affinity
from kafka_emu.broker.apis.api_versions import DefaultApiVersionManager
from kafka_emu.broker.server.client_metrics_manager import ClientMetricsManager, ClientMetricsSnapshot
from kafka_emu.broker.server.config import LISTENER_PORT_REUSED, TRANSACTION_VERSION, KafkaConfig
from kafka_emu.coordinator.share.config import SHARE_VERSION
from kafka_emu.broker.server.replica_manager_coordinator_log import ReplicaManagerCoordinatorLog
from kafka_emu.broker.server.kafka_apis import KafkaApis, RequestHook
from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.log_cleaner import LogCleaner, LogCleanerSnapshot
from kafka_emu.broker.storage.log_manager import MEMORY_CHECK_INTERVAL_MS
from kafka_emu.broker.server.dynamic_config import CLUSTER_DEFAULT, DynamicBrokerConfig
from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC, BrokerInfo, ConfigResourceType, MetadataStore
from kafka_emu.broker.network.socket_server import SocketServer, SocketServerSnapshot, parse_listeners
from kafka_emu.broker.server.partition import Partition
from kafka_emu.broker.server.quota.client_quota_manager import QuotaManagerSnapshot
from kafka_emu.broker.server.quota.quota_factory import QuotaManagers
from kafka_emu.broker.server.replica_fetcher import ReplicaFetcherManager
from kafka_emu.broker.server.replica_manager import ReplicaManager, ReplicaManagerSnapshot
from kafka_emu.broker.network.request_channel import Request, RequestChannel, RequestChannelSnapshot, ResponseHook
from kafka_emu.broker.server.request_handler import HandlerPoolSnapshot, KafkaRequestHandlerPool
from kafka_emu.timer.scheduler import KafkaScheduler
from kafka_emu.broker.server.transaction_verification import TransactionVerifier
from kafka_emu.broker.server.txn_marker_sender import InProcessTxnMarkerSender
from kafka_emu.broker.server.share.persister import InProcessPersister
from kafka_emu.broker.server.share.share_partition_manager import SharePartitionManager, SharePartitionManagerSnapshot
from kafka_emu.coordinator.group.group_coordinator import GroupCoordinator, GroupCoordinatorSnapshot
from kafka_emu.coordinator.share.config import SHARE_GROUP_STATE_TOPIC, ShareCoordinatorConfig
from kafka_emu.coordinator.share.share_coordinator import ShareCoordinator
from kafka_emu.coordinator.transaction import (
    TRANSACTION_STATE_TOPIC, TransactionCoordinator, TransactionCoordinatorSnapshot,
)
from kafka_emu.timer import DelayedOperationPurgatory, SystemTimer, SystemTimerReaper
from kafka_emu.timer.purgatory import PurgatorySnapshot
from kafka_emu.timer.time import Time


_log = structlog.get_logger("broker.kafka_server")


@dataclass(frozen=True, slots=True)
class BrokerSnapshot:
    """What a running broker shows its metrics: one snapshot per component (None: not running)."""

    broker_id: int
    request_channel: RequestChannelSnapshot
    handler_pool: HandlerPoolSnapshot
    socket_server: SocketServerSnapshot | None      # None without listeners (in-process only)
    replica_manager: ReplicaManagerSnapshot
    group_coordinator: GroupCoordinatorSnapshot | None
    purgatories: tuple[PurgatorySnapshot, ...]      # the replica manager's and coordinator's
    log_cleaner: LogCleanerSnapshot | None = None   # None with log.cleaner.enable=false
    transaction_coordinator: TransactionCoordinatorSnapshot | None = None
    client_metrics: ClientMetricsSnapshot | None = None   # KIP-714 telemetry pushed by clients
    quotas: tuple[QuotaManagerSnapshot, ...] = ()   # Fetch, Produce, Request, ControllerMutation
    share_partitions: SharePartitionManagerSnapshot | None = None


class ControlHooks(RequestHook, ResponseHook, Protocol):
    """Test control's two hooks on the request path, handed to ``KafkaApis`` (``on_request``) and
    the ``RequestChannel`` (``on_response``): ``broker.cluster.control.ClusterControl``."""


class KafkaServer:
    def __init__(self, config: KafkaConfig | Mapping[str, Any], metadata: MetadataStore | None = None,
                 time: Time | None = None, logs: dict[tuple[str, int], UnifiedLog] | None = None,
                 host: str = "127.0.0.1", port: int = 0, enable_coordinator: bool = True,
                 control: ControlHooks | None = None) -> None:
        if not isinstance(config, KafkaConfig):
            config = KafkaConfig(config)
            config.log_ignored()
        self.config = config
        self.broker_id: int = self.config["broker.id"]
        self.metadata = metadata if metadata is not None else MetadataStore()
        self.time = time or Time.SYSTEM
        self.logs: dict[tuple[str, int], UnifiedLog] = logs if logs is not None else {}
        self.host = host
        self.port = port
        self.enable_coordinator = enable_coordinator
        self.control = control   # broker.cluster.control.ClusterControl (test control) or None
        self._lock = threading.Lock()
        self.request_channel: RequestChannel | None = None
        self.replica_manager: ReplicaManager | None = None
        self.fetcher_manager: ReplicaFetcherManager | None = None
        self.apis: KafkaApis | None = None
        self.handler_pool: KafkaRequestHandlerPool | None = None
        self.scheduler: KafkaScheduler | None = None
        self.log_cleaner: LogCleaner | None = None
        self.group_coordinator: GroupCoordinator | None = None
        self.coordinator_log: ReplicaManagerCoordinatorLog | None = None
        self.transaction_coordinator: TransactionCoordinator | None = None
        self.transaction_log: ReplicaManagerCoordinatorLog | None = None
        self.client_metrics_manager: ClientMetricsManager | None = None
        self.share_coordinator: ShareCoordinator | None = None
        self.share_state_log: ReplicaManagerCoordinatorLog | None = None
        self.share_partition_manager: SharePartitionManager | None = None
        self._share_lock_timer: SystemTimerReaper | None = None
        self.socket_server: SocketServer | None = None  # started in startup() when listening
        self.quotas: QuotaManagers | None = None        # the client quota managers, from startup()
        self.broker_info: BrokerInfo | None = None
        # (topic, partition) -> (leader epoch, LEO to reach) of a coordinator partition just led
        self._pending_coordinator_elections: dict[tuple[str, int], tuple[int, int]] = {}
        self._handler_idents: set[int] = set()
        # CPUs of this broker's threads (``broker.server.cpu_affinity``); applied where threads start
        self.cpus = cpu_affinity.resolve(self.config[cpu_affinity.CONFIG_KEY])
        self.started = False
        self.stopped = False
        self.request_listeners: list[Callable[[Request], None]] = []

    # ------------------------------------------------------------------ start
    def startup(self) -> "KafkaServer":
        with cpu_affinity.pinned(self.cpus):   # every thread started below inherits the CPUs
            return self._startup()

    def _startup(self) -> "KafkaServer":
        with self._lock:
            if self.started:
                return self
            cfg = self.config
            for log in self.logs.values():  # restart: drop what was never committed locally
                log.truncate_to(log.high_watermark)
            self.request_channel = RequestChannel(cfg["queued.max.requests"], self.broker_id,
                                                  self.request_listeners)
            self.request_channel.control = self.control
            rm = self.replica_manager = ReplicaManager(cfg, self.metadata, self.time, self.logs)
            self.metadata.register_config_listener(self.broker_id, self._on_config_change)
            self._on_config_change(ConfigResourceType.BROKER, CLUSTER_DEFAULT)   # dynamic configs set before
            rm.log_manager.load_logs(self.metadata)   # with log.dirs: recover this broker's logs
            rm.on_all_log_dirs_offline = self._halt
            rm.start_log_dir_failure_handler()
            rm.action_queue.on_add = self._wake_handler_if_needed
            self.fetcher_manager = ReplicaFetcherManager(self.broker_id, rm, self.metadata, cfg)
            rm.fetcher_manager = self.fetcher_manager
            if self.enable_coordinator:
                self.coordinator_log = ReplicaManagerCoordinatorLog(rm)
                self.group_coordinator = GroupCoordinator.create(self.broker_id, cfg.as_dict(),
                                                                 self.coordinator_log, self.time,
                                                                 image=self.metadata,
                                                                 group_config=self.metadata.group_configs)
                self.group_coordinator.startup()
                rm.group_coordinator = self.group_coordinator
                self.transaction_log = ReplicaManagerCoordinatorLog(rm, TRANSACTION_STATE_TOPIC)
                self.transaction_coordinator = TransactionCoordinator.create(
                    self.broker_id, cfg.as_dict(), self.transaction_log,
                    InProcessTxnMarkerSender(self.broker_id, self.metadata), self.metadata.next_producer_id,
                    self.time)
                verifier = TransactionVerifier(self.metadata, cfg["transaction.state.log.num.partitions"],
                                               cfg["request.timeout.ms"], cfg["add.partitions.to.txn.retry.backoff.ms"],
                                               cfg["add.partitions.to.txn.retry.backoff.max.ms"])
                rm.verify_transaction, rm.add_to_transaction = verifier, verifier.add
                rm.leadership_listeners.append(self._on_leadership_change)
                rm.hw_watchers.append(self._on_hw_moved)
                self._start_share_groups(rm)
            self.client_metrics_manager = ClientMetricsManager(self.metadata, self.time, cfg["telemetry.max.bytes"])
            self.quotas = QuotaManagers.instantiate(cfg, self.time, self.broker_id)
            self.quotas.start()
            self.metadata.register_quota_listener(self.broker_id, self.quotas.apply)   # the quotas set so far too
            self.apis = KafkaApis(cfg, self.request_channel, self.metadata, rm, self.time,
                                  self.group_coordinator, self.control,
                                  transaction_coordinator=self.transaction_coordinator,
                                  client_metrics_manager=self.client_metrics_manager, quotas=self.quotas,
                                  share_coordinator=self.share_coordinator,
                                  share_partition_manager=self.share_partition_manager)
            self.request_channel.inline_handler = self.apis.handle
            self.handler_pool = KafkaRequestHandlerPool(self.broker_id, self.request_channel, self.apis,
                                                        rm.action_queue, cfg["num.io.threads"])
            self.handler_pool.start()
            self._handler_idents = {h.ident for h in self.handler_pool.handlers if h.ident}
            self.scheduler = KafkaScheduler(self.broker_id, self.time)
            self.scheduler.schedule("isr-expiration", rm.maybe_shrink_isr,
                                    max(1, cfg["replica.lag.time.max.ms"] // 2))
            self.scheduler.schedule("kafka-log-retention", rm.log_manager.cleanup_logs,
                                    cfg["log.retention.check.interval.ms"], cfg["log.initial.task.delay.ms"])
            self.scheduler.schedule("emulator-log-memory-budget", rm.log_manager.enforce_memory_budget,
                                    MEMORY_CHECK_INTERVAL_MS)
            self.scheduler.schedule("PeriodicProducerExpirationCheck", rm.log_manager.remove_expired_producers,
                                    cfg["producer.id.expiration.check.interval.ms"])
            rm.log_manager.schedule_tasks(self.scheduler)
            if self.transaction_coordinator is not None:
                # transaction-abort and transactionalId-expiration run on this scheduler
                self.transaction_coordinator.startup(self.scheduler)
            self.scheduler.start()
            if cfg["log.cleaner.enable"]:
                self.log_cleaner = LogCleaner(rm.log_manager, cfg["log.cleaner.backoff.ms"], self.time,
                                              self.broker_id, cfg["log.cleaner.dedupe.buffer.size"],
                                              cfg["log.cleaner.io.buffer.load.factor"])
                rm.log_manager.cleaner = self.log_cleaner
                self.log_cleaner.start()
            # ---- socket server: start listeners here when configured ----
            try:
                self._start_socket_server()
            except BaseException:
                # as Kafka's KafkaServer.startup: a failed start (a port in use) stops what it started
                self._stop_threads()
                raise
            # ---- end socket server ----
            endpoints = {} if self.socket_server is None else {
                ep.listener_name: self.socket_server.advertised_endpoint(ep.listener_name)
                for ep in self.socket_server.endpoints}
            self.broker_info = BrokerInfo(self.broker_id, self.host, self.port,
                                          cfg.get("broker.rack"), endpoints, self.request_channel,
                                          transaction_coordinator=self.transaction_coordinator,
                                          share_coordinator=self.share_coordinator,
                                          share_partition_manager=self.share_partition_manager)
            self.started = True
        self.metadata.broker_started(self.broker_info, self._on_metadata)
        _log.info("broker_started", broker_id=self.broker_id)
        return self

    def _start_share_groups(self, rm: ReplicaManager) -> None:
        """KIP-932: the share coordinator over ``__share_group_state`` and the share partitions
        this broker leads, with their ``ShareFetch`` purgatory and the acquisition locks' timer
        (Kafka's ``share-group-lock-timeout`` SystemTimer and its reaper)."""
        cfg = self.config
        self.share_state_log = ReplicaManagerCoordinatorLog(rm, SHARE_GROUP_STATE_TOPIC)
        self.share_coordinator = ShareCoordinator(self.broker_id, ShareCoordinatorConfig.from_mapping(cfg.as_dict()),
                                                  self.share_state_log, self.time)
        self.share_coordinator.startup()
        self._share_lock_timer = SystemTimerReaper(f"share-group-lock-timeout-reaper-{self.broker_id}",
                                                   SystemTimer("share-group-lock-timeout", time=self.time))
        purgatory = DelayedOperationPurgatory("ShareFetch", broker_id=self.broker_id, time=self.time,
                                              purge_interval=cfg["share.fetch.purgatory.purge.interval.requests"])
        persister = InProcessPersister(self.broker_id, cfg, self.metadata, self._share_lock_timer, self.time)
        self.share_partition_manager = SharePartitionManager(self.broker_id, cfg, rm, self.metadata, self.time,
                                                             self._share_lock_timer, persister, purgatory)
        rm.share_fetch_purgatory = purgatory
        rm.leadership_listeners.append(self.share_partition_manager.on_leadership_change)

    # ---- socket server ----
    def _start_socket_server(self) -> None:
        """Start the network layer when ``listeners`` is set (or a port was given).

        Binds synchronously, so the advertised host/port registered with the metadata store
        right after this are the real ones (an ephemeral port 0 is resolved here).
        """
        listeners = self.config["listeners"]
        if not listeners and not self.port:
            return None
        cfg = self.config
        if not listeners:
            cfg = cfg.with_overrides(listeners=f"PLAINTEXT://{self.host}:{self.port}")
        api_versions = DefaultApiVersionManager(cfg.kafka_release, cfg[TRANSACTION_VERSION], cfg[SHARE_VERSION])
        server = SocketServer(cfg, self.request_channel, self.broker_id, api_versions=api_versions,
                              scram_credentials=self.metadata.scram_credential)
        try:
            server.startup()
        except OSError:
            if not cfg[LISTENER_PORT_REUSED]:
                raise
            # a port this broker had before its restart is taken: take new ephemeral ones
            cfg = cfg.with_overrides(listeners=",".join(f"{name}://{host}:0" for name, host, _ in
                                                        parse_listeners(cfg["listeners"])))
            server = SocketServer(cfg, self.request_channel, self.broker_id, api_versions=api_versions,
                                  scram_credentials=self.metadata.scram_credential)
            server.startup()
        self.socket_server = server
        self.host, self.port = server.advertised_endpoint()
        return None

    @property
    def bootstrap_server(self) -> str | None:
        """``host:port`` of this broker's first listener (None without a socket server)."""
        return self.socket_server.bootstrap_server if self.socket_server is not None else None
    # ---- end socket server ----

    def _wake_handler_if_needed(self) -> None:
        if threading.get_ident() not in self._handler_idents and self.request_channel is not None:
            self.request_channel.wakeup()

    def _on_metadata(self, states: list, removed: list) -> None:
        rm = self.replica_manager
        if rm is None or self.stopped:
            return
        with cpu_affinity.pinned(self.cpus):   # may start replica fetcher threads
            rm.apply_partition_states(states, removed)
            if self.fetcher_manager is not None:
                self.fetcher_manager.shutdown_idle_fetchers()
        if removed and self.group_coordinator is not None:
            # Kafka's ``GroupCoordinator.onPartitionsDeleted``: the deleted partitions' committed
            # offsets go from every group this coordinator owns, with tombstones.
            self.group_coordinator.on_partitions_deleted(list(removed))

    def _on_config_change(self, resource_type: int, resource_name: str) -> None:
        """A config record changed: the logs of this broker apply it at once (Kafka's
        ``DynamicConfigPublisher``: topic configs to ``LogManager.updateTopicConfig``, this broker's
        or the cluster-wide dynamic configs to ``DynamicBrokerConfig``). Group configs and
        CLIENT_METRICS subscriptions need no push: the group coordinator reads the former on each
        heartbeat, the ``ClientMetricsManager`` the latter when it next needs them."""
        rm = self.replica_manager
        if rm is None or self.stopped:
            return
        if resource_type == ConfigResourceType.TOPIC:
            rm.update_log_configs(topic=resource_name)
        elif resource_type == ConfigResourceType.BROKER and resource_name in (CLUSTER_DEFAULT, str(self.broker_id)):
            rm.update_log_configs(config=DynamicBrokerConfig.of(self.config, self.metadata).current())

    # ------------------------------------------------------------------ coordinator bridge
    def _on_leadership_change(self, topic: str, partition: int, is_leader: bool, epoch: int) -> None:
        if topic not in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC) \
                or self.group_coordinator is None:
            return
        tp = (topic, partition)
        if is_leader:
            p = self.replica_manager.get_partition(tp)
            target = p.log.log_end_offset if p is not None else 0
            with self._lock:
                self._pending_coordinator_elections[tp] = (epoch, target)
            if topic == OFFSETS_TOPIC:
                self.group_coordinator.on_loading(partition, epoch)
            elif topic == TRANSACTION_STATE_TOPIC and self.transaction_coordinator is not None:
                self.transaction_coordinator.on_loading(partition, epoch)
            elif topic == SHARE_GROUP_STATE_TOPIC and self.share_coordinator is not None:
                self.share_coordinator.on_loading(partition, epoch)
            self._on_hw_moved(tp)
            return
        with self._lock:
            self._pending_coordinator_elections.pop(tp, None)
        if topic == OFFSETS_TOPIC:
            self.group_coordinator.on_resigned(partition, epoch)
        elif topic == SHARE_GROUP_STATE_TOPIC:
            if self.share_coordinator is not None:
                self.share_coordinator.on_resigned(partition, epoch)
        elif self.transaction_coordinator is not None:
            self.transaction_coordinator.on_resigned(partition)

    def _on_hw_moved(self, tp: tuple[str, int]) -> None:
        """Elect the coordinator once the new leader's HW covers everything it had: reads are
        bounded by the HW, which trails the LEO right after a leader change."""
        pending = self._pending_coordinator_elections.get(tp)
        if pending is None:
            return
        epoch, target = pending
        p = self.replica_manager.get_partition(tp)
        if p is None or not p.is_leader or p.leader_epoch != epoch or p.log.high_watermark < target:
            return
        with self._lock:
            if self._pending_coordinator_elections.get(tp) != pending:
                return
            del self._pending_coordinator_elections[tp]
        if tp[0] == OFFSETS_TOPIC:
            self.group_coordinator.on_elected(tp[1], epoch)
        elif tp[0] == SHARE_GROUP_STATE_TOPIC:
            if self.share_coordinator is not None:
                self.share_coordinator.on_elected(tp[1], epoch)
        elif self.transaction_coordinator is not None:
            self.transaction_coordinator.on_elected(tp[1], epoch)

    # ------------------------------------------------------------------ metrics
    def snapshot(self) -> BrokerSnapshot | None:
        """The components' snapshots; None unless the broker is running."""
        with self._lock:
            if not self.started or self.stopped:
                return None
            channel, pool, rm = self.request_channel, self.handler_pool, self.replica_manager
            server, coordinator, cleaner = self.socket_server, self.group_coordinator, self.log_cleaner
            txn_coordinator, quotas = self.transaction_coordinator, self.quotas
            client_metrics = self.client_metrics_manager
            share_partitions = self.share_partition_manager
        assert channel is not None and pool is not None and rm is not None  # set by startup
        rm_snapshot = rm.snapshot()
        gc_snapshot = coordinator.snapshot() if coordinator is not None else None
        share_snapshot = share_partitions.snapshot() if share_partitions is not None else None
        purgatories = rm_snapshot.purgatories + (gc_snapshot.purgatories if gc_snapshot else ()) \
            + ((share_snapshot.purgatory,) if share_snapshot is not None else ())
        return BrokerSnapshot(self.broker_id, channel.snapshot(), pool.snapshot(),
                              server.snapshot() if server is not None else None,
                              rm_snapshot, gc_snapshot, purgatories,
                              cleaner.snapshot() if cleaner is not None else None,
                              txn_coordinator.snapshot() if txn_coordinator is not None else None,
                              client_metrics.snapshot() if client_metrics is not None else None,
                              quotas.snapshot() if quotas is not None else (),
                              share_snapshot)

    # ------------------------------------------------------------------ stop
    def _halt(self) -> None:
        """Every log directory failed: Kafka halts the broker; this one stops (as a crash: its
        leaderships move), on a thread of its own, and the process goes on."""
        threading.Thread(target=self.shutdown, name=f"broker-{self.broker_id}-halt", daemon=True).start()

    def shutdown(self, fence: bool = True) -> None:
        """Stop every thread of this broker. ``fence=False`` (whole-cluster close) skips the
        election of new leaders for its partitions."""
        with self._lock:
            if not self.started or self.stopped:
                return
            self.stopped = True
        _log.info("broker_stopping", broker_id=self.broker_id)
        if self.socket_server is not None:
            try:
                self.socket_server.shutdown()
            except Exception:
                _log.exception("socket_server_shutdown_failed", broker_id=self.broker_id)
        self._stop_threads()
        self.metadata.unregister_listener(self.broker_id)
        self.metadata.broker_stopped(self.broker_id, elect=fence)
        _log.info("broker_stopped", broker_id=self.broker_id)

    def _stop_threads(self) -> None:
        """Stop the threads ``_startup`` starts before the socket server (shutdown, or a failed start)."""
        self.request_channel.close()
        self.handler_pool.shutdown()
        self.request_channel.close()  # answer anything queued while the handlers stopped
        self.fetcher_manager.shutdown()
        if self.quotas is not None:
            self.quotas.shutdown()
        self.scheduler.shutdown()
        if self.log_cleaner is not None:
            self.log_cleaner.shutdown()
        self.replica_manager.shutdown()
        self.replica_manager.log_manager.shutdown()   # with log.dirs: flush, checkpoints, clean marker
        if self.group_coordinator is not None:
            try:
                self.group_coordinator.shutdown()
            except Exception:
                _log.exception("coordinator_shutdown_failed", broker_id=self.broker_id)
        if self.transaction_coordinator is not None:
            try:
                self.transaction_coordinator.shutdown()
            except Exception:
                _log.exception("transaction_coordinator_shutdown_failed", broker_id=self.broker_id)
        if self.share_partition_manager is not None:
            try:
                self.share_partition_manager.shutdown()
                self.share_partition_manager.persister.close()   # type: ignore[attr-defined]
                self.share_coordinator.shutdown()   # type: ignore[union-attr]
                self._share_lock_timer.close()   # type: ignore[union-attr]
            except Exception:
                _log.exception("share_groups_shutdown_failed", broker_id=self.broker_id)

    # convenience
    def partition(self, topic: str, partition: int) -> Partition | None:
        return self.replica_manager.get_partition((topic, partition))

