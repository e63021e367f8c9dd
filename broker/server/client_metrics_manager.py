"""ClientMetricsManager: client telemetry (KIP-714), Kafka's ``ClientMetricsManager`` with the
emulator's ``/metrics`` as its exporter plugin.

GetTelemetrySubscriptions (``get_subscription``): a client without an instance id (the zero uuid)
gets a new one; the client instance is created (or re-evaluated when the subscriptions changed
since, the store's ``client_metrics`` version) with the union of the metrics of every CLIENT_METRICS
subscription that matches its attributes (instance id, client id, software name and version from
the connection's ApiVersions, source address and port), ``*`` alone when one asks for all, at the
shortest of their intervals (default 5 minutes when none matches, with no metrics: the client then
pushes nothing). A second request before the push interval has passed since the last one is
THROTTLING_QUOTA_EXCEEDED, unless the last push failed with UNKNOWN_SUBSCRIPTION_ID or
UNSUPPORTED_COMPRESSION_TYPE. The answer: the instance id, a subscription id (CRC32C of the metrics
and interval, XOR the instance id's hash, as Kafka computes it), ZSTD/LZ4/GZIP/SNAPPY accepted,
``telemetry.max.bytes``, delta temporality.

PushTelemetry (``push``), in Kafka's order: the zero uuid is INVALID_REQUEST; a client that sent
``terminating`` before is INVALID_REQUEST; a push sooner than the interval after the last (except
the first after a GetTelemetrySubscriptions, or a terminating one) is THROTTLING_QUOTA_EXCEEDED; a
subscription id that is not the instance's current one is UNKNOWN_SUBSCRIPTION_ID; an unknown
compression type UNSUPPORTED_COMPRESSION_TYPE; metrics over ``telemetry.max.bytes``
TELEMETRY_TOO_LARGE. The payload is decompressed and decoded as an OTLP ``MetricsData``
(``opentelemetry-proto``); one that does not decode is INVALID_RECORD (Kafka's answer when its
plugin fails). Each data point is kept by (metric name, attributes): gauges and cumulative sums at
their value, delta sums added up (the subscription asks for delta temporality, as Kafka's does),
histograms and summaries as ``.count`` and ``.sum``. ``snapshot()`` gives them to the metrics
package, labelled by client instance id.

An instance not heard from for max(60 s, 3 push intervals) is forgotten (Kafka's expiration
timer), and so are its metrics; at most 16384 instances are kept (the oldest go first).

Locking: ``_lock`` guards the instances and the connections' client software; decoding a push
happens outside it. Safe from any request handler thread.
"""
from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Mapping, Protocol

import structlog
from crc32c import crc32c

from kafka_emu.broker.server.client_metrics_config import (
    ALL_SUBSCRIBED_METRICS, CLIENT_ID, CLIENT_INSTANCE_ID, CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION,
    CLIENT_SOURCE_ADDRESS, CLIENT_SOURCE_PORT, INTERVAL_MS_DEFAULT, subscription,
)
from kafka_emu.broker.storage import compression
from kafka_emu.common.errors import Errors
from kafka_emu.timer.time import Time

_log = structlog.get_logger("broker.client_metrics")

ZERO_UUID = uuid.UUID(int=0)
# Kafka's Uuid.RESERVED: the zero uuid and Uuid.ONE_UUID
RESERVED_UUIDS = frozenset((ZERO_UUID, uuid.UUID(int=1)))
ACCEPTED_COMPRESSION_TYPES = (compression.ZSTD, compression.LZ4, compression.GZIP, compression.SNAPPY)
KNOWN_COMPRESSION_TYPES = frozenset((compression.NONE, *ACCEPTED_COMPRESSION_TYPES))
CACHE_EXPIRY_MS = 60_000
CACHE_MAX_SIZE = 16384
_NEVER = -(1 << 62)

MetricKey = tuple[str, tuple[tuple[str, str], ...]]   # (metric name, sorted attributes)


class ClientMetricsStore(Protocol):
    """What the manager reads of the controller state: ``MetadataStore.client_metrics``."""

    def client_metrics(self) -> tuple[int, dict[str, dict[str, object]]]: ...


