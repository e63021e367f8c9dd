"""How a modern group's members subscribe: per topic, how many members name it and through how
many regular expressions it is subscribed (Kafka's ``SubscriptionCount``), and whether all members
subscribe to the same topics (``SubscriptionType``, which picks the assignors' algorithm)."""
from __future__ import annotations

import enum
from dataclasses import dataclass


class SubscriptionType(enum.Enum):
    HOMOGENEOUS = "HOMOGENEOUS"       # every member subscribes to the same topics
    HETEROGENEOUS = "HETEROGENEOUS"


@dataclass(frozen=True, slots=True)
class SubscriptionCount:
    by_name_count: int = 0
    by_regex_count: int = 0

    def inc_name(self) -> "SubscriptionCount":
        return SubscriptionCount(self.by_name_count + 1, self.by_regex_count)

    def dec_name(self) -> "SubscriptionCount | None":
        return _or_none(SubscriptionCount(self.by_name_count - 1, self.by_regex_count))

    def inc_regex(self) -> "SubscriptionCount":
        return SubscriptionCount(self.by_name_count, self.by_regex_count + 1)

    def dec_regex(self) -> "SubscriptionCount | None":
        return _or_none(SubscriptionCount(self.by_name_count, self.by_regex_count - 1))


def _or_none(count: SubscriptionCount) -> SubscriptionCount | None:
    """A topic nobody subscribes to any more leaves the map."""
    return None if count.by_name_count <= 0 and count.by_regex_count <= 0 else count
