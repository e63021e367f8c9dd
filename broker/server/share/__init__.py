"""The share-partition leader's side of KIP-932 share groups (Kafka's ``kafka.server.share``):
``SharePartitionManager`` (share sessions, ShareFetch and ShareAcknowledge), ``SharePartition``
(in-flight records and their acquisition locks), ``DelayedShareFetch`` (the ``ShareFetch``
purgatory's operation) and the persister that keeps share-partition state with the share
coordinator."""