@dataclass(frozen=True)
class RequestContext:
    """Who sent a telemetry request (Kafka's ``RequestContext`` fields the manager reads)."""

    client_id: str | None
    connection_id: str
    client_host: str


@dataclass(frozen=True)
class SubscriptionAnswer:
    """A GetTelemetrySubscriptions answer; ``error`` other than NONE: only it counts."""

    error: int
    client_instance_id: uuid.UUID = ZERO_UUID
    subscription_id: int = 0
    push_interval_ms: int = 0
    requested_metrics: tuple[str, ...] = ()


@dataclass
class _Instance:
    """Kafka's ``ClientMetricsInstance`` plus what the exporter keeps of its pushes."""

    instance_id: uuid.UUID
    attributes: dict[str, str | None]
    subscription_version: int
    subscription_id: int
    metrics: tuple[str, ...]
    push_interval_ms: int
    last_get_ms: int = _NEVER
    last_push_ms: int = _NEVER
    last_seen_ms: int = 0
    terminating: bool = False
    last_error: int = Errors.NONE
    values: dict[MetricKey, float] = field(default_factory=dict)
    pushes: int = 0
    throttles: int = 0
    export_errors: int = 0


@dataclass(frozen=True)
class ClientTelemetrySnapshot:
    """One client instance as ``/metrics`` shows it."""

    client_instance_id: str
    client_id: str
    values: tuple[tuple[str, str, float], ...]   # (metric name, attributes "k=v,...", value)
    pushes: int
    throttles: int
    export_errors: int


@dataclass(frozen=True)
class ClientMetricsSnapshot:
    instances: tuple[ClientTelemetrySnapshot, ...]
    unknown_subscription_requests: int


def _java_uuid_hash(value: uuid.UUID) -> int:
    """Kafka's ``Uuid.hashCode``: the high and low 32 bits of msb XOR lsb, XORed."""
    h = (value.int >> 64) ^ (value.int & ((1 << 64) - 1))
    return ((h >> 32) ^ h) & 0xFFFFFFFF


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def subscription_id(metrics: tuple[str, ...], push_interval_ms: int, instance_id: uuid.UUID) -> int:
    """Kafka's ``computeSubscriptionId``: CRC32C of the metrics' set text and the interval, XOR
    the instance id's hash (the set's order: sorted, where Java's is its hash order)."""
    text = "[" + ", ".join(metrics) + "]" + str(push_interval_ms)
    return _int32(crc32c(text.encode()) ^ _java_uuid_hash(instance_id))


def _attributes(kvs: object) -> tuple[tuple[str, str], ...]:
    out = []
    for kv in kvs:  # type: ignore[attr-defined]
        value = kv.value
        kind = value.WhichOneof("value")
        out.append((kv.key, "" if kind is None else str(getattr(value, kind))))
    return tuple(sorted(out))


def decode_metrics(payload: bytes) -> list[tuple[MetricKey, float, bool]]:
    """(key, value, is a delta) of every number in an OTLP ``MetricsData``; ValueError if it is not one."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.metrics.v1 import metrics_pb2

    data = metrics_pb2.MetricsData()
    try:
        data.ParseFromString(payload)
    except DecodeError as exc:
        raise ValueError(str(exc)) from None
    delta = metrics_pb2.AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
    out: list[tuple[MetricKey, float, bool]] = []
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                kind = metric.WhichOneof("data")
                if kind in ("gauge", "sum"):
                    is_delta = kind == "sum" and metric.sum.aggregation_temporality == delta
                    for point in getattr(metric, kind).data_points:
                        number = point.as_double if point.WhichOneof("value") == "as_double" else point.as_int
                        out.append(((metric.name, _attributes(point.attributes)), float(number), is_delta))
                elif kind in ("histogram", "exponential_histogram", "summary"):
                    points = getattr(metric, kind).data_points
                    is_delta = kind != "summary" and getattr(metric, kind).aggregation_temporality == delta
                    for point in points:
                        attrs = _attributes(point.attributes)
                        out.append(((metric.name + ".count", attrs), float(point.count), is_delta))
                        out.append(((metric.name + ".sum", attrs), float(point.sum), is_delta))
    return out


def _source_port(connection_id: str) -> str | None:
    """The client's port from a network connection id (``local:port-peer:port-index``)."""
    parts = connection_id.rsplit("-", 2)
    return parts[1].rpartition(":")[2] if len(parts) == 3 else None


