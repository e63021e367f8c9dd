"""Kafka's API keys: the one table (``org.apache.kafka.common.protocol.ApiKeys``).

Each member is the key's id (an ``int``: it compares with a decoded header's ``api_key`` and
goes into a response field) and carries Kafka's name for the API, the name of its message
schemas without ``Request`` (``ApiKeys.CONSUMER_GROUP_HEARTBEAT.name == "ConsumerGroupHeartbeat"``),
which Kafka's ``ApiKeys.name`` holds and its request logs and metrics (``request=Produce``) use.
As in Kafka, ``name`` is that name and not the constant's: the constant stays the member's key in
``ApiKeys["PRODUCE"]`` and its ``repr``.

The list is Kafka 4.x's, keys 0-92, in Kafka's order: the keys of the ZooKeeper-era
inter-broker APIs (4-7) stay assigned, as in Kafka, though no 4.x broker serves them; 74 has the
name Kafka 4.1 gave it (KAFKA-18904; ``ListClientMetricsResources`` in 4.0). What this broker
serves is ``broker.apis.APIS``, not this table.

Hot paths compare ints with a module constant bound once at import
(``PRODUCE = int(ApiKeys.PRODUCE)``): comparing an ``int`` with an ``IntEnum`` member takes a
subclass check and a slower call in CPython. No dependencies.
"""
from __future__ import annotations

from enum import IntEnum


