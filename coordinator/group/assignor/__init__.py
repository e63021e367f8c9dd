"""The server-side assignors of consumer groups (Kafka's ``group-coordinator`` ``assignor``
package): ``uniform`` (balanced and sticky) and ``range`` (co-partitioned ranges), chosen per
group by ``group.consumer.assignors`` and the members' ``ServerAssignor``; share groups use
``simple`` (``group.share.assignors``)."""
from kafka_emu.coordinator.group.assignor.partition_assignor import (
    ConsumerGroupPartitionAssignor, GroupSpec, MemberSubscriptionAndAssignment, PartitionAssignorError,
    SubscribedTopicDescriber,
)
from kafka_emu.coordinator.group.assignor.range_assignor import RangeAssignor
from kafka_emu.coordinator.group.assignor.simple_assignor import SimpleAssignor
from kafka_emu.coordinator.group.assignor.uniform_assignor import UniformAssignor

# Kafka's CONSUMER_GROUP_BUILTIN_ASSIGNORS, in its order (the first is the default)
BUILTIN_ASSIGNORS: dict[str, ConsumerGroupPartitionAssignor] = {
    a.name: a for a in (UniformAssignor(), RangeAssignor())}
# Kafka's SHARE_GROUP_BUILTIN_ASSIGNOR
SHARE_GROUP_ASSIGNORS: dict[str, ConsumerGroupPartitionAssignor] = {SimpleAssignor.name: SimpleAssignor()}

__all__ = ["BUILTIN_ASSIGNORS", "ConsumerGroupPartitionAssignor", "GroupSpec", "MemberSubscriptionAndAssignment",
           "PartitionAssignorError", "RangeAssignor", "SHARE_GROUP_ASSIGNORS", "SimpleAssignor", "SubscribedTopicDescriber", "UniformAssignor"]