class ClientMetricsManager:
    def __init__(self, store: ClientMetricsStore, time: Time, telemetry_max_bytes: int) -> None:
        self.store = store
        self.time = time
        self.telemetry_max_bytes = telemetry_max_bytes
        self._lock = threading.Lock()
        self._instances: OrderedDict[uuid.UUID, _Instance] = OrderedDict()
        # connection id -> (software name, version) from its ApiVersions v3+ (bounded like the instances)
        self._software: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._unknown_subscription_requests = 0

    # ------------------------------------------------------------------ connections
    def record_client_software(self, connection_id: str, name: str, version: str) -> None:
        """What ApiVersions v3+ told of the client on ``connection_id`` (Kafka's ClientInformation)."""
        with self._lock:
            self._software[connection_id] = (name, version)
            self._software.move_to_end(connection_id)
            while len(self._software) > CACHE_MAX_SIZE:
                self._software.popitem(last=False)

    # ------------------------------------------------------------------ instances
    def _create(self, instance_id: uuid.UUID, attributes: dict[str, str | None], now: int) -> _Instance:
        version, configs = self.store.client_metrics()
        interval = INTERVAL_MS_DEFAULT
        metrics: set[str] = set()
        for name, stored in configs.items():
            sub = subscription(name, stored)  # type: ignore[arg-type]
            if sub.matches(attributes):
                metrics.update(sub.metrics)
                interval = min(interval, sub.interval_ms)
        chosen = (ALL_SUBSCRIBED_METRICS,) if ALL_SUBSCRIBED_METRICS in metrics else tuple(sorted(metrics))
        return _Instance(instance_id, attributes, version, subscription_id(chosen, interval, instance_id), chosen,
                         interval, last_seen_ms=now)

    def _instance(self, instance_id: uuid.UUID, ctx: RequestContext, now: int) -> _Instance:
        """The cached instance, created or re-evaluated as Kafka's ``clientInstance`` does (lock held)."""
        self._expire(now)
        instance = self._instances.get(instance_id)
        version, _ = self.store.client_metrics()
        if instance is None:
            software = self._software.get(ctx.connection_id, (None, None))
            attributes = {CLIENT_INSTANCE_ID: str(instance_id), CLIENT_ID: ctx.client_id,
                          CLIENT_SOFTWARE_NAME: software[0], CLIENT_SOFTWARE_VERSION: software[1],
                          CLIENT_SOURCE_ADDRESS: ctx.client_host or None,
                          CLIENT_SOURCE_PORT: _source_port(ctx.connection_id)}
            instance = self._create(instance_id, attributes, now)
        elif instance.subscription_version < version:
            renewed = self._create(instance_id, instance.attributes, now)
            renewed.values, renewed.pushes, renewed.throttles = instance.values, instance.pushes, instance.throttles
            renewed.export_errors = instance.export_errors
            instance = renewed
        instance.last_seen_ms = now
        self._instances[instance_id] = instance
        self._instances.move_to_end(instance_id)
        while len(self._instances) > CACHE_MAX_SIZE:
            self._instances.popitem(last=False)
        return instance

    def _expire(self, now: int) -> None:
        for instance_id in [i for i, inst in self._instances.items()
                            if now - inst.last_seen_ms > max(CACHE_EXPIRY_MS, 3 * inst.push_interval_ms)]:
            del self._instances[instance_id]

    # ------------------------------------------------------------------ requests
    def get_subscription(self, instance_id: uuid.UUID | None, ctx: RequestContext) -> SubscriptionAnswer:
        now = self.time.milliseconds()
        with self._lock:
            if instance_id is None or instance_id == ZERO_UUID:
                instance_id = uuid.uuid4()
                while instance_id in self._instances:
                    instance_id = uuid.uuid4()
            instance = self._instance(instance_id, ctx, now)
            since_last = now - max(instance.last_get_ms, instance.last_push_ms)
            if since_last < instance.push_interval_ms and instance.last_error not in (
                    Errors.UNKNOWN_SUBSCRIPTION_ID, Errors.UNSUPPORTED_COMPRESSION_TYPE):
                instance.throttles += 1
                return SubscriptionAnswer(Errors.THROTTLING_QUOTA_EXCEEDED)
            instance.last_get_ms = now
            instance.last_error = Errors.NONE
            return SubscriptionAnswer(Errors.NONE, instance_id, instance.subscription_id, instance.push_interval_ms,
                                      instance.metrics)

    def push(self, instance_id: uuid.UUID | None, subscription: int, terminating: bool, compression_type: int,
             metrics: bytes, ctx: RequestContext) -> int:
        """The error of one PushTelemetry (NONE: its metrics are kept)."""
        if instance_id is None or instance_id in RESERVED_UUIDS:
            return Errors.INVALID_REQUEST
        now = self.time.milliseconds()
        with self._lock:
            instance = self._instance(instance_id, ctx, now)
            error = self._validate_push(instance, subscription, terminating, compression_type, len(metrics), now)
            instance.terminating = terminating
            instance.last_error = error
            if error != Errors.NONE:
                return error
        if not metrics:
            return Errors.NONE
        try:
            points = decode_metrics(compression.decompress(compression_type, metrics)
                                    if compression_type != compression.NONE else metrics)
        except (compression.CompressionError, ValueError) as exc:   # Kafka: the exporter plugin failed
            _log.info("client_telemetry_undecodable", client_instance_id=str(instance_id), error=str(exc))
            with self._lock:
                instance.export_errors += 1
                instance.last_error = Errors.INVALID_RECORD
            return Errors.INVALID_RECORD
        with self._lock:
            for key, value, is_delta in points:
                instance.values[key] = instance.values.get(key, 0.0) + value if is_delta else value
            instance.pushes += 1
        return Errors.NONE

    def _validate_push(self, instance: _Instance, subscription: int, terminating: bool, compression_type: int,
                       size: int, now: int) -> int:
        """Kafka's ``validatePushRequest`` (lock held)."""
        if instance.terminating:
            return Errors.INVALID_REQUEST
        can_accept = instance.last_get_ms > instance.last_push_ms or \
            now - instance.last_push_ms >= instance.push_interval_ms
        if can_accept:
            instance.last_push_ms = now
        elif not terminating:
            instance.throttles += 1
            return Errors.THROTTLING_QUOTA_EXCEEDED
        if subscription != instance.subscription_id:
            self._unknown_subscription_requests += 1
            return Errors.UNKNOWN_SUBSCRIPTION_ID
        if compression_type not in KNOWN_COMPRESSION_TYPES:
            return Errors.UNSUPPORTED_COMPRESSION_TYPE
        if size > self.telemetry_max_bytes:
            return Errors.TELEMETRY_TOO_LARGE
        return Errors.NONE

    # ------------------------------------------------------------------ metrics
    def snapshot(self) -> ClientMetricsSnapshot:
        with self._lock:
            self._expire(self.time.milliseconds())
            instances = tuple(
                ClientTelemetrySnapshot(str(i.instance_id), i.attributes.get(CLIENT_ID) or "",
                                        tuple((name, ",".join(f"{k}={v}" for k, v in attrs), value)
                                              for (name, attrs), value in sorted(i.values.items())),
                                        i.pushes, i.throttles, i.export_errors)
                for i in self._instances.values())
            return ClientMetricsSnapshot(instances, self._unknown_subscription_requests)

    def client_values(self, instance_id: uuid.UUID) -> Mapping[MetricKey, float]:
        """A copy of what ``instance_id`` pushed (tests and control)."""
        with self._lock:
            instance = self._instances.get(instance_id)
            return dict(instance.values) if instance is not None else {}
