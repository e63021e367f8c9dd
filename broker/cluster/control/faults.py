"""Scripted error injection: per-API queues of Kafka errors, matched against incoming requests.

``inject_errors("Produce", ["NOT_LEADER_OR_FOLLOWER"] * 3, broker=1, topic="t")`` adds one
``ErrorInjection``: the next three Produce requests that broker 1 receives naming topic ``t``
are answered with that error, one entry per request, then the injection is spent. An entry of
``NONE`` lets that request through unchanged; ``DISCONNECT`` closes its connection instead of
answering (librdkafka's mock cluster calls that a transport error). Injections are matched in
the order they were added; a request takes one entry from the first injection that matches it.

Filters (each None = any): ``broker`` (the broker receiving the request), ``topic`` and
``partition`` (the request names that topic, and that partition of it; topics named by id are
resolved through the metadata), ``group`` (the request's group id, or a FindCoordinator key).

Names: APIs by Kafka's name (``Produce``, ``FindCoordinator``; case-insensitive) or key; errors
by Kafka's enum name (``NOT_LEADER_OR_FOLLOWER``; case-insensitive) or code.

Locking: ``FaultTable._lock`` guards the injection list and every injection's remaining
entries; a request is matched and its entry taken in one critical section, so two handler
threads never take the same entry.
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Iterator

from kafka_emu.broker.apis import APIS
from kafka_emu.broker.cluster.control.entity_json import JsonValue
from kafka_emu.broker.protocol.codec import RequestBody
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.metadata_store import MetadataStore

DISCONNECT = "DISCONNECT"
_API_KEYS = {spec.name.lower(): key for key, spec in APIS.items()}


def api_key(api: str | int) -> int:
    """The key of an API named by Kafka's name or key; ValueError for one the broker lacks."""
    if isinstance(api, bool):
        raise ValueError(f"unknown API {api!r}")
    if isinstance(api, int) or (isinstance(api, str) and api.strip().lstrip("-").isdigit()):
        key = int(api)
        if key in APIS:
            return key
    elif isinstance(api, str) and api.strip().lower() in _API_KEYS:
        return _API_KEYS[api.strip().lower()]
    raise ValueError(f"unknown API {api!r} (known: {', '.join(spec.name for spec in APIS.values())})")


def error_code(error: str | int) -> int | str:
    """A Kafka error code from its name or code (any of Kafka's errors, ``common.errors.Errors``),
    or ``DISCONNECT``."""
    try:
        if isinstance(error, bool):
            raise ValueError
        if isinstance(error, int):
            return Errors(error)
        if isinstance(error, str):
            text = error.strip()
            if text.upper() == DISCONNECT:
                return DISCONNECT
            if text.lstrip("-").isdigit():
                return Errors(int(text))
            return Errors[text.upper()]
    except (ValueError, KeyError):
        pass
    raise ValueError(f"unknown Kafka error {error!r} (a name such as NOT_LEADER_OR_FOLLOWER, "
                     f"a code, or DISCONNECT)")


def error_name(code: int | str) -> str:
    return code if isinstance(code, str) else Errors(code).name


@dataclass
class ErrorInjection:
    api_key: int
    errors: deque[int | str]
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None
    group: str | None = None
    injected: int = 0

    def describe(self) -> dict[str, JsonValue]:
        return {"api": APIS[self.api_key].name, "errors": [error_name(e) for e in self.errors],
                "broker": self.broker, "topic": self.topic, "partition": self.partition,
                "group": self.group, "injected": self.injected}


@dataclass
class RequestFacts:
    """What the filters look at in one request (extracted once, only when injections exist)."""

    api_key: int
    broker: int
    partitions: set[tuple[str, int | None]] = field(default_factory=set)  # (topic, partition)
    groups: set[str] = field(default_factory=set)


class FaultTable:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._injections: list[ErrorInjection] = []

    def add(self, injection: ErrorInjection) -> None:
        with self._lock:
            self._injections.append(injection)

    def clear(self) -> int:
        with self._lock:
            n = len(self._injections)
            self._injections.clear()
            return n

    def pending(self) -> list[ErrorInjection]:
        with self._lock:
            return [i for i in self._injections if i.errors]

    def has_api(self, key: int) -> bool:
        return any(i.api_key == key for i in self._injections)

    def take(self, facts: RequestFacts) -> tuple[ErrorInjection, int | str] | None:
        """The next entry of the first injection matching ``facts`` (consumed), or None."""
        with self._lock:
            for injection in self._injections:
                if injection.errors and _matches(injection, facts):
                    injection.injected += 1
                    code = injection.errors.popleft()
                    self._injections = [i for i in self._injections if i.errors]
                    return injection, code
        return None


def _matches(i: ErrorInjection, facts: RequestFacts) -> bool:
    if i.api_key != facts.api_key or (i.broker is not None and i.broker != facts.broker):
        return False
    if i.group is not None and i.group not in facts.groups:
        return False
    if i.topic is None and i.partition is None:
        return True
    return any((i.topic is None or t == i.topic) and (i.partition is None or p is None or p == i.partition)
               for t, p in facts.partitions)


# ----------------------------------------------------------------------------- request facts
_TOPIC_ARRAYS = ("topic_data", "topics")
_PARTITION_ARRAYS = ("partition_data", "partitions", "partition_indexes")
_GROUP_FIELDS = ("group_id", "key")
_GROUP_ARRAYS = ("coordinator_keys", "groups", "groups_names", "group_ids")


def request_facts(api: int, broker: int, body: RequestBody, metadata: MetadataStore | None) -> RequestFacts:
    facts = RequestFacts(api, broker)
    for name in _TOPIC_ARRAYS:
        for topic in getattr(body, name, None) or ():
            tname = _topic_name(topic, metadata)
            if tname is None:
                continue
            parts: list[int | None] = [*_partition_indexes(topic)] or [None]
            facts.partitions.update((tname, p) for p in parts)
    for name in _GROUP_FIELDS:
        value = getattr(body, name, None)
        if isinstance(value, str):
            facts.groups.add(value)
    for name in _GROUP_ARRAYS:
        for item in getattr(body, name, None) or ():
            if isinstance(item, str):
                facts.groups.add(item)
    return facts


def _topic_name(topic: object, metadata: MetadataStore | None) -> str | None:
    if isinstance(topic, str):
        return topic
    for attr in ("name", "topic"):
        value = getattr(topic, attr, None)
        if isinstance(value, str):
            return value
    topic_id = getattr(topic, "topic_id", None)
    if topic_id is not None and metadata is not None:
        return metadata.topic_name(topic_id)
    return None


def _partition_indexes(topic: object) -> Iterator[int]:
    for name in _PARTITION_ARRAYS:
        for item in getattr(topic, name, None) or ():
            if isinstance(item, int):
                yield int(item)
                continue
            for attr in ("index", "partition_index", "partition"):
                value = getattr(item, attr, None)
                if isinstance(value, int):
                    yield int(value)
                    break


def new_injection(api: str | int, errors: Iterable[str | int], *, broker: int | None = None,
                  topic: str | None = None, partition: int | None = None,
                  group: str | None = None) -> ErrorInjection:
    """Validate names and build an injection (ValueError naming the bad argument)."""
    if isinstance(errors, (str, int)):
        raise ValueError("errors must be a list of error names or codes")
    codes = deque(error_code(e) for e in errors)
    if not codes:
        raise ValueError("errors must name at least one error")
    if partition is not None and topic is None:
        raise ValueError("partition needs topic")
    return ErrorInjection(api_key(api), codes, broker=broker, topic=topic,
                          partition=None if partition is None else int(partition), group=group)
