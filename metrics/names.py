"""The catalogue of every series the emulator exports, with the Kafka MBean each one mirrors.

One table drives the collectors (help text, type, label names), the documentation test (every
entry must appear in ``docs/metrics.md``) and the dashboard test, so a metric cannot be added in
one place and forgotten in another.

Naming follows the Prometheus JMX exporter's usual rules for Kafka: ``kafka.server:type=
ReplicaManager,name=UnderReplicatedPartitions`` becomes ``kafka_server_replicamanager_
underreplicatedpartitions``, MBean key properties other than ``type``/``name`` become labels
(``delayedOperation``, ``fetcherType``, ``request``). Kafka's *meters* (``...PerSec``) are
exported as Prometheus counters: the family keeps the MBean's name and prometheus_client adds
``_total`` to the sample (``kafka_server_replicamanager_isrshrinkspersec_total``); the JMX
``OneMinuteRate`` attribute is ``rate(..._total[1m])`` in PromQL. Kafka's *histograms* of
request times become Prometheus histograms (``_bucket``/``_sum``/``_count``) in milliseconds.
Series with no Kafka counterpart use the ``kafka_emu_`` prefix; consumer-group offsets and lag
use kafka-exporter's names, as dashboards for Kafka expect them there.

Every series also carries ``broker_id``, except the embedded schema registry's: one registry
serves the whole cluster (``per_broker=False``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["gauge", "counter", "histogram", "summary"]

BROKER_LABEL = "broker_id"


@dataclass(frozen=True)
class MetricSpec:
    """One exported family. ``labels`` excludes ``broker_id``, which every per-broker family has."""

    name: str
    kind: Kind
    labels: tuple[str, ...]
    help: str
    mbean: str | None  # the Kafka MBean (or Kafka metric) mirrored, None if emulator-specific
    unit: str = ""
    per_broker: bool = True   # False: a series of the whole cluster, without broker_id

    @property
    def all_labels(self) -> tuple[str, ...]:
        return (BROKER_LABEL, *self.labels) if self.per_broker else self.labels


# ---------------------------------------------------------------- purgatory and timer
PURGATORY_SIZE = MetricSpec(
    "kafka_server_delayedoperationpurgatory_purgatorysize", "gauge", ("delayedOperation",),
    "Operations watched in the purgatory, counted once per watch key, including completed "
    "operations not yet purged (DelayedOperationPurgatory.watched()).",
    "kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize,delayedOperation=<name>")
NUM_DELAYED = MetricSpec(
    "kafka_server_delayedoperationpurgatory_numdelayedoperations", "gauge", ("delayedOperation",),
    "Operations waiting in the purgatory's timer: parked and neither completed nor expired "
    "(DelayedOperationPurgatory.num_delayed()).",
    "kafka.server:type=DelayedOperationPurgatory,name=NumDelayedOperations,delayedOperation=<name>")
DELAYED_PRODUCE_EXPIRES = MetricSpec(
    "kafka_server_delayedproducemetrics_expirespersec", "counter", (),
    "acks=all produces that timed out in the Produce purgatory (answered REQUEST_TIMED_OUT), "
    "counted as Kafka does: once per partition still waiting for the ISR when the request "
    "expired.",
    "kafka.server:type=DelayedProduceMetrics,name=ExpiresPerSec")
DELAYED_FETCH_EXPIRES = MetricSpec(
    "kafka_server_delayedfetchmetrics_expirespersec", "counter", ("fetcherType",),
    "Fetch requests that waited their full max.wait.ms in the Fetch purgatory without "
    "reaching min.bytes; fetcherType is follower (replica fetchers) or consumer.",
    "kafka.server:type=DelayedFetchMetrics,name=ExpiresPerSec,fetcherType=<follower|consumer>")
DELAYED_DELETE_RECORDS_EXPIRES = MetricSpec(
    "kafka_server_delayeddeleterecordsmetrics_expirespersec", "counter", (),
    "DeleteRecords requests that timed out in the DeleteRecords purgatory (answered "
    "REQUEST_TIMED_OUT), counted once per partition whose followers had not yet reached the "
    "requested offset.",
    "kafka.server:type=DelayedDeleteRecordsMetrics,name=ExpiresPerSec")
PURGATORY_EXPIRATIONS = MetricSpec(
    "kafka_emu_purgatory_expirations", "counter", ("delayedOperation",),
    "Operations of any purgatory completed by their timeout (the purgatory's "
    "expiration_count); for Heartbeat this counts session expirations.",
    None)
PURGATORY_PURGES = MetricSpec(
    "kafka_emu_purgatory_purges", "counter", ("delayedOperation",),
    "Purges of completed operations from the watcher lists, run by the expiration reaper when "
    "the estimated watched count exceeds num_delayed by more than the purge interval.",
    None)
TIMER_PENDING = MetricSpec(
    "kafka_emu_timer_pendingtasks", "gauge", ("timer",),
    "Tasks linked in a timing-wheel timer (SystemTimer.size()), labelled by the timer's "
    "executor name; a purgatory's timer equals its NumDelayedOperations.",
    None)
TIMER_EXPIRED = MetricSpec(
    "kafka_emu_timer_expiredtasks", "counter", ("timer",),
    "Timer tasks handed to the timer's executor because their deadline passed.",
    None)

# ---------------------------------------------------------------- request path
REQUESTS = MetricSpec(
    "kafka_network_requestmetrics_requestspersec", "counter", ("request", "version"),
    "Requests completed, by API name and version (Fetch also counted as FetchConsumer or "
    "FetchFollower, as Kafka does).",
    "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=<api>,version=<v>")

_TIME_DOC = ("kafka.network:type=RequestMetrics,name={},request=<api>")
TOTAL_TIME = MetricSpec(
    "kafka_network_requestmetrics_totaltimems", "histogram", ("request",),
    "Milliseconds from the request's arrival on the request channel to the end of sending its "
    "response.", _TIME_DOC.format("TotalTimeMs"), "ms")
REQUEST_QUEUE_TIME = MetricSpec(
    "kafka_network_requestmetrics_requestqueuetimems", "histogram", ("request",),
    "Milliseconds the request waited in the request channel before a handler thread took it.",
    _TIME_DOC.format("RequestQueueTimeMs"), "ms")
LOCAL_TIME = MetricSpec(
    "kafka_network_requestmetrics_localtimems", "histogram", ("request",),
    "Milliseconds the handler thread spent on the request itself (append, read, coordinator "
    "call) until it either answered or parked it in a purgatory.",
    _TIME_DOC.format("LocalTimeMs"), "ms")
REMOTE_TIME = MetricSpec(
    "kafka_network_requestmetrics_remotetimems", "histogram", ("request",),
    "Milliseconds the request spent parked waiting on other brokers or members (acks=all "
    "produce, long-poll fetch, JoinGroup, SyncGroup); zero for requests answered at once.",
    _TIME_DOC.format("RemoteTimeMs"), "ms")
RESPONSE_QUEUE_TIME = MetricSpec(
    "kafka_network_requestmetrics_responsequeuetimems", "histogram", ("request",),
    "Milliseconds the response waited for its network processor to pick it up.",
    _TIME_DOC.format("ResponseQueueTimeMs"), "ms")
RESPONSE_SEND_TIME = MetricSpec(
    "kafka_network_requestmetrics_responsesendtimems", "histogram", ("request",),
    "Milliseconds spent writing the response to the socket.",
    _TIME_DOC.format("ResponseSendTimeMs"), "ms")
ERRORS = MetricSpec(
    "kafka_network_requestmetrics_errorspersec", "counter", ("request", "error"),
    "Error codes in responses, by API name and Kafka error name (NONE included, as in Kafka), "
    "counted as Kafka's AbstractResponse.errorCounts: every error_code field of the response "
    "(top level and per topic or partition).",
    "kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=<api>,error=<error>")
REQUEST_TIME_HISTOGRAMS = (TOTAL_TIME, REQUEST_QUEUE_TIME, LOCAL_TIME, REMOTE_TIME,
                           RESPONSE_QUEUE_TIME, RESPONSE_SEND_TIME)

REQUEST_QUEUE_SIZE = MetricSpec(
    "kafka_network_requestchannel_requestqueuesize", "gauge", (),
    "Requests waiting in the broker's request channel for a handler thread "
    "(bounded by queued.max.requests).",
    "kafka.network:type=RequestChannel,name=RequestQueueSize")
RESPONSE_QUEUE_SIZE = MetricSpec(
    "kafka_network_requestchannel_responsequeuesize", "gauge", (),
    "Responses waiting for their network processor, summed over processors.",
    "kafka.network:type=RequestChannel,name=ResponseQueueSize")
HANDLER_IDLE = MetricSpec(
    "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", "gauge", (),
    "Fraction (0..1, as in Kafka despite the name) of time the request handler threads spent "
    "waiting for a request, averaged over threads and over the time since the previous scrape.",
    "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent")
HANDLER_IDLE_SECONDS = MetricSpec(
    "kafka_emu_requesthandlerpool_idle_seconds", "counter", (),
    "Seconds the request handler threads spent waiting for a request, summed over threads; "
    "rate() of it divided by the thread count is the idle fraction over any window.",
    None)
HANDLER_THREADS = MetricSpec(
    "kafka_emu_requesthandlerpool_threads", "gauge", (),
    "Request handler threads in the pool (num.io.threads).",
    None)
NETWORK_IDLE = MetricSpec(
    "kafka_network_socketserver_networkprocessoravgidlepercent", "gauge", (),
    "Fraction (0..1) of time the network processor threads spent waiting in select, averaged "
    "over processors and over the time since the previous scrape.",
    "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent")
MEMORY_POOL_AVAILABLE = MetricSpec(
    "kafka_network_socketserver_memorypoolavailable", "gauge", (),
    "Bytes left in the request memory pool (queued.max.request.bytes); negative while one "
    "request overdraws it, as Kafka's non-strict pool allows.",
    "kafka.network:type=SocketServer,name=MemoryPoolAvailable")
MEMORY_POOL_USED = MetricSpec(
    "kafka_network_socketserver_memorypoolused", "gauge", (),
    "Bytes of requests read and not yet done with, held in the request memory pool.",
    "kafka.network:type=SocketServer,name=MemoryPoolUsed")
MEMORY_POOL_DEPLETED_TIME = MetricSpec(
    "kafka_network_socket_server_metrics_memorypooldepletedtimetotal", "gauge", (),
    "Milliseconds the request memory pool refused allocations (processors had connections muted "
    "for memory), in total since start.",
    "kafka.network:type=socket-server-metrics,name=MemoryPoolDepletedTimeTotal", "ms")

# socket-server-metrics (Kafka's Selector metrics per listener and network processor; here per
# listener, summed over its processors)
_SOCKET_SERVER = "kafka.server:type=socket-server-metrics,listener=<listener>,networkProcessor=<n>"
AUTH_SUCCESS = MetricSpec(
    "kafka_server_socket_server_metrics_successful_authentication", "counter", ("listener",),
    "Connections that completed authentication (TLS handshake with its principal, or SASL).",
    f"{_SOCKET_SERVER} successful-authentication-total")
AUTH_FAILURE = MetricSpec(
    "kafka_server_socket_server_metrics_failed_authentication", "counter", ("listener",),
    "Connections that failed authentication (TLS handshake, SASL credentials or protocol).",
    f"{_SOCKET_SERVER} failed-authentication-total")
REAUTH_SUCCESS = MetricSpec(
    "kafka_server_socket_server_metrics_successful_reauthentication", "counter", ("listener",),
    "SASL re-authentications (KIP-368) that succeeded.",
    f"{_SOCKET_SERVER} successful-reauthentication-total")
REAUTH_FAILURE = MetricSpec(
    "kafka_server_socket_server_metrics_failed_reauthentication", "counter", ("listener",),
    "SASL re-authentications (KIP-368) that failed.",
    f"{_SOCKET_SERVER} failed-reauthentication-total")
EXPIRED_CONNECTIONS_KILLED = MetricSpec(
    "kafka_server_socket_server_metrics_expired_connections_killed_count", "counter", ("listener",),
    "SASL connections closed because their session (connections.max.reauth.ms) ended before they "
    "re-authenticated.",
    f"{_SOCKET_SERVER} expired-connections-killed-count")
AUTHENTICATION_METRICS = (  # (spec, the socket server's counter)
    (AUTH_SUCCESS, "successful_authentications"), (AUTH_FAILURE, "failed_authentications"),
    (REAUTH_SUCCESS, "successful_reauthentications"), (REAUTH_FAILURE, "failed_reauthentications"),
    (EXPIRED_CONNECTIONS_KILLED, "expired_connections_killed"))

# ---------------------------------------------------------------- client quotas
# Kafka's quota metrics (``kafka.server:type=<Produce|Fetch|Request|ControllerMutation>``, tagged
# user and client-id: the quota's metric tags, "" where a level does not use them). Present once
# a quota of that type exists on the broker.
_QUOTA_LABELS = ("user", "client_id")
_QUOTA_MBEAN = "kafka.server:type={},user=<user>,client-id=<client-id> {}"


def _quota_value(type_: str, attribute: str, help_: str, unit: str = "") -> MetricSpec:
    return MetricSpec(f"kafka_server_{type_.lower()}_{attribute.replace('-', '_')}", "gauge", _QUOTA_LABELS,
                      help_, _QUOTA_MBEAN.format(type_, attribute), unit)


def _throttle_time(type_: str, quota: str) -> MetricSpec:
    return _quota_value(type_, "throttle-time",
                        f"Average throttle time (ms) of this client's responses over {quota} in the metrics "
                        "window (30 s samples, 2 of them); NaN when it was not throttled in that window.", "ms")


def _queue_size(type_: str) -> MetricSpec:
    return MetricSpec(f"kafka_server_{type_.lower()}_queue_size", "gauge", (),
                      f"Connections muted for {type_} throttling, waiting in the quota manager's delay queue "
                      "for their throttle time to pass (KIP-219).",
                      f"kafka.server:type={type_} queue-size")


QUOTA_PRODUCE_BYTE_RATE = _quota_value("Produce", "byte-rate",
                                       "Bytes per second of this client's produce requests, as its "
                                       "producer_byte_rate quota measures them (quota.window.num samples of "
                                       "quota.window.size.seconds).")
QUOTA_PRODUCE_THROTTLE_TIME = _throttle_time("Produce", "producer_byte_rate")
QUOTA_PRODUCE_QUEUE_SIZE = _queue_size("Produce")
QUOTA_FETCH_BYTE_RATE = _quota_value("Fetch", "byte-rate",
                                     "Bytes per second of the fetch responses sent to this consumer, as its "
                                     "consumer_byte_rate quota measures them.")
QUOTA_FETCH_THROTTLE_TIME = _throttle_time("Fetch", "consumer_byte_rate")
QUOTA_FETCH_QUEUE_SIZE = _queue_size("Fetch")
QUOTA_REQUEST_TIME = _quota_value("Request", "request-time",
                                  "Handler-thread time of this client's requests, in percent of one thread "
                                  "(its request_percentage quota's measure).")
QUOTA_REQUEST_THROTTLE_TIME = _throttle_time("Request", "request_percentage")
QUOTA_REQUEST_QUEUE_SIZE = _queue_size("Request")
QUOTA_EXEMPT_REQUEST_TIME = MetricSpec(
    "kafka_server_request_exempt_request_time", "gauge", (),
    "Handler-thread time, in percent of one thread, of requests no request quota applies to "
    "(WriteTxnMarkers, a follower's fetch).", "kafka.server:type=Request exempt-request-time")
QUOTA_MUTATION_RATE = _quota_value("ControllerMutation", "mutation-rate",
                                   "Partitions created or deleted per second by this client (CreateTopics, "
                                   "CreatePartitions, DeleteTopics, auto-created topics).")
QUOTA_MUTATION_TOKENS = _quota_value("ControllerMutation", "tokens",
                                     "Credits left in this client's controller_mutation_rate token bucket; "
                                     "below 0 its strict mutations are refused with THROTTLING_QUOTA_EXCEEDED.")
QUOTA_MUTATION_THROTTLE_TIME = _throttle_time("ControllerMutation", "controller_mutation_rate")
QUOTA_MUTATION_QUEUE_SIZE = _queue_size("ControllerMutation")
# quota type -> (its value metric, throttle time, queue size)
QUOTA_METRICS: dict[str, tuple[MetricSpec, MetricSpec, MetricSpec]] = {
    "Produce": (QUOTA_PRODUCE_BYTE_RATE, QUOTA_PRODUCE_THROTTLE_TIME, QUOTA_PRODUCE_QUEUE_SIZE),
    "Fetch": (QUOTA_FETCH_BYTE_RATE, QUOTA_FETCH_THROTTLE_TIME, QUOTA_FETCH_QUEUE_SIZE),
    "Request": (QUOTA_REQUEST_TIME, QUOTA_REQUEST_THROTTLE_TIME, QUOTA_REQUEST_QUEUE_SIZE),
    "ControllerMutation": (QUOTA_MUTATION_TOKENS, QUOTA_MUTATION_THROTTLE_TIME, QUOTA_MUTATION_QUEUE_SIZE),
}

# ---------------------------------------------------------------- replica manager and topics
UNDER_REPLICATED = MetricSpec(
    "kafka_server_replicamanager_underreplicatedpartitions", "gauge", (),
    "Partitions led by this broker whose ISR is smaller than the assigned replica set.",
    "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions")
PARTITION_COUNT = MetricSpec(
    "kafka_server_replicamanager_partitioncount", "gauge", (),
    "Partitions hosted by this broker (leader or follower).",
    "kafka.server:type=ReplicaManager,name=PartitionCount")
LEADER_COUNT = MetricSpec(
    "kafka_server_replicamanager_leadercount", "gauge", (),
    "Partitions this broker leads.",
    "kafka.server:type=ReplicaManager,name=LeaderCount")
UNDER_MIN_ISR = MetricSpec(
    "kafka_server_replicamanager_underminisrpartitioncount", "gauge", (),
    "Partitions led by this broker whose ISR is smaller than min.insync.replicas "
    "(acks=all produces to them fail with NOT_ENOUGH_REPLICAS).",
    "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount")
ISR_SHRINKS = MetricSpec(
    "kafka_server_replicamanager_isrshrinkspersec", "counter", (),
    "ISR shrinks on partitions this broker leads (a follower fell behind "
    "replica.lag.time.max.ms or its broker stopped).",
    "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec")
ISR_EXPANDS = MetricSpec(
    "kafka_server_replicamanager_isrexpandspersec", "counter", (),
    "ISR expansions on partitions this broker leads (a follower caught up to the HW).",
    "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec")
_BTM = "kafka.server:type=BrokerTopicMetrics,name={},topic=<topic>"
MESSAGES_IN = MetricSpec(
    "kafka_server_brokertopicmetrics_messagesinpersec", "counter", ("topic",),
    "Records appended by produce requests to partitions this broker leads. Kafka's all-topics "
    "MBean (no topic key) is the sum over topic.", _BTM.format("MessagesInPerSec"))
BYTES_IN = MetricSpec(
    "kafka_server_brokertopicmetrics_bytesinpersec", "counter", ("topic",),
    "Bytes of record batches appended by produce requests (replication excluded).",
    _BTM.format("BytesInPerSec"))
BYTES_OUT = MetricSpec(
    "kafka_server_brokertopicmetrics_bytesoutpersec", "counter", ("topic",),
    "Bytes of record batches returned by fetch requests to consumers (replication excluded).",
    _BTM.format("BytesOutPerSec"))
FAILED_PRODUCE = MetricSpec(
    "kafka_server_brokertopicmetrics_failedproducerequestspersec", "counter", ("topic",),
    "Partitions of produce requests that failed unexpectedly: as in Kafka's ReplicaManager, not "
    "the routine answers (unknown partition, not leader, record too large, corrupt record, "
    "duplicate sequence); e.g. NOT_ENOUGH_REPLICAS, INVALID_RECORD, OUT_OF_ORDER_SEQUENCE_NUMBER.",
    _BTM.format("FailedProduceRequestsPerSec"))
FAILED_FETCH = MetricSpec(
    "kafka_server_brokertopicmetrics_failedfetchrequestspersec", "counter", ("topic",),
    "Partitions of fetch requests that failed unexpectedly (not unknown partition, not leader, "
    "fenced or unknown epoch, offset out of range), as in Kafka's ReplicaManager.",
    _BTM.format("FailedFetchRequestsPerSec"))

# ---------------------------------------------------------------- log layer
_LOG = "kafka.log:type=Log,name={},topic=<topic>,partition=<partition>"
LOG_END_OFFSET = MetricSpec(
    "kafka_log_log_logendoffset", "gauge", ("topic", "partition"),
    "Log end offset of each replica this broker hosts (leader or follower).",
    _LOG.format("LogEndOffset"))
LOG_START_OFFSET = MetricSpec(
    "kafka_log_log_logstartoffset", "gauge", ("topic", "partition"),
    "Log start offset of each replica this broker hosts.", _LOG.format("LogStartOffset"))
LOG_SIZE = MetricSpec(
    "kafka_log_log_size", "gauge", ("topic", "partition"),
    "Bytes of record batches in each replica's log.", _LOG.format("Size"), "bytes")
LOG_NUM_SEGMENTS = MetricSpec(
    "kafka_log_log_numlogsegments", "gauge", ("topic", "partition"),
    "Segments of each replica's log (the active one included).", _LOG.format("NumLogSegments"))
_CLEANER_MANAGER = "kafka.log:type=LogCleanerManager,name={}"
CLEANER_MAX_DIRTY_PERCENT = MetricSpec(
    "kafka_log_logcleanermanager_max_dirty_percent", "gauge", (),
    "Highest dirty ratio (percent) over the compacted logs when the cleaner last chose a log.",
    _CLEANER_MANAGER.format("max-dirty-percent"))
CLEANER_TIME_SINCE_LAST_RUN = MetricSpec(
    "kafka_log_logcleanermanager_time_since_last_run_ms", "gauge", (),
    "Milliseconds since the cleaner last looked for a log to clean.",
    _CLEANER_MANAGER.format("time-since-last-run-ms"), "milliseconds")
CLEANER_UNCLEANABLE_PARTITIONS = MetricSpec(
    "kafka_log_logcleanermanager_uncleanable_partitions_count", "gauge", (),
    "Partitions whose cleaning failed and that the cleaner skips until they are deleted.",
    _CLEANER_MANAGER.format("uncleanable-partitions-count"))
_CLEANER = "kafka.log:type=LogCleaner,name={}"
CLEANER_RECOPY_PERCENT = MetricSpec(
    "kafka_log_logcleaner_cleaner_recopy_percent", "gauge", (),
    "Bytes written as a percentage of bytes read by the last cleaning (100 - what compaction removed).",
    _CLEANER.format("cleaner-recopy-percent"))
CLEANER_MAX_CLEAN_TIME = MetricSpec(
    "kafka_log_logcleaner_max_clean_time_secs", "gauge", (),
    "Seconds the last cleaning took (whole seconds, as Kafka's gauge).",
    _CLEANER.format("max-clean-time-secs"), "seconds")
LAST_STABLE_OFFSET_LAG = MetricSpec(
    "kafka_cluster_partition_laststableoffsetlag", "gauge", ("topic", "partition"),
    "High watermark minus last stable offset of each hosted replica: records read_committed "
    "consumers cannot read yet because a transaction below them is still open (or its marker is "
    "not yet replicated).",
    "kafka.cluster:type=Partition,name=LastStableOffsetLag,topic=<topic>,partition=<partition>")
LOG_MEMORY_BUDGET_DELETED = MetricSpec(
    "kafka_emu_log_memory_budget_deleted_bytes", "counter", (),
    "Bytes of log segments deleted because all logs together exceeded emulator.log.memory.max.bytes.",
    None, "bytes")

# ---------------------------------------------------------------- group coordinator
_GMM = "kafka.coordinator.group:type=GroupMetadataManager,name={}"
NUM_GROUPS = MetricSpec(
    "kafka_coordinator_group_groupmetadatamanager_numgroups", "gauge", (),
    "Classic groups loaded on this coordinator, all states.", _GMM.format("NumGroups"))
GROUP_STATE_METRICS: dict[str, MetricSpec] = {
    state: MetricSpec(
        f"kafka_coordinator_group_groupmetadatamanager_numgroups{state.lower()}", "gauge", (),
        f"Groups in state {state} on this coordinator.", _GMM.format(f"NumGroups{state}"))
    for state in ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")
}
NUM_OFFSETS = MetricSpec(
    "kafka_coordinator_group_groupmetadatamanager_numoffsets", "gauge", (),
    "Committed offsets cached by this coordinator (one per group and partition).",
    _GMM.format("NumOffsets"))
GROUP_MEMBERS = MetricSpec(
    "kafka_emu_coordinator_members", "gauge", (),
    "Members of the groups loaded on this coordinator.", None)
COMPLETED_REBALANCES = MetricSpec(
    "kafka_server_group_coordinator_metrics_group_completed_rebalance", "counter", (),
    "Rebalances completed: a group reached Stable from CompletingRebalance with a new "
    "generation (rate() is Kafka's group-completed-rebalance-rate).",
    "kafka.server:type=group-coordinator-metrics, group-completed-rebalance-count/-rate")
_GCM = "kafka.server:type=group-coordinator-metrics, {}"
GROUP_COUNT = MetricSpec(
    "kafka_server_group_coordinator_metrics_group_count", "gauge", ("protocol",),
    "Groups loaded on this coordinator by rebalance protocol (classic, consumer, share).",
    _GCM.format("group-count (protocol=<protocol>)"))
CONSUMER_GROUP_COUNT = MetricSpec(
    "kafka_server_group_coordinator_metrics_consumer_group_count", "gauge", ("state",),
    "Consumer-protocol groups (KIP-848) on this coordinator by state "
    "(Empty, Assigning, Reconciling, Stable, Dead).",
    _GCM.format("consumer-group-count (state=<state>)"))
CONSUMER_GROUP_REBALANCES = MetricSpec(
    "kafka_server_group_coordinator_metrics_consumer_group_rebalance", "counter", (),
    "Consumer-protocol group epoch bumps: a member joined or left, a subscription or the "
    "subscribed topics' metadata changed (rate() is Kafka's consumer-group-rebalance-rate).",
    _GCM.format("consumer-group-rebalance-count/-rate"))
SHARE_GROUP_COUNT = MetricSpec(
    "kafka_server_group_coordinator_metrics_share_group_count", "gauge", ("state",),
    "Share groups (KIP-932) on this coordinator by state (Empty, Stable, Dead).",
    _GCM.format("share-group-count (state=<state>)"))
SHARE_GROUP_REBALANCES = MetricSpec(
    "kafka_server_group_coordinator_metrics_share_group_rebalance", "counter", (),
    "Share group epoch bumps: a member joined or left, a subscription or the subscribed topics' "
    "metadata changed (rate() is Kafka's share-group-rebalance-rate).",
    _GCM.format("share-group-rebalance-count/-rate"))
_SGM = "kafka.server:type=share-group-metrics, {}"
SHARE_RECORD_ACKNOWLEDGEMENTS = MetricSpec(
    "kafka_server_share_group_metrics_record_acknowledgement", "counter", ("ack_type",),
    "Records acknowledged by share group members on this broker's share partitions, by type "
    "(Accept, Release, Reject, Renew, Gap).",
    _SGM.format("record-acknowledgement-count/-rate (ack-type=<type>)"))
SHARE_FETCH_REQUESTS = MetricSpec(
    "kafka_server_brokertopicmetrics_totalsharefetchrequestspersec", "counter", (),
    "ShareFetch requests this broker answered as a share-partition leader.",
    "kafka.server:type=BrokerTopicMetrics,name=TotalShareFetchRequestsPerSec")
SHARE_ACKNOWLEDGEMENT_REQUESTS = MetricSpec(
    "kafka_server_brokertopicmetrics_totalshareacknowledgementrequestspersec", "counter", (),
    "Requests carrying share acknowledgements (ShareAcknowledge, and ShareFetch with "
    "acknowledgements) this broker applied.",
    "kafka.server:type=BrokerTopicMetrics,name=TotalShareAcknowledgementRequestsPerSec")
SHARE_RECORD_LOCK_TIMEOUTS = MetricSpec(
    "kafka_emu_share_record_lock_timeouts", "counter", (),
    "Records whose acquisition lock expired before they were acknowledged (they became "
    "available again, or were archived at the delivery limit).", None)
SHARE_SESSIONS = MetricSpec(
    "kafka_emu_share_sessions", "gauge", (),
    "Share sessions open on this broker (group.share.max.share.sessions caps them).", None)
SHARE_START_OFFSET = MetricSpec(
    "kafka_emu_share_group_start_offset", "gauge", ("group", "topic", "partition"),
    "The share-partition start offset of each share partition this broker leads: every record "
    "below it was acknowledged or archived.", None)
SHARE_LAG = MetricSpec(
    "kafka_emu_share_group_lag", "gauge", ("group", "topic", "partition"),
    "Share lag: the partition's high watermark minus the share-partition start offset (records "
    "not yet delivered for good), per share partition this broker leads.", None)
REBALANCES_STARTED = MetricSpec(
    "kafka_emu_coordinator_rebalances_started", "counter", (),
    "Transitions of a group into PreparingRebalance (a join, leave, expiry or metadata change "
    "started a rebalance).", None)
REBALANCE_TIME = MetricSpec(
    "kafka_emu_coordinator_rebalance_time_ms", "summary", (),
    "Milliseconds from entering PreparingRebalance to reaching Stable with the new "
    "generation; _sum/_count give the mean over any window.", None, "ms")
REBALANCE_TIME_MAX = MetricSpec(
    "kafka_emu_coordinator_rebalance_time_ms_max", "gauge", (),
    "Longest rebalance seen by this coordinator, in milliseconds.", None, "ms")
HEARTBEAT_EXPIRATIONS = MetricSpec(
    "kafka_emu_coordinator_heartbeat_expirations", "counter", (),
    "Members removed because their session timed out without a heartbeat.", None)

# ---------------------------------------------------------------- transaction coordinator
TXN_PARTITION_LOAD_TIME = MetricSpec(
    "kafka_server_transaction_coordinator_metrics_partition_load_time_ms", "summary", (),
    "Milliseconds to load a __transaction_state partition this broker became leader of; "
    "_sum/_count give Kafka's partition-load-time-avg over any window.",
    "kafka.server:type=transaction-coordinator-metrics, partition-load-time-avg", "ms")
TXN_PARTITION_LOAD_TIME_MAX = MetricSpec(
    "kafka_server_transaction_coordinator_metrics_partition_load_time_max", "gauge", (),
    "Longest load of a __transaction_state partition seen by this coordinator, in milliseconds.",
    "kafka.server:type=transaction-coordinator-metrics, partition-load-time-max", "ms")
TXN_MARKER_QUEUE_SIZE = MetricSpec(
    "kafka_emu_transaction_marker_queue_size", "gauge", (),
    "COMMIT/ABORT marker entries waiting to be sent by this coordinator's marker channel "
    "(per-broker queues and the queue of partitions without a live leader).",
    "kafka.coordinator.transaction:type=TransactionMarkerChannelManager,name=UnknownDestinationQueueSize (part of)")
TXN_PENDING_COMPLETION = MetricSpec(
    "kafka_emu_transaction_pending_completion", "gauge", (),
    "Transactions whose decision is in __transaction_state and whose markers are not all "
    "written yet.", None)
TXN_BY_STATE = MetricSpec(
    "kafka_emu_transaction_coordinator_transactions", "gauge", ("state",),
    "Transactional ids loaded on this coordinator, by state (Empty, Ongoing, PrepareCommit, ...).", None)

# ---------------------------------------------------------------- client telemetry (KIP-714)
_CLIENT = ("client_instance_id",)
CLIENT_METRICS_INSTANCES = MetricSpec(
    "kafka_server_client_metrics_instance_count", "gauge", (),
    "Client instances this broker's ClientMetricsManager knows (from GetTelemetrySubscriptions "
    "and PushTelemetry; forgotten after max(60 s, 3 push intervals) of silence).",
    "kafka.server:type=client-metrics, instance-count")
CLIENT_METRICS_UNKNOWN_SUBSCRIPTION = MetricSpec(
    "kafka_server_client_metrics_unknown_subscription_request", "counter", (),
    "PushTelemetry requests answered UNKNOWN_SUBSCRIPTION_ID (the client's subscription changed).",
    "kafka.server:type=client-metrics, unknown-subscription-request-count")
CLIENT_METRICS_THROTTLE = MetricSpec(
    "kafka_server_client_metrics_throttle", "counter", _CLIENT,
    "Telemetry requests of a client answered THROTTLING_QUOTA_EXCEEDED (sent before its push interval).",
    "kafka.server:type=client-metrics,client_instance_id=<id>, throttle-count")
CLIENT_METRICS_PLUGIN_EXPORT = MetricSpec(
    "kafka_server_client_metrics_plugin_export", "counter", _CLIENT,
    "Pushes of a client whose metrics reached the exporter (here: kafka_emu_client_telemetry).",
    "kafka.server:type=client-metrics,client_instance_id=<id>, plugin-export-count")
CLIENT_METRICS_PLUGIN_ERROR = MetricSpec(
    "kafka_server_client_metrics_plugin_error", "counter", _CLIENT,
    "Pushes of a client whose payload did not decompress or decode as OTLP (answered INVALID_RECORD).",
    "kafka.server:type=client-metrics,client_instance_id=<id>, plugin-error-count")
CLIENT_TELEMETRY = MetricSpec(
    "kafka_emu_client_telemetry", "gauge", ("client_instance_id", "client_id", "metric", "attributes"),
    "The latest value of each metric a client pushed (PushTelemetry, OTLP): `metric` is the OTLP name "
    "(org.apache.kafka.producer.record.queue.time.avg ...; histograms and summaries as <name>.count and "
    "<name>.sum), `attributes` its data point's attributes as k=v,...; delta sums are added up, so a sum "
    "reads as its running total. The broker's exporter plugin, Kafka's ClientTelemetryExporter.", None)

# ---------------------------------------------------------------- consumer groups (kafka-exporter)
_GROUP_LABELS = ("consumergroup", "topic", "partition")
CONSUMER_GROUP_CURRENT_OFFSET = MetricSpec(
    "kafka_consumergroup_current_offset", "gauge", _GROUP_LABELS,
    "Committed offset of a consumer group on a partition, from the group's coordinator "
    "(broker_id is the coordinator); named and labelled as kafka-exporter does.",
    "kafka-exporter kafka_consumergroup_current_offset")
CONSUMER_GROUP_LAG = MetricSpec(
    "kafka_consumergroup_lag", "gauge", _GROUP_LABELS,
    "High watermark of the partition (on its leader) minus the group's committed offset, "
    "computed at scrape time; absent while the partition has no leader.",
    "kafka-exporter kafka_consumergroup_lag")

# ---------------------------------------------------------------- schema registry (one per cluster)
# Confluent's registry has no Prometheus names of its own (its JMX beans are per Jetty endpoint).
SCHEMA_REGISTRY_REQUESTS = MetricSpec(
    "kafka_emu_schema_registry_requests", "counter", ("method", "endpoint", "status"),
    "Schema registry requests answered, by HTTP method, route template (/subjects/{subject}/versions; "
    "unknown for a path without route) and HTTP status.", None, per_broker=False)
SCHEMA_REGISTRY_REQUEST_SECONDS = MetricSpec(
    "kafka_emu_schema_registry_request_seconds", "counter", ("method", "endpoint"),
    "Seconds spent answering schema registry requests, by method and route; its rate over the "
    "requests' rate is the mean.", None, "seconds", per_broker=False)
SCHEMA_REGISTRY_SUBJECTS = MetricSpec(
    "kafka_emu_schema_registry_subjects", "gauge", (),
    "Schema registry subjects with a live (not deleted) version.", None, per_broker=False)
SCHEMA_REGISTRY_VERSIONS = MetricSpec(
    "kafka_emu_schema_registry_versions", "gauge", (),
    "Live (not deleted) subject versions in the schema registry.", None, per_broker=False)
SCHEMA_REGISTRY_SOFT_DELETED = MetricSpec(
    "kafka_emu_schema_registry_soft_deleted_versions", "gauge", (),
    "Soft-deleted subject versions in the schema registry.", None, per_broker=False)
SCHEMA_REGISTRY_SCHEMAS = MetricSpec(
    "kafka_emu_schema_registry_schemas", "gauge", ("schema_type",),
    "Distinct schema ids in the schema registry, by schema type (AVRO, JSON, PROTOBUF).", None,
    per_broker=False)
SCHEMA_REGISTRY_MAX_ID = MetricSpec(
    "kafka_emu_schema_registry_max_schema_id", "gauge", (),
    "The largest schema id the schema registry has given out.", None, per_broker=False)
SCHEMA_REGISTRY = (SCHEMA_REGISTRY_REQUESTS, SCHEMA_REGISTRY_REQUEST_SECONDS, SCHEMA_REGISTRY_SUBJECTS,
                   SCHEMA_REGISTRY_VERSIONS, SCHEMA_REGISTRY_SOFT_DELETED, SCHEMA_REGISTRY_SCHEMAS,
                   SCHEMA_REGISTRY_MAX_ID)

# ---------------------------------------------------------------- test control (one per cluster)
CONTROL_ACTIONS = MetricSpec(
    "kafka_emu_control_actions", "counter", ("action",),
    "Test-control actions done to the cluster (injected errors, interceptions, isolations, moves, "
    "time jumps), by action (ClusterControl.counts).", None, per_broker=False)

ALL: tuple[MetricSpec, ...] = (
    PURGATORY_SIZE, NUM_DELAYED, DELAYED_PRODUCE_EXPIRES, DELAYED_FETCH_EXPIRES, DELAYED_DELETE_RECORDS_EXPIRES,
    PURGATORY_EXPIRATIONS, PURGATORY_PURGES, TIMER_PENDING, TIMER_EXPIRED,
    REQUESTS, ERRORS, *REQUEST_TIME_HISTOGRAMS, REQUEST_QUEUE_SIZE, RESPONSE_QUEUE_SIZE,
    HANDLER_IDLE, HANDLER_IDLE_SECONDS, HANDLER_THREADS, NETWORK_IDLE,
    AUTH_SUCCESS, AUTH_FAILURE, REAUTH_SUCCESS, REAUTH_FAILURE, EXPIRED_CONNECTIONS_KILLED,
    MEMORY_POOL_AVAILABLE, MEMORY_POOL_USED, MEMORY_POOL_DEPLETED_TIME,
    *(spec for specs in QUOTA_METRICS.values() for spec in specs), QUOTA_EXEMPT_REQUEST_TIME, QUOTA_MUTATION_RATE,
    UNDER_REPLICATED, PARTITION_COUNT, LEADER_COUNT, UNDER_MIN_ISR, ISR_SHRINKS, ISR_EXPANDS,
    MESSAGES_IN, BYTES_IN, BYTES_OUT, FAILED_PRODUCE, FAILED_FETCH,
    LOG_END_OFFSET, LOG_START_OFFSET, LOG_SIZE, LOG_NUM_SEGMENTS, LAST_STABLE_OFFSET_LAG,
    LOG_MEMORY_BUDGET_DELETED, CLEANER_MAX_DIRTY_PERCENT, CLEANER_TIME_SINCE_LAST_RUN,
    CLEANER_UNCLEANABLE_PARTITIONS, CLEANER_RECOPY_PERCENT, CLEANER_MAX_CLEAN_TIME,
    NUM_GROUPS, *GROUP_STATE_METRICS.values(), NUM_OFFSETS, GROUP_MEMBERS,
    GROUP_COUNT, CONSUMER_GROUP_COUNT, CONSUMER_GROUP_REBALANCES, SHARE_GROUP_COUNT, SHARE_GROUP_REBALANCES,
    SHARE_RECORD_ACKNOWLEDGEMENTS, SHARE_FETCH_REQUESTS, SHARE_ACKNOWLEDGEMENT_REQUESTS, SHARE_RECORD_LOCK_TIMEOUTS,
    SHARE_SESSIONS, SHARE_START_OFFSET, SHARE_LAG,
    COMPLETED_REBALANCES, REBALANCES_STARTED, REBALANCE_TIME, REBALANCE_TIME_MAX,
    HEARTBEAT_EXPIRATIONS, TXN_PARTITION_LOAD_TIME, TXN_PARTITION_LOAD_TIME_MAX, TXN_MARKER_QUEUE_SIZE,
    TXN_PENDING_COMPLETION, TXN_BY_STATE, CLIENT_METRICS_INSTANCES, CLIENT_METRICS_UNKNOWN_SUBSCRIPTION,
    CLIENT_METRICS_THROTTLE, CLIENT_METRICS_PLUGIN_EXPORT, CLIENT_METRICS_PLUGIN_ERROR, CLIENT_TELEMETRY,
    CONSUMER_GROUP_CURRENT_OFFSET, CONSUMER_GROUP_LAG,
    *SCHEMA_REGISTRY, CONTROL_ACTIONS,
)

BY_NAME: dict[str, MetricSpec] = {spec.name: spec for spec in ALL}

# Request time histogram buckets, in milliseconds: sub-millisecond in-process requests up to
# the 30 s request.timeout.ms ceiling, roughly 1-2.5-5 per decade.
TIME_BUCKETS_MS: tuple[float, ...] = (
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0,
    1000.0, 2500.0, 5000.0, 10000.0, 30000.0,
)