class ApiKeys(IntEnum):
    """Kafka's ``ApiKeys``: ``ApiKeys.FETCH == 1``, ``ApiKeys.FETCH.name == "Fetch"``."""

    _kafka_name: str

    def __new__(cls, key: int, kafka_name: str) -> "ApiKeys":
        member = int.__new__(cls, key)
        member._value_ = key
        member._kafka_name = kafka_name
        return member

    @property   # type: ignore[override]
    def name(self) -> str:
        """Kafka's name of the API (``ApiKeys.name``), as its logs and metrics write it."""
        return self._kafka_name

    PRODUCE = 0, "Produce"
    FETCH = 1, "Fetch"
    LIST_OFFSETS = 2, "ListOffsets"
    METADATA = 3, "Metadata"
    LEADER_AND_ISR = 4, "LeaderAndIsr"
    STOP_REPLICA = 5, "StopReplica"
    UPDATE_METADATA = 6, "UpdateMetadata"
    CONTROLLED_SHUTDOWN = 7, "ControlledShutdown"
    OFFSET_COMMIT = 8, "OffsetCommit"
    OFFSET_FETCH = 9, "OffsetFetch"
    FIND_COORDINATOR = 10, "FindCoordinator"
    JOIN_GROUP = 11, "JoinGroup"
    HEARTBEAT = 12, "Heartbeat"
    LEAVE_GROUP = 13, "LeaveGroup"
    SYNC_GROUP = 14, "SyncGroup"
    DESCRIBE_GROUPS = 15, "DescribeGroups"
    LIST_GROUPS = 16, "ListGroups"
    SASL_HANDSHAKE = 17, "SaslHandshake"
    API_VERSIONS = 18, "ApiVersions"
    CREATE_TOPICS = 19, "CreateTopics"
    DELETE_TOPICS = 20, "DeleteTopics"
    DELETE_RECORDS = 21, "DeleteRecords"
    INIT_PRODUCER_ID = 22, "InitProducerId"
    OFFSET_FOR_LEADER_EPOCH = 23, "OffsetForLeaderEpoch"
    ADD_PARTITIONS_TO_TXN = 24, "AddPartitionsToTxn"
    ADD_OFFSETS_TO_TXN = 25, "AddOffsetsToTxn"
    END_TXN = 26, "EndTxn"
    WRITE_TXN_MARKERS = 27, "WriteTxnMarkers"
    TXN_OFFSET_COMMIT = 28, "TxnOffsetCommit"
    DESCRIBE_ACLS = 29, "DescribeAcls"
    CREATE_ACLS = 30, "CreateAcls"
    DELETE_ACLS = 31, "DeleteAcls"
    DESCRIBE_CONFIGS = 32, "DescribeConfigs"
    ALTER_CONFIGS = 33, "AlterConfigs"
    ALTER_REPLICA_LOG_DIRS = 34, "AlterReplicaLogDirs"
    DESCRIBE_LOG_DIRS = 35, "DescribeLogDirs"
    SASL_AUTHENTICATE = 36, "SaslAuthenticate"
    CREATE_PARTITIONS = 37, "CreatePartitions"
    CREATE_DELEGATION_TOKEN = 38, "CreateDelegationToken"
    RENEW_DELEGATION_TOKEN = 39, "RenewDelegationToken"
    EXPIRE_DELEGATION_TOKEN = 40, "ExpireDelegationToken"
    DESCRIBE_DELEGATION_TOKEN = 41, "DescribeDelegationToken"
    DELETE_GROUPS = 42, "DeleteGroups"
    ELECT_LEADERS = 43, "ElectLeaders"
    INCREMENTAL_ALTER_CONFIGS = 44, "IncrementalAlterConfigs"
    ALTER_PARTITION_REASSIGNMENTS = 45, "AlterPartitionReassignments"
    LIST_PARTITION_REASSIGNMENTS = 46, "ListPartitionReassignments"
    OFFSET_DELETE = 47, "OffsetDelete"
    DESCRIBE_CLIENT_QUOTAS = 48, "DescribeClientQuotas"
    ALTER_CLIENT_QUOTAS = 49, "AlterClientQuotas"
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50, "DescribeUserScramCredentials"
    ALTER_USER_SCRAM_CREDENTIALS = 51, "AlterUserScramCredentials"
    VOTE = 52, "Vote"
    BEGIN_QUORUM_EPOCH = 53, "BeginQuorumEpoch"
    END_QUORUM_EPOCH = 54, "EndQuorumEpoch"
    DESCRIBE_QUORUM = 55, "DescribeQuorum"
    ALTER_PARTITION = 56, "AlterPartition"
    UPDATE_FEATURES = 57, "UpdateFeatures"
    ENVELOPE = 58, "Envelope"
    FETCH_SNAPSHOT = 59, "FetchSnapshot"
    DESCRIBE_CLUSTER = 60, "DescribeCluster"
    DESCRIBE_PRODUCERS = 61, "DescribeProducers"
    BROKER_REGISTRATION = 62, "BrokerRegistration"
    BROKER_HEARTBEAT = 63, "BrokerHeartbeat"
    UNREGISTER_BROKER = 64, "UnregisterBroker"
    DESCRIBE_TRANSACTIONS = 65, "DescribeTransactions"
    LIST_TRANSACTIONS = 66, "ListTransactions"
    ALLOCATE_PRODUCER_IDS = 67, "AllocateProducerIds"
    CONSUMER_GROUP_HEARTBEAT = 68, "ConsumerGroupHeartbeat"
    CONSUMER_GROUP_DESCRIBE = 69, "ConsumerGroupDescribe"
    CONTROLLER_REGISTRATION = 70, "ControllerRegistration"
    GET_TELEMETRY_SUBSCRIPTIONS = 71, "GetTelemetrySubscriptions"
    PUSH_TELEMETRY = 72, "PushTelemetry"
    ASSIGN_REPLICAS_TO_DIRS = 73, "AssignReplicasToDirs"
    LIST_CONFIG_RESOURCES = 74, "ListConfigResources"
    DESCRIBE_TOPIC_PARTITIONS = 75, "DescribeTopicPartitions"
    SHARE_GROUP_HEARTBEAT = 76, "ShareGroupHeartbeat"
    SHARE_GROUP_DESCRIBE = 77, "ShareGroupDescribe"
    SHARE_FETCH = 78, "ShareFetch"
    SHARE_ACKNOWLEDGE = 79, "ShareAcknowledge"
    ADD_RAFT_VOTER = 80, "AddRaftVoter"
    REMOVE_RAFT_VOTER = 81, "RemoveRaftVoter"
    UPDATE_RAFT_VOTER = 82, "UpdateRaftVoter"
    INITIALIZE_SHARE_GROUP_STATE = 83, "InitializeShareGroupState"
    READ_SHARE_GROUP_STATE = 84, "ReadShareGroupState"
    WRITE_SHARE_GROUP_STATE = 85, "WriteShareGroupState"
    DELETE_SHARE_GROUP_STATE = 86, "DeleteShareGroupState"
    READ_SHARE_GROUP_STATE_SUMMARY = 87, "ReadShareGroupStateSummary"
    STREAMS_GROUP_HEARTBEAT = 88, "StreamsGroupHeartbeat"
    STREAMS_GROUP_DESCRIBE = 89, "StreamsGroupDescribe"
    DESCRIBE_SHARE_GROUP_OFFSETS = 90, "DescribeShareGroupOffsets"
    ALTER_SHARE_GROUP_OFFSETS = 91, "AlterShareGroupOffsets"
    DELETE_SHARE_GROUP_OFFSETS = 92, "DeleteShareGroupOffsets"


__all__ = ["ApiKeys"]
