"""MetadataStore: the small shared cluster metadata of an in-process cluster (the "controller").

It holds live brokers and their endpoints, topics with stable non-zero topic ids, and per
partition the leader, leader epoch, partition epoch, assigned replicas and ISR. It plays the
KRaft controller's part: leader election from the ISR with a leader-epoch bump when a broker
stops, ISR changes from leaders (``alter_isr``, Kafka's AlterPartition) accepted only for the
current leader epoch, ElectLeaders (``elect_leaders``), partition reassignments
(``alter_partition_reassignments``, completed by ``complete_reassignments`` once the new
replicas are in the ISR), and pushes of partition states to the live brokers (a broker whose
replica a state drops gets it too, and stops that replica).

It also owns what is cluster-wide rather than per broker: the producer-id counter (Kafka's
controller hands out producer-id blocks), the creation of ``__consumer_offsets``, new partitions
of a topic (``create_partitions``, Kafka's ``ReplicationControlManager.createPartitions``) and the
config records: topic configs, dynamic broker configs and group configs (``alter_topic_configs``,
``alter_broker_configs``, ``alter_group_configs``, Kafka's ``ConfigurationControlManager``), each change announced to the
live brokers' config listeners so they apply it at once; and the client quotas
(``alter_client_quotas``/``describe_client_quotas``, Kafka's ``ClientQuotaControlManager``:
``client_quota_control``), each entity's changed keys pushed to the brokers' quota listeners.

How a partition's state changes (placement, elections, fencing, reassignments) is
``broker.server.partition_state``'s: this store applies those rules under its locks, keeps the
result and publishes it.

Locks: ``_lock`` guards the maps (topics, brokers, config records, listeners), the producer-id
counter and ``reassignments_completable`` (held briefly, never while calling out). ``_controller_lock``
serialises controller operations (topic creation and deletion, broker stop/start, elections,
client quota changes, which it also guards) including the pushes to brokers, so brokers see changes in order, as from a single-threaded
controller. Lock order: controller lock → partition locks → ``_lock``; a partition (holding its
lock) may call ``alter_isr`` (takes ``_lock`` only), which therefore only notes a reassignment
it made completable; the ReplicaManager completes it after the fetch, with no lock held.

Security records (Kafka's ``ScramControlManager`` and ``AclControlManager``): the SCRAM
credentials (``alter_scram_credentials``; the authenticators read ``scram_credential``) and the
ACLs (``alter_acls``; every broker's authorizer reads ``acls``, an immutable tuple swapped whole
on change), both persisted with the rest.

Persistence (with ``log.dirs``): the publish points, ``_push`` (partition states: topics,
partitions, elections), ``_announce_config`` (topic, dynamic broker and group configs) and
``alter_client_quotas`` (client quotas), and the two
changes that publish nothing (``alter_isr``, a new producer-id block) call ``_changed``, which
calls ``on_change``; ``broker.storage.log_dirs.MetadataSnapshotFile`` uses it to rewrite the state
(``state_snapshot``) atomically. ``restore_state`` takes it back at start-up. A new mutation
persists by going through one of the publish points.

Differences from Kafka on purpose: ISR changes are applied synchronously (no in-flight
AlterPartition state); a stopped broker is fenced at once (removed from every ISR unless it is
the last member, and loses its leaderships); ``unclean.leader.election.enable`` is not acted on
(``partition_state`` lists the placement and election differences); the persisted controller
state is a JSON snapshot rewritten on each change, not the KRaft ``__cluster_metadata`` log.
"""
from __future__ import annotations

import enum
import threading
import uuid
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import structlog

from kafka_emu.broker.server.client_quota_control import AlterResult, ClientQuotaControl, QuotaOps
from kafka_emu.broker.server.partition_state import (
    PartitionState,
    complete_reassignment,
    elect,
    fence,
    offline_replica,
    place_replicas,
    start_reassignment,
    unfence,
    with_leader,
)
from kafka_emu.broker.security.acl import AclBinding
from kafka_emu.broker.security.scram import ScramCredential, ScramMechanism
from kafka_emu.broker.server.quota.quota_config import ClientQuotaEntity
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.common.kafka_releases import KafkaRelease
from kafka_emu.broker.server.dynamic_config import CLUSTER_DEFAULT

if TYPE_CHECKING:
    from kafka_emu.broker.network.request_channel import RequestChannel
    from kafka_emu.broker.server.share.share_partition_manager import SharePartitionManager
    from kafka_emu.coordinator.share.share_coordinator import ShareCoordinator
    from kafka_emu.coordinator.transaction import TransactionCoordinator

_log = structlog.get_logger("broker.metadata")

OFFSETS_TOPIC = "__consumer_offsets"
ELR_FEATURE = "eligible.leader.replicas.version"
FIRST_PRODUCER_ID = 1000
PRODUCER_ID_BLOCK_SIZE = 1000   # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


