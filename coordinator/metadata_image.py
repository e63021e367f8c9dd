"""The coordinators' view of the cluster's topics: the ``MetadataImage`` protocol.

Kafka's group coordinator reads topics from the broker's ``MetadataImage`` (names, ids,
partitions) to resolve subscriptions, compute assignments and notice new, grown or deleted
topics. The broker's ``MetadataStore`` (``broker/server/metadata_store.py``) satisfies this
protocol as it is; coordinator tests use a small in-memory image. Reads take no lock: each is
one dict lookup, and a topic's partition map only grows.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Mapping, Protocol


class TopicImage(Protocol):
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, object]   # partition index -> its state (only the keys are read)
    internal: bool


class MetadataImage(Protocol):
    topics: Mapping[str, TopicImage]
    topics_by_id: Mapping[uuid.UUID, str]

    @property
    def topics_version(self) -> int:
        """Changes whenever a topic is created or deleted or gains partitions (Kafka's image
        offset, as far as the group coordinator cares)."""
        ...


class EmptyMetadataImage:
    """No topics (a coordinator built without the broker's metadata)."""

    topics: Mapping[str, TopicImage] = {}
    topics_by_id: Mapping[uuid.UUID, str] = {}
    topics_version = 0


@dataclass
class StaticTopic:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, None] = field(default_factory=dict)
    internal: bool = False


class StaticMetadataImage:
    """Topics kept in memory, for a coordinator without a broker (benchmarks and tests)."""

    def __init__(self) -> None:
        self.topics: dict[str, StaticTopic] = {}
        self.topics_by_id: dict[uuid.UUID, str] = {}
        self.topics_version = 0

    def add_topic(self, name: str, partitions: int, topic_id: uuid.UUID | None = None) -> uuid.UUID:
        topic_id = topic_id or uuid.uuid4()
        self.topics[name] = StaticTopic(name, topic_id, dict.fromkeys(range(partitions)))
        self.topics_by_id[topic_id] = name
        self.topics_version += 1
        return topic_id

    def grow(self, name: str, partitions: int) -> None:
        self.topics[name].partitions = dict.fromkeys(range(partitions))
        self.topics_version += 1

    def delete_topic(self, name: str) -> None:
        del self.topics_by_id[self.topics.pop(name).topic_id]
        self.topics_version += 1
