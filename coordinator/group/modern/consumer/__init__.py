"""The consumer group type of KIP-848 (Kafka's ``modern.consumer`` package): ``ConsumerGroup``,
``ConsumerGroupMember``, the reconciliation engine ``CurrentAssignmentBuilder`` and
``ConsumerGroupManager``, which serves ConsumerGroupHeartbeat and the classic members of consumer
groups."""
