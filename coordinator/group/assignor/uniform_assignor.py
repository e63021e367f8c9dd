"""UniformAssignor: the ``uniform`` server-side assignor, the default one (Kafka's
``UniformAssignor``): balanced (member totals differ by at most one partition where
subscriptions allow) and sticky (members keep what they hold as far as balance permits), with the
homogeneous builder when every member subscribes to the same topics and the heterogeneous one
otherwise. Rack-aware placement is not implemented (see ``ConsumerGroupManager``)."""
from __future__ import annotations

from kafka_emu.coordinator.group.assignor.partition_assignor import GroupSpec, SubscribedTopicDescriber
from kafka_emu.coordinator.group.assignor.uniform_heterogeneous_assignment_builder import (
    UniformHeterogeneousAssignmentBuilder,
)
from kafka_emu.coordinator.group.assignor.uniform_homogeneous_assignment_builder import build_homogeneous
from kafka_emu.coordinator.group.modern.modern_group_member import Assignment
from kafka_emu.coordinator.group.modern.subscription import SubscriptionType


class UniformAssignor:
    name = "uniform"

    def assign(self, group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> dict[str, Assignment]:
        if not group_spec.members:
            return {}
        if group_spec.subscription_type is SubscriptionType.HOMOGENEOUS:
            return build_homogeneous(group_spec, describer)
        return UniformHeterogeneousAssignmentBuilder(group_spec, describer).build()
