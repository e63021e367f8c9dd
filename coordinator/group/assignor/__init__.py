"""The server-side assignors of consumer groups (Kafka's ``group-coordinator`` ``assignor``
package): ``uniform`` (balanced and sticky) and ``range`` (co-partitioned ranges), chosen per
group by ``group.consumer.assignors`` and the members' ``ServerAssignor``."""
from kafka_emu.coordinator.group.assignor.partition_assignor import (
    ConsumerGroupPartitionAssignor, GroupSpec, MemberSubscriptionAndAssignment, PartitionAssignorError,
    SubscribedTopicDescriber,
)
from kafka_emu.coordinator.group.assignor.range_assignor import RangeAssignor
from kafka_emu.coordinator.group.assignor.uniform_assignor import UniformAssignor

# Kafka's CONSUMER_GROUP_BUILTIN_ASSIGNORS, in its order (the first is the default)
BUILTIN_ASSIGNORS: dict[str, ConsumerGroupPartitionAssignor] = {
    a.name: a for a in (UniformAssignor(), RangeAssignor())}

__all__ = ["BUILTIN_ASSIGNORS", "ConsumerGroupPartitionAssignor", "GroupSpec", "MemberSubscriptionAndAssignment",
           "PartitionAssignorError", "RangeAssignor", "SubscribedTopicDescriber", "UniformAssignor"]