class ConfigResourceType(enum.IntEnum):
    """Kafka's ``ConfigResource.Type`` ids; the store keeps TOPIC and BROKER config records."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32



@dataclass
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionState] = field(default_factory=dict)
    configs: dict[str, Any] = field(default_factory=dict)
    internal: bool = False


@dataclass
class BrokerInfo:
    broker_id: int
    host: str = "127.0.0.1"
    port: int = 0
    rack: str | None = None
    # listener name -> advertised (host, port); ``host``/``port`` are the first listener's
    endpoints: dict[str, tuple[str, int]] = field(default_factory=dict)
    request_channel: RequestChannel | None = None   # the broker's, for in-process requests
    live: bool = True
    # the broker's transaction coordinator, for in-process KIP-890 verification (broker.txn_marker_sender)
    transaction_coordinator: TransactionCoordinator | None = None
    # the broker's share coordinator and share partitions, for the share-group admin APIs
    # (DescribeShareGroupOffsets and friends, DeleteGroups) in process
    share_coordinator: ShareCoordinator | None = None
    share_partition_manager: SharePartitionManager | None = None


PartitionListener = Callable[[list[PartitionState], list[tuple[str, int]]], None]
# a client quota entity's changed keys (key -> new value, None when removed)
QuotaListener = Callable[[ClientQuotaEntity, dict[str, "float | None"]], None]
# (resource type, resource name): a topic's configs or a BROKER resource's dynamic configs changed
ConfigListener = Callable[[int, str], None]
# current configs of a resource -> new configs (raises KafkaError when refused)
ConfigAlteration = Callable[[dict[str, Any]], dict[str, Any]]
ScramKey = tuple[str, ScramMechanism]   # (user, mechanism)


class MetadataStore:
    def __init__(self, cluster_id: str | None = None) -> None:
        self.cluster_id = cluster_id or uuid.uuid4().hex[:22]
        self._lock = threading.Lock()
        self._controller_lock = threading.RLock()
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.topics_by_id: dict[uuid.UUID, str] = {}
        # bumped (under _lock) when a topic is created or deleted or gains partitions: the group
        # coordinator's cue to re-resolve subscriptions (``coordinator.metadata_image``)
        self.topics_version = 0
        # broker id -> callback(changed states, removed partitions); set by KafkaServer
        self._listeners: dict[int, PartitionListener] = {}
        self._config_listeners: dict[int, ConfigListener] = {}
        self._quota_listeners: dict[int, QuotaListener] = {}
        self.client_quotas = ClientQuotaControl()   # guarded by the controller lock
        # BROKER resource name ("" cluster-wide, "<id>" one broker) -> typed dynamic configs
        self._broker_configs: dict[str, dict[str, Any]] = {}
        # GROUP resource name -> typed overrides (KIP-848's group configs); a group's dict is
        # replaced, never changed, so the coordinator reads it without the lock
        self._group_configs: dict[str, dict[str, Any]] = {}
        # CLIENT_METRICS resource name -> its configs (KIP-714 subscriptions)
        self._client_metrics: dict[str, dict[str, Any]] = {}
        self._client_metrics_version = 0
        self._next_assignment_start = 0
        # the metadata log this store stands for: records committed (each publish is one), and the
        # quorum's leader and epoch as DescribeQuorum reports them (quorum_state)
        self._metadata_records = 0
        self._quorum_leader = -1
        self._quorum_epoch = 0
        self._next_producer_id = FIRST_PRODUCER_ID
        # reassignments whose adding replicas all joined the ISR (set by alter_isr, which runs
        # under a partition lock); completed by complete_reassignments, called lock-free
        self.reassignments_completable: set[tuple[str, int]] = set()
        self._producer_id_block_end = FIRST_PRODUCER_ID
        self._scram: dict[ScramKey, ScramCredential] = {}
        self.acls: tuple[AclBinding, ...] = ()
        # called after every change (the persistence of ``log.dirs``); never with a lock of this store held
        self.on_change: Callable[["MetadataStore"], None] | None = None

    # ------------------------------------------------------------------ brokers
    def register_broker(self, info: BrokerInfo, listener: PartitionListener | None = None) -> None:
        with self._lock:
            self.brokers[info.broker_id] = info
            if listener is not None:
                self._listeners[info.broker_id] = listener

    def live_brokers(self) -> list[BrokerInfo]:
        with self._lock:
            return sorted((b for b in self.brokers.values() if b.live), key=lambda b: b.broker_id)

    def live_broker_ids(self) -> list[int]:
        return [b.broker_id for b in self.live_brokers()]

    def _live_ids_locked(self) -> list[int]:
        """The live brokers' ids in order (``_lock`` held)."""
        return sorted(b.broker_id for b in self.brokers.values() if b.live)

    def broker(self, broker_id: int) -> BrokerInfo | None:
        return self.brokers.get(broker_id)

    def is_live(self, broker_id: int) -> bool:
        b = self.brokers.get(broker_id)
        return b is not None and b.live

    @property
    def controller_id(self) -> int:
        live = self.live_broker_ids()
        return live[0] if live else -1

    # ------------------------------------------------------------------ producer ids
    def next_producer_id(self) -> int:
        """A producer id unique in the cluster (Kafka's controller hands out blocks of them)."""
        with self._lock:
            producer_id = self._next_producer_id
            self._next_producer_id += 1
            new_block = producer_id >= self._producer_id_block_end
            if new_block:
                self._producer_id_block_end = producer_id + PRODUCER_ID_BLOCK_SIZE
        if new_block:
            self._changed()
        return producer_id

    # ------------------------------------------------------------------ topics
    def topic(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.topics_by_id.get(topic_id)

    def topic_id(self, name: str) -> uuid.UUID | None:
        t = self.topics.get(name)
        return t.topic_id if t else None

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        t = self.topics.get(topic)
        return t.partitions.get(partition) if t else None

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, Any] | None = None, internal: bool = False,
                     manual: Sequence[tuple[int, Sequence[int]]] | None = None,
                     validate_only: bool = False) -> TopicInfo:
        """Create topic ``name``: replicas round robin over the live brokers, the first replica
        leading; or, with ``manual`` ((partition index, replicas) pairs, Kafka's
        ``CreatableReplicaAssignment``), those replicas, validated as Kafka's
        ``ReplicationControlManager.createTopic`` does (KafkaError INVALID_REPLICA_ASSIGNMENT) and
        led by the first live one; ``partitions``/``replication_factor`` are then ignored. With
        ``validate_only`` the topic is built and returned but not stored."""
        with self._controller_lock:
            with self._lock:
                if name in self.topics:
                    raise ValueError(f"topic {name!r} already exists")
                live = self._live_ids_locked()
                if manual:
                    placed = self._manual_topic_assignment(manual)
                else:
                    if partitions <= 0:
                        raise ValueError("partitions must be positive")
                    if replication_factor <= 0 or replication_factor > len(live):
                        raise ValueError(f"replication factor {replication_factor} larger than "
                                         f"available brokers {len(live)}")
                    placed = place_replicas(live, self._next_assignment_start, 0, partitions, replication_factor)
                    if not validate_only:
                        self._next_assignment_start += 1
                topic_id = uuid.uuid4()
                while topic_id.int == 0:
                    topic_id = uuid.uuid4()
                info = TopicInfo(name, topic_id, configs=dict(configs or {}), internal=internal)
                for p, replicas in enumerate(placed):
                    isr = tuple(r for r in replicas if r in live)
                    info.partitions[p] = PartitionState(name, p, topic_id, isr[0], 0, 0, replicas, isr)
                if validate_only:
                    return info
                self.topics[name] = info
                self.topics_by_id[topic_id] = name
                self.topics_version += 1
                states = list(info.partitions.values())
            _log.info("topic_created", topic=name, partitions=len(placed),
                      replication_factor=len(placed[0]), topic_id=str(topic_id))
            self._push(states, [])
            return info

    def _manual_topic_assignment(self, manual: Sequence[tuple[int, Sequence[int]]]) -> list[tuple[int, ...]]:
        """The replicas of each partition of a new topic from its manual assignments, in
        partition order (``_lock`` held): every assignment valid and of the first one's size, no
        partition twice, the indexes 0..n-1."""
        by_partition: dict[int, tuple[int, ...]] = {}
        rf: int | None = None
        for partition, replicas in manual:
            if partition in by_partition:
                raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                                 f"Found multiple manual partition assignments for partition {partition}")
            by_partition[partition] = self._manual_assignment(list(replicas), rf, partition)
            rf = len(replicas)
        if sorted(by_partition) != list(range(len(by_partition))):
            raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                             "partitions should be a consecutive 0-based integer sequence")
        return [by_partition[p] for p in range(len(by_partition))]

    def ensure_offsets_topic(self, partitions: int, replication_factor: int) -> bool:
        """Create ``__consumer_offsets`` unless it exists (Kafka creates it on the first
        FindCoordinator); True when it exists afterwards, False while no broker is live."""
        return self.ensure_internal_topic(OFFSETS_TOPIC, partitions, replication_factor,
                                          {"cleanup.policy": "compact"})

    def ensure_internal_topic(self, name: str, partitions: int, replication_factor: int,
                              configs: dict[str, Any]) -> bool:
        """Create the internal topic ``name`` unless it exists (``__consumer_offsets`` and
        ``__transaction_state`` are created on the first FindCoordinator for them); True when it
        exists afterwards, False while no broker is live.

        Difference from Kafka on purpose: the replication factor is capped at the number of live
        brokers (Kafka answers COORDINATOR_NOT_AVAILABLE until enough brokers are up), so a
        one-broker cluster works with the default replication factor 3; a ``min.insync.replicas``
        in ``configs`` is capped at that replication factor too.
        """
        if name in self.topics:
            return True
        with self._controller_lock:
            if name in self.topics:
                return True
            live = len(self.live_broker_ids())
            if live == 0:
                return False
            rf = min(replication_factor, live)
            configs = dict(configs)
            if "min.insync.replicas" in configs:
                configs["min.insync.replicas"] = min(int(configs["min.insync.replicas"]), rf)
            self.create_topic(name, partitions, rf, configs=configs, internal=True)
            return True

    def delete_topic(self, name: str) -> bool:
        with self._controller_lock:
            with self._lock:
                info = self.topics.pop(name, None)
                if info is None:
                    return False
                self.topics_by_id.pop(info.topic_id, None)
                self.topics_version += 1
            self._push([], [(name, p) for p in info.partitions])
            _log.info("topic_deleted", topic=name)
            return True

    def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None,
                          validate_only: bool = False,
                          apply_partition_change_quota: Callable[[int], None] | None = None) -> list[PartitionState]:
        """Grow topic ``name`` to ``count`` partitions (Kafka's
        ``ReplicationControlManager.createPartitions``); the new partitions' states (not stored
        when ``validate_only``). ``assignments``: the replicas of each new partition, else the
        placement continues the topic's stripe. ``apply_partition_change_quota`` is called with
        the number of new partitions once the request is valid (the controller mutation quota:
        it raises to refuse them). ``KafkaError`` with Kafka's code and message when refused;
        nothing changes then."""
        with self._controller_lock:
            with self._lock:
                info = self.topics.get(name)
                if info is None or not info.partitions:
                    raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
                current = len(info.partitions)
                if count == current:
                    raise KafkaError(Errors.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
                if count < current:
                    raise KafkaError(Errors.INVALID_PARTITIONS,
                                     f"The topic {name} currently has {current} partition(s); {count} "
                                     f"would not be an increase.")
                additional = count - current
                if assignments is not None and len(assignments) != additional:
                    raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                                     f"Attempted to add {additional} additional partition(s), but only "
                                     f"{len(assignments)} assignment(s) were specified.")
                if apply_partition_change_quota is not None:
                    apply_partition_change_quota(additional)
                rf = len(info.partitions[0].replicas)
                live = self._live_ids_locked()
                if assignments is not None:
                    placed = [self._manual_assignment(list(a), rf, current + i) for i, a in enumerate(assignments)]
                else:
                    if not live:
                        raise KafkaError(Errors.INVALID_REPLICATION_FACTOR, "All brokers are currently fenced.")
                    if rf > len(live):
                        raise KafkaError(Errors.INVALID_REPLICATION_FACTOR,
                                         f"The target replication factor of {rf} cannot be reached because "
                                         f"only {len(live)} broker(s) are registered.")
                    first = info.partitions[0].replicas[0]
                    start = live.index(first) if first in live else self._next_assignment_start
                    placed = place_replicas(live, start, current, additional, rf)
                states = []
                for p, replicas in enumerate(placed, start=current):
                    isr = tuple(r for r in replicas if r in live)
                    states.append(PartitionState(name, p, info.topic_id, isr[0], 0, 0, replicas, isr))
                if validate_only:
                    return states
                # a new dict, swapped in whole: readers iterate partitions without the lock
                info.partitions = {**info.partitions, **{st.partition: st for st in states}}
                self.topics_version += 1
            _log.info("partitions_created", topic=name, partitions=count, added=additional)
            self._push(states, [])
            return states

    def _manual_assignment(self, replicas: list[int], rf: int | None, partition: int) -> tuple[int, ...]:
        """Kafka's ``validateManualPartitionAssignment`` and its check that a live broker is among
        the replicas (``_lock`` held); ``rf`` None: the first partition, any size."""
        if not replicas:
            raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                             "The manual partition assignment includes an empty replica list.")
        previous = None
        for broker_id in sorted(replicas):
            if broker_id not in self.brokers:
                raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes broker {broker_id}, but no such "
                                 f"broker is registered.")
            if broker_id == previous:
                raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes the broker {previous} more than once.")
            previous = broker_id
        if rf is not None and len(replicas) != rf:
            raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                             f"The manual partition assignment includes a partition with {len(replicas)} "
                             f"replica(s), but this is not consistent with previous partitions, which have "
                             f"{rf} replica(s).")
        if not any(self.brokers[r].live for r in replicas):
            raise KafkaError(Errors.INVALID_REPLICA_ASSIGNMENT,
                             f"All brokers specified in the manual partition assignment for partition "
                             f"{partition} are fenced or in controlled shutdown.")
        return tuple(replicas)

    # ------------------------------------------------------------------ config records
    def alter_topic_configs(self, name: str, alter: ConfigAlteration, validate_only: bool = False) -> None:
        """Kafka's ``ConfigurationControlManager`` for a TOPIC resource: ``alter`` maps the topic's
        current overrides to the new ones, validating them (``KafkaError``, e.g. INVALID_CONFIG);
        then the topic must exist (UNKNOWN_TOPIC_OR_PARTITION), as Kafka validates before its
        existence check. Unless ``validate_only`` the new overrides replace the old and every live
        broker hears of it. Runs under the controller lock, so alterations never interleave."""
        with self._controller_lock:
            info = self.topics.get(name)
            configs = alter(dict(info.configs) if info is not None else {})
            if info is None:
                raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            if validate_only:
                return
            with self._lock:
                info.configs = configs
            _log.info("topic_configs_altered", topic=name, configs=sorted(configs))
            self._announce_config(ConfigResourceType.TOPIC, name)

    def broker_configs(self, resource_name: str) -> dict[str, Any]:
        """A copy of the dynamic configs of BROKER resource ``resource_name`` ("" cluster-wide)."""
        with self._lock:
            return dict(self._broker_configs.get(resource_name, {}))

    def broker_config_resources(self) -> list[str]:
        """The BROKER resources that have dynamic configs ("" first)."""
        with self._lock:
            return sorted(self._broker_configs)

    def alter_broker_configs(self, resource_name: str, alter: ConfigAlteration, validate_only: bool = False) -> None:
        """The same for the dynamic configs of BROKER resource ``resource_name`` ("" cluster-wide,
        else a broker id; ``alter`` validates with ``dynamic_config``)."""
        self._alter_config_records(self._broker_configs, ConfigResourceType.BROKER, resource_name, alter,
                                   validate_only)

    def _alter_config_records(self, records: dict[str, dict[str, Any]], resource_type: ConfigResourceType,
                              name: str, alter: ConfigAlteration, validate_only: bool) -> None:
        """Kafka's ``ConfigurationControlManager`` for a resource kept in ``records`` (BROKER, GROUP
        or CLIENT_METRICS): ``alter`` maps its configs to the new ones; none left removes it. A
        resource's dict is replaced, never changed (the group coordinator reads GROUP's unlocked)."""
        with self._controller_lock:
            with self._lock:
                current = dict(records.get(name, {}))
            configs = alter(current)
            if validate_only:
                return
            with self._lock:
                if configs:
                    records[name] = configs
                else:
                    records.pop(name, None)
                if resource_type == ConfigResourceType.CLIENT_METRICS:
                    self._client_metrics_version += 1
            _log.info("configs_altered", resource_type=resource_type.name, resource=name or "<cluster default>",
                      configs=sorted(configs))
            self._announce_config(resource_type, name)

    _NO_CONFIGS: Mapping[str, Any] = MappingProxyType({})

    def group_configs(self, group_id: str) -> Mapping[str, Any]:
        """The dynamic configs of GROUP resource ``group_id`` (read on every heartbeat: no lock)."""
        return self._group_configs.get(group_id, self._NO_CONFIGS)

    def group_config_resources(self) -> list[str]:
        with self._lock:
            return sorted(self._group_configs)

    def alter_group_configs(self, group_id: str, alter: ConfigAlteration, validate_only: bool = False) -> None:
        """The same for GROUP resource ``group_id`` (``alter`` validates with
        ``coordinator.group.group_config``); the group need not exist, as in Kafka."""
        self._alter_config_records(self._group_configs, ConfigResourceType.GROUP, group_id, alter, validate_only)

    def client_metrics_resources(self) -> list[str]:
        """The CLIENT_METRICS resources that have configs (KIP-714 subscriptions), by name."""
        with self._lock:
            return sorted(self._client_metrics)

    def client_metrics_configs(self, name: str) -> dict[str, Any]:
        """A copy of the configs of CLIENT_METRICS resource ``name`` (empty if none)."""
        with self._lock:
            return dict(self._client_metrics.get(name, {}))

    def client_metrics(self) -> tuple[int, dict[str, dict[str, Any]]]:
        """(version, every subscription's configs): the version grows with each change, so a
        reader knows when to re-evaluate what it derived from them (Kafka's
        ``subscriptionUpdateVersion``)."""
        with self._lock:
            return self._client_metrics_version, {n: dict(c) for n, c in self._client_metrics.items()}

    def alter_client_metrics(self, name: str, alter: ConfigAlteration, validate_only: bool = False) -> None:
        """The same as ``alter_broker_configs`` for CLIENT_METRICS resource ``name`` (``alter``
        validates with ``client_metrics_config``)."""
        self._alter_config_records(self._client_metrics, ConfigResourceType.CLIENT_METRICS, name, alter,
                                   validate_only)

    def quorum_state(self) -> tuple[int, int, int]:
        """(leader id, leader epoch, log end offset) of the metadata quorum this in-process
        controller stands for, as DescribeQuorum reports it: one voter, the controller (the
        first live broker, as Metadata's ``controller_id``), whose epoch grows each time that
        broker changes; the log end offset counts the changes committed since start-up (each
        publish of partition states, configs, ISR changes or producer-id blocks is one)."""
        leader = self.controller_id
        with self._lock:
            if leader != self._quorum_leader:
                self._quorum_leader, self._quorum_epoch = leader, self._quorum_epoch + 1
            return leader, self._quorum_epoch, self._metadata_records

    def write_activation_records(self, release: KafkaRelease, min_insync_replicas: int) -> None:
        """What Kafka's controller writes when it first activates on a newly formatted cluster of
        ``release``, beyond the features (``ActivationRecordsGenerator``): when the release formats
        with KIP-966's ELR on (4.1 and later), a cluster-level ``min.insync.replicas`` config of the
        static value, which DescribeConfigs then reports as DYNAMIC_DEFAULT_BROKER_CONFIG. Kept if
        already set."""
        elr = release.features.get(ELR_FEATURE)
        if elr is None or elr.default == 0:
            return
        self.alter_broker_configs(CLUSTER_DEFAULT, lambda current: {"min.insync.replicas": min_insync_replicas,
                                                                    **current})

    def register_config_listener(self, broker_id: int, listener: ConfigListener) -> None:
        with self._lock:
            self._config_listeners[broker_id] = listener

    def _announce_config(self, resource_type: int, resource_name: str) -> None:
        """Controller lock held: the publish point of config changes: persist (``on_change``),
        then the config listeners of live brokers, in broker order."""
        self._changed()
        with self._lock:
            targets = sorted((bid, fn) for bid, fn in self._config_listeners.items()
                             if self.brokers.get(bid) is not None and self.brokers[bid].live)
        for bid, fn in targets:
            try:
                fn(resource_type, resource_name)
            except Exception:
                _log.exception("config_push_failed", broker_id=bid)

    # ------------------------------------------------------------------ security records
    def scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self._scram.get((user, mechanism))

    def scram_credentials(self) -> dict[ScramKey, ScramCredential]:
        with self._lock:
            return dict(self._scram)

    def alter_scram_credentials(self, alter: Callable[[dict[ScramKey, ScramCredential]], dict[ScramKey, ScramCredential]]
                                ) -> None:
        """Replace the credentials with ``alter(current)`` (validated there), under the
        controller lock, then persist."""
        with self._controller_lock:
            new = alter(self.scram_credentials())
            with self._lock:
                self._scram = new
            self._changed()

    def alter_acls(self, alter: Callable[[tuple[AclBinding, ...]], tuple[AclBinding, ...]]) -> None:
        """Replace the ACLs with ``alter(current)``, under the controller lock, then persist."""
        with self._controller_lock:
            self.acls = alter(self.acls)
            self._changed()

    # ------------------------------------------------------------------ log directory failure
    def handle_directories_offline(self, broker_id: int, partitions: list[tuple[str, int]]) -> None:
        """A log directory of ``broker_id`` failed with ``partitions``' replicas in it (Kafka's
        broker heartbeat with offline directories, ``ReplicationControlManager.handleDirectoriesOffline``):
        those replicas leave the ISRs, their leaderships move to other live ISR members, and
        Metadata lists them as offline replicas until the broker restarts."""
        with self._controller_lock:
            changed: list[PartitionState] = []
            with self._lock:
                live = set(self._live_ids_locked())
                for topic, partition in partitions:
                    info = self.topics.get(topic)
                    st = info.partitions.get(partition) if info is not None else None
                    new = offline_replica(st, broker_id, live) if st is not None else None
                    if new is not None:
                        info.partitions = {**info.partitions, partition: new}
                        changed.append(new)
            for st in changed:
                _log.info("replica_offline", broker_id=broker_id, topic=st.topic, partition=st.partition,
                          leader=st.leader, leader_epoch=st.leader_epoch, isr=list(st.isr))
            self._push(changed, [])

    # ------------------------------------------------------------------ client quotas
    def alter_client_quotas(self, alterations: list[tuple[list[tuple[str, str | None]], QuotaOps]],
                            validate_only: bool = False) -> list[AlterResult]:
        """AlterClientQuotas (Kafka's ``ClientQuotaControlManager``, ``client_quota_control`` has
        the rules): one result per entity; unless ``validate_only`` the changed keys are applied,
        persisted and pushed to every live broker's quota listener."""
        with self._controller_lock:
            results, changes = self.client_quotas.alter(alterations, validate_only)
            if validate_only or not changes:
                return results
            _log.info("client_quotas_altered", entities=len(changes))
            self._changed()
            with self._lock:
                targets = sorted((bid, fn) for bid, fn in self._quota_listeners.items()
                                 if self.brokers.get(bid) is not None and self.brokers[bid].live)
            for bid, fn in targets:
                for entity, changed in changes.items():
                    try:
                        fn(entity, dict(changed))
                    except Exception:
                        _log.exception("quota_push_failed", broker_id=bid)
            return results

    def describe_client_quotas(self, components: list[tuple[str, int, str | None]], strict: bool
                               ) -> list[tuple[ClientQuotaEntity, dict[str, float]]]:
        """DescribeClientQuotas (Kafka's ``ClientQuotasImage.describe``); ``KafkaError`` for a
        filter Kafka refuses."""
        with self._controller_lock:
            return self.client_quotas.describe(components, strict)

    def register_quota_listener(self, broker_id: int, listener: QuotaListener) -> None:
        """``listener`` hears every later change, and at once every quota that exists (a broker
        starting learns the cluster's quotas, as from the metadata image)."""
        with self._controller_lock:
            with self._lock:
                self._quota_listeners[broker_id] = listener
            current = [(entity, dict(values)) for entity, values in self.client_quotas.quotas.items()]
        for entity, values in current:
            listener(entity, dict(values))

    # ------------------------------------------------------------------ ISR changes
    def alter_isr(self, topic: str, partition: int, leader: int, leader_epoch: int,
                  new_isr: tuple[int, ...]) -> PartitionState | None:
        """AlterPartition from the leader; None if it is stale (not leader or old epoch)."""
        with self._lock:
            t = self.topics.get(topic)
            st = t.partitions.get(partition) if t else None
            if st is None or st.leader != leader or st.leader_epoch != leader_epoch:
                return None
            if any(not self.brokers.get(r, BrokerInfo(r, live=False)).live for r in new_isr
                   if r not in st.isr):
                return None  # fenced brokers cannot join the ISR
            new = replace(st, isr=tuple(new_isr), partition_epoch=st.partition_epoch + 1)
            t.partitions[partition] = new
            if new.adding_replicas and all(r in new.isr for r in new.target_replicas):
                self.reassignments_completable.add((topic, partition))
        self._changed()
        return new

    # ------------------------------------------------------------------ broker lifecycle
    def broker_stopped(self, broker_id: int, elect: bool = True) -> list[PartitionState]:
        """Fence ``broker_id``: move its leaderships (epoch bump) and drop it from ISRs
        (``elect=False``: only mark it dead, as when the whole cluster closes)."""
        with self._controller_lock:
            changed: list[PartitionState] = []
            with self._lock:
                b = self.brokers.get(broker_id)
                if b is not None:
                    b.live = False
                    b.request_channel = None
                if not elect:
                    return changed
                live = set(self._live_ids_locked())
                for t in self.topics.values():
                    for p, st in list(t.partitions.items()):
                        new = fence(st, broker_id, live)
                        if new is not None:
                            t.partitions[p] = new
                            changed.append(new)
            _log.info("broker_fenced", broker_id=broker_id, partitions_changed=len(changed))
            self._push(changed, [], exclude=broker_id)
            return changed

    def broker_started(self, info: BrokerInfo, listener: PartitionListener | None = None) -> None:
        """Unfence a broker; offline partitions whose ISR holds it elect it leader."""
        with self._controller_lock:
            changed: list[PartitionState] = []
            with self._lock:
                info.live = True
                self.brokers[info.broker_id] = info
                if listener is not None:
                    self._listeners[info.broker_id] = listener
                for t in self.topics.values():
                    for p, st in list(t.partitions.items()):
                        new = unfence(st, info.broker_id)
                        if new is not None:
                            t.partitions[p] = new
                            changed.append(new)
                mine = [s for t in self.topics.values() for s in t.partitions.values()
                        if info.broker_id in s.replicas]
            _log.info("broker_unfenced", broker_id=info.broker_id, elected=len(changed))
            listener_fn = self._listeners.get(info.broker_id)
            if listener_fn is not None:
                listener_fn(mine, [])
            self._push(changed, [], exclude=info.broker_id)

    def elect_leaders(self, election_type: int,
                      partitions: list[tuple[str, int]] | None) -> dict[tuple[str, int], tuple[int, str | None]]:
        """ElectLeaders (Kafka's ``ReplicationControlManager.electLeader`` with
        ``PartitionChangeBuilder``): (error, message) per partition, ``partitions`` None meaning
        every partition. PREFERRED (0) moves leadership to the first replica if it is live and in
        the ISR (ELECTION_NOT_NEEDED if it leads; PREFERRED_LEADER_NOT_AVAILABLE otherwise).
        UNCLEAN (1) elects a leader for a partition without one: a live ISR member if there is
        one, else the first live replica, whose ISR becomes itself alone, losing what only the
        old ISR had (ELECTION_NOT_NEEDED while a leader exists; ELIGIBLE_LEADERS_NOT_AVAILABLE
        without a live replica). Each election bumps the leader epoch and is pushed to the
        brokers like any partition change."""
        results: dict[tuple[str, int], tuple[int, str | None]] = {}
        with self._controller_lock:
            changed: list[PartitionState] = []
            with self._lock:
                if partitions is None:
                    partitions = [(t.name, p) for t in self.topics.values() for p in sorted(t.partitions)]
                live = set(self._live_ids_locked())
                for topic, partition in partitions:
                    st = self.partition_state(topic, partition)
                    if st is None:
                        results[(topic, partition)] = (Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                                       f"No such topic partition as {topic}-{partition}")
                        continue
                    new = elect(st, election_type, live)
                    if isinstance(new, int):
                        results[(topic, partition)] = (new, None)
                        continue
                    self.topics[topic].partitions[partition] = new
                    changed.append(new)
                    results[(topic, partition)] = (Errors.NONE, None)
            for st in changed:
                _log.info("leader_elected", topic=st.topic, partition=st.partition, leader=st.leader,
                          leader_epoch=st.leader_epoch, isr=list(st.isr), election_type=election_type)
            self._push(changed, [])
        return results

    # ------------------------------------------------------------------ reassignment (KIP-455)
    def alter_partition_reassignments(self, reassignments: dict[tuple[str, int], tuple[int, ...] | None],
                                      allow_replication_factor_change: bool = True
                                      ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """AlterPartitionReassignments (Kafka's ``ReplicationControlManager.alterPartitionReassignment``):
        (error, message) per partition. A target replica list starts a reassignment: the
        partition's replicas become target + the current ones not in it, the new ones are
        ``adding_replicas`` (their brokers create the replica and fetch from the leader), the
        dropped ones ``removing_replicas``. It completes when every target replica is in the ISR
        (``complete_reassignments``): replicas := target, the removed replicas stop and delete
        their logs, and a leader outside the target hands over to a target ISR member. None
        cancels an ongoing reassignment (back to the original replicas)."""
        results: dict[tuple[str, int], tuple[int, str | None]] = {}
        with self._controller_lock:
            changed: list[PartitionState] = []
            stopped: dict[tuple[str, int], set[int]] = {}
            with self._lock:
                live = set(self._live_ids_locked())
                for (topic, partition), target in reassignments.items():
                    st = self.partition_state(topic, partition)
                    if st is None:
                        results[(topic, partition)] = (Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                                       f"Unable to find partition {topic}:{partition}.")
                        continue
                    error, message, new, gone = start_reassignment(st, target, self.brokers, live,
                                                                   allow_replication_factor_change)
                    if new is None:
                        results[(topic, partition)] = (error, message)
                        continue
                    done = complete_reassignment(new, live)
                    if done is not None:
                        new, more = done
                        gone = gone | more
                    self.topics[topic].partitions[partition] = new
                    changed.append(new)
                    if gone:
                        stopped[(topic, partition)] = gone
                    results[(topic, partition)] = (Errors.NONE, None)
            for st in changed:
                _log.info("partition_reassignment", topic=st.topic, partition=st.partition,
                          replicas=list(st.replicas), adding=list(st.adding_replicas),
                          removing=list(st.removing_replicas), leader=st.leader)
            self._push(changed, [], stopped=stopped)
        return results

    def complete_reassignments(self) -> None:
        """Complete the reassignments ``alter_isr`` found ready (every target replica in the
        ISR). Called with no partition lock held (the ReplicaManager after follower fetches)."""
        with self._controller_lock:
            changed: list[PartitionState] = []
            stopped: dict[tuple[str, int], set[int]] = {}
            with self._lock:
                ready, self.reassignments_completable = self.reassignments_completable, set()
                live = set(self._live_ids_locked())
                for topic, partition in ready:
                    st = self.partition_state(topic, partition)
                    done = complete_reassignment(st, live) if st is not None else None
                    if done is None:
                        continue
                    new, gone = done
                    self.topics[topic].partitions[partition] = new
                    changed.append(new)
                    stopped[(topic, partition)] = gone
            for st in changed:
                _log.info("partition_reassignment_completed", topic=st.topic, partition=st.partition,
                          replicas=list(st.replicas), leader=st.leader, leader_epoch=st.leader_epoch)
            self._push(changed, [], stopped=stopped)

    def ongoing_reassignments(self) -> list[PartitionState]:
        with self._lock:
            return [st for t in self.topics.values() for st in t.partitions.values()
                    if st.adding_replicas or st.removing_replicas]

    def elect_leader(self, topic: str, partition: int, broker_id: int) -> PartitionState:
        """Move leadership to ``broker_id``, a live ISR member, with a leader-epoch bump (as an
        election does); the new state. ValueError for an unknown partition or a broker that
        cannot lead it. Test control's ``move_leader``; Kafka reaches the same state by
        reordering the replicas and electing the preferred leader."""
        with self._controller_lock:
            with self._lock:
                t = self.topics.get(topic)
                st = t.partitions.get(partition) if t else None
                if st is None:
                    raise ValueError(f"unknown partition {topic}-{partition}")
                b = self.brokers.get(broker_id)
                if b is None or not b.live:
                    raise ValueError(f"broker {broker_id} is not live")
                if broker_id not in st.isr:
                    raise ValueError(f"broker {broker_id} is not in the ISR {list(st.isr)} of {topic}-{partition}")
                if st.leader == broker_id:
                    return st
                new = with_leader(st, broker_id)
                t.partitions[partition] = new
            _log.info("leader_elected", topic=topic, partition=partition, leader=broker_id,
                      leader_epoch=new.leader_epoch)
            self._push([new], [])
            return new

    # ------------------------------------------------------------------ pushes
    def _push(self, states: list[PartitionState], removed: list[tuple[str, int]],
              exclude: int | None = None, stopped: dict[tuple[str, int], set[int]] | None = None) -> None:
        """The publish point of partition-state changes: persist (``on_change``), then send each
        live broker the states of the partitions it has a replica of, and those it no longer
        has (``stopped``: partition -> brokers whose replica the state drops; the broker stops
        and deletes it); ``removed`` (deleted topics' partitions) goes to all."""
        self._changed()
        if not states and not removed:
            return
        stopped = stopped or {}
        with self._lock:
            targets = [(bid, fn) for bid, fn in self._listeners.items()
                       if bid != exclude and self.brokers.get(bid) is not None and self.brokers[bid].live]
        for bid, fn in sorted(targets, key=lambda x: x[0]):
            mine = [s for s in states if bid in s.replicas or bid in stopped.get((s.topic, s.partition), ())]
            gone = removed
            if mine or gone:
                try:
                    fn(mine, gone)
                except Exception:
                    _log.exception("metadata_push_failed", broker_id=bid)

    def _changed(self) -> None:
        with self._lock:
            self._metadata_records += 1
        if self.on_change is not None:
            self.on_change(self)

    # ------------------------------------------------------------------ persistence
    def state_snapshot(self) -> dict[str, Any]:
        """The controller state as plain data (JSON-able): what ``restore_state`` takes back."""
        with self._lock:
            return {
                "cluster_id": self.cluster_id,
                "producer_id_block_end": self._producer_id_block_end,
                "next_assignment_start": self._next_assignment_start,
                "broker_configs": self._broker_configs,
                "group_configs": self._group_configs,
                "scram": [{"user": user, "mechanism": mechanism.type, "salt": c.salt.hex(),
                           "stored_key": c.stored_key.hex(), "server_key": c.server_key.hex(),
                           "iterations": c.iterations} for (user, mechanism), c in self._scram.items()],
                "acls": [acl.to_json() for acl in self.acls],
                "client_metrics": self._client_metrics,
                "client_quotas": self.client_quotas.state(),
                "topics": [{
                    "name": t.name, "topic_id": str(t.topic_id), "internal": t.internal,
                    "configs": t.configs,
                    "partitions": [{"partition": st.partition, "leader": st.leader,
                                    "leader_epoch": st.leader_epoch, "partition_epoch": st.partition_epoch,
                                    "replicas": list(st.replicas), "isr": list(st.isr),
                                    "adding_replicas": list(st.adding_replicas),
                                    "removing_replicas": list(st.removing_replicas)}
                                   for st in t.partitions.values()],
                } for t in self.topics.values()],
            }

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take back a ``state_snapshot`` at start-up, before any broker registers. Every broker
        is fenced then, so every partition starts offline (leader -1, epochs bumped, ISR kept)
        and is elected when a broker of its ISR starts (``broker_started``); producer ids
        continue after the persisted block, as Kafka's controller hands out a new block."""
        with self._lock:
            self.cluster_id = state["cluster_id"]
            self._producer_id_block_end = self._next_producer_id = int(state["producer_id_block_end"])
            self._next_assignment_start = int(state["next_assignment_start"])
            self._broker_configs = {name: dict(configs) for name, configs in state["broker_configs"].items()}
            self._group_configs = {name: dict(configs) for name, configs in state.get("group_configs", {}).items()}
            self._scram = {(c["user"], ScramMechanism.from_type(c["mechanism"])): ScramCredential(  # type: ignore[misc]
                bytes.fromhex(c["salt"]), bytes.fromhex(c["stored_key"]), bytes.fromhex(c["server_key"]),
                int(c["iterations"])) for c in state.get("scram", ())}
            self.acls = tuple(AclBinding.from_json(a) for a in state.get("acls", ()))
            self._client_metrics = {name: dict(configs) for name, configs in state.get("client_metrics", {}).items()}
            self.client_quotas.restore(state.get("client_quotas", []))   # absent in files of earlier versions
            for t in state["topics"]:
                topic_id = uuid.UUID(t["topic_id"])
                info = TopicInfo(t["name"], topic_id, configs=dict(t["configs"]), internal=bool(t["internal"]))
                for p in t["partitions"]:
                    info.partitions[p["partition"]] = PartitionState(
                        t["name"], p["partition"], topic_id, -1, p["leader_epoch"] + 1, p["partition_epoch"] + 1,
                        tuple(p["replicas"]), tuple(p["isr"]), tuple(p["adding_replicas"]),
                        tuple(p["removing_replicas"]))
                self.topics[info.name] = info
                self.topics_by_id[topic_id] = info.name
            self.topics_version += 1

    def unregister_listener(self, broker_id: int) -> None:
        with self._lock:
            self._listeners.pop(broker_id, None)
            self._config_listeners.pop(broker_id, None)
            self._quota_listeners.pop(broker_id, None)
