"""ClientQuotaManager: one kind of client quota (Produce or Fetch bytes; the request and
controller-mutation managers extend it), per user and/or client id (Kafka's).

Quotas are set, with defaults, at eight levels; for a request the most specific one that exists
applies (Kafka's ``DefaultQuotaCallback.quotaLimit``):

    <user, client-id>  <user, default client-id>  <user>
    <default user, client-id>  <default user, default client-id>  <default user>
    <client-id>  <default client-id>

Usage is recorded in a sensor (a ``Rate`` over ``quota.window.num`` samples of
``quota.window.size.seconds``) per *metric tags* (user, client-id), which say who shares a quota:
with only client-id quotas the tags are ("", client-id) so every user of a client id shares it;
with only user quotas (user, ""); with only <user, client-id> quotas both; with several levels
in use, the tags of the level that applies (Kafka's ``quotaMetricTags``), so a <user> quota is
shared by that user's client ids and a <user, client-id> quota is its client's alone. Until a
first quota of this kind is set nothing is recorded at all (``quotas_enabled``, which then stays
true until restart, as in Kafka).

``record_and_get_throttle_time_ms`` records a value and returns the throttle time when the rate
went over the quota (``stats.throttle_time_ms``); ``throttle`` then records that time in the
client's throttle-time sensor and mutes the channel through a ``ThrottledChannel`` in this
manager's delay queue, unmuted by the ``ThrottledChannelReaper``. ``update_quota`` applies a
quota record (``quota_factory.QuotaManagers`` routes them here) and moves the sensors it affects
to the new bound at once. Sensors idle for an hour are dropped when the metrics are read (Kafka
expires them after ``InactiveSensorExpirationTimeSeconds``).

The user is the request's principal name: ``ANONYMOUS`` until authentication exists (issue 28),
as on Kafka's PLAINTEXT listener (``quota_user``).

Locking: ``_lock`` guards the overrides, ``quota_types_enabled`` and the sensor maps; a sensor's
own lock guards its statistics (``stats``). No lock is held while a callback runs.
"""
from __future__ import annotations

import enum
import math
import threading
from dataclasses import dataclass
from typing import Any

import structlog

from kafka_emu.broker.server.quota.stats import (
    AvgSensor,
    MetricConfig,
    QuotaSensor,
    QuotaViolation,
    throttle_time_ms,
)
from kafka_emu.broker.server.quota.throttled_channel import (
    ThrottleCallback,
    ThrottledChannel,
    ThrottledChannelQueue,
    ThrottledChannelReaper,
)
from kafka_emu.timer.time import Time

_log = structlog.get_logger("broker.quota")

ANONYMOUS = "ANONYMOUS"   # KafkaPrincipal.ANONYMOUS's name: every user of a PLAINTEXT listener
INACTIVE_SENSOR_EXPIRATION_MS = 3_600_000
NO_QUOTA = float(2 ** 63 - 1)   # Kafka's Long.MaxValue: the bound reported when no quota applies


class QuotaType(enum.Enum):
    """Kafka's ``QuotaType`` (its value names the metrics group and the reaper thread)."""

    FETCH = "Fetch"
    PRODUCE = "Produce"
    REQUEST = "Request"
    CONTROLLER_MUTATION = "ControllerMutation"


class _Default:
    """The default entity of a level (``<default>`` in Kafka's config paths)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<default>"


DEFAULT = _Default()
EntityName = str | _Default | None   # None: the entity has no such part


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """Kafka's ``KafkaQuotaEntity``: a user and/or client id, either of which may be DEFAULT."""

    user: EntityName = None
    client_id: EntityName = None


@dataclass(frozen=True, slots=True)
class ClientQuotaConfig:
    """Kafka's ``ClientQuotaManagerConfig``."""

    num_quota_samples: int = 11
    quota_window_size_seconds: int = 1


class QuotaTypes(enum.IntFlag):
    """Kafka's ``QuotaTypes``: which levels have ever had a quota."""

    NO_QUOTAS = 0
    CLIENT_ID = 1
    USER = 2
    USER_CLIENT_ID = 4


@dataclass(frozen=True, slots=True)
class ClientSensors:
    metric_tags: tuple[str, str]   # (user, client-id); "" where the level does not use it
    quota_sensor: QuotaSensor
    throttle_time_sensor: AvgSensor


@dataclass(frozen=True, slots=True)
class ClientQuotaMetrics:
    """One client's values at a scrape: Kafka's ``kafka.server:type=<quota type>,user=..,client-id=..``."""

    user: str
    client_id: str
    value: float            # byte-rate, request-time (percent) or, for mutations, tokens
    throttle_time_ms: float   # Avg of the throttle times in the metrics window (NaN: none)
    mutation_rate: float | None = None   # controller mutations only


@dataclass(frozen=True, slots=True)
class QuotaManagerSnapshot:
    quota_type: str
    queue_size: int                     # throttled channels waiting in the delay queue
    clients: tuple[ClientQuotaMetrics, ...]
    exempt_request_time: float | None = None   # the request manager's exempt-request-time


class ClientQuotaManager:
    """See the module docstring. ``start()`` starts the reaper; ``shutdown()`` stops it."""

    value_metric = "byte-rate"      # Kafka's quota metric name for this manager

    def __init__(self, config: ClientQuotaConfig, quota_type: QuotaType, time: Time,
                 thread_name_prefix: str = "", broker_id: int | None = None) -> None:
        self.config = config
        self.quota_type = quota_type
        self.time = time
        self._lock = threading.Lock()
        self._overrides: dict[QuotaEntity, float] = {}
        self.quota_types_enabled = QuotaTypes.NO_QUOTAS
        self._sensors: dict[tuple[str, str], ClientSensors] = {}
        self.queue_size = 0   # Kafka's "<type>-delayQueue" queue-size, written under _queue_lock
        self._queue_lock = threading.Lock()
        self._delay_queue = ThrottledChannelQueue(time)
        self.throttled_channel_reaper = ThrottledChannelReaper(
            self._delay_queue, f"{thread_name_prefix}ThrottledChannelReaper-{quota_type.value}",
            self._on_dequeued, time, broker_id)

    def start(self) -> None:
        self.throttled_channel_reaper.start()

    # ------------------------------------------------------------------ recording
    @property
    def quotas_enabled(self) -> bool:
        return self.quota_types_enabled != QuotaTypes.NO_QUOTAS

    def maybe_record_and_get_throttle_time_ms(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record only once quotas of this kind exist (no cost before)."""
        if self.quota_types_enabled == QuotaTypes.NO_QUOTAS:
            return 0
        return self.record_and_get_throttle_time_ms(user, client_id, value, now_ms)

    def record_and_get_throttle_time_ms(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        sensors = self.get_or_create_quota_sensors(user, client_id)
        try:
            sensors.quota_sensor.record(value, now_ms, True)
            return 0
        except QuotaViolation as violation:
            throttle_ms = self.throttle_time(violation)
            _log.debug("quota_violated", quota_type=self.quota_type.value, user=sensors.metric_tags[0],
                       client_id=sensors.metric_tags[1], throttle_time_ms=throttle_ms)
            return throttle_ms

    def throttle_time(self, violation: QuotaViolation) -> int:
        return throttle_time_ms(violation)

    def record_no_throttle(self, user: str, client_id: str, value: float) -> None:
        self.get_or_create_quota_sensors(user, client_id).quota_sensor.record(
            value, self.time.milliseconds(), False)

    def unrecord_quota_sensor(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a value recorded for a response that will not be sent (a throttled fetch
        answers empty): Kafka records its negation."""
        self.get_or_create_quota_sensors(user, client_id).quota_sensor.record(-value, now_ms, False)

    def get_max_value_in_quota_window(self, user: str, client_id: str) -> float:
        """The most that can be recorded at once without a certain throttle (a consumer fetch's
        bytes are capped to it): quota * (samples - 1) * window; unbounded without quotas."""
        if not self.quotas_enabled:
            return math.inf
        tags = self.get_or_create_quota_sensors(user, client_id).metric_tags
        with self._lock:
            limit = self._quota_limit(tags)
        if limit is None:
            return math.inf
        return limit * (self.config.num_quota_samples - 1) * self.config.quota_window_size_seconds

    def throttle(self, user: str, client_id: str, callback: ThrottleCallback, throttle_time_ms_: int) -> None:
        """Mute the client's channel for ``throttle_time_ms_`` (KIP-219) and record the time."""
        if throttle_time_ms_ <= 0:
            return
        sensors = self.get_or_create_quota_sensors(user, client_id)
        sensors.throttle_time_sensor.record(throttle_time_ms_, self.time.milliseconds())
        channel = ThrottledChannel(self.time, throttle_time_ms_, callback)
        with self._queue_lock:
            self.queue_size += 1
        self._delay_queue.add(channel)

    def _on_dequeued(self) -> None:
        with self._queue_lock:
            self.queue_size -= 1

    # ------------------------------------------------------------------ sensors
    def get_or_create_quota_sensors(self, user: str, client_id: str) -> ClientSensors:
        with self._lock:
            tags = self._quota_metric_tags(user, client_id)
            sensors = self._sensors.get(tags)
            if sensors is None:
                sensors = self._sensors[tags] = ClientSensors(
                    tags, self._new_quota_sensor(self._quota_metric_config(self._quota_limit(tags))),
                    AvgSensor(MetricConfig()))
            return sensors

    def _new_quota_sensor(self, config: MetricConfig) -> QuotaSensor:
        return QuotaSensor(config)

    def _quota_metric_config(self, limit: float | None) -> MetricConfig:
        return MetricConfig(self.config.num_quota_samples, self.config.quota_window_size_seconds * 1000, limit)

    def _quota_metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """Kafka's ``DefaultQuotaCallback.quotaMetricTags`` (``_lock`` held)."""
        enabled = self.quota_types_enabled
        if enabled in (QuotaTypes.NO_QUOTAS, QuotaTypes.CLIENT_ID):
            return "", client_id
        if enabled == QuotaTypes.USER:
            return user, ""
        if enabled == QuotaTypes.USER_CLIENT_ID:
            return user, client_id
        overrides = self._overrides
        if QuotaEntity(user, client_id) in overrides or QuotaEntity(user, DEFAULT) in overrides:
            return user, client_id
        if QuotaEntity(user) in overrides:
            return user, ""
        if QuotaEntity(DEFAULT, client_id) in overrides or QuotaEntity(DEFAULT, DEFAULT) in overrides:
            return user, client_id
        if QuotaEntity(DEFAULT) in overrides:
            return user, ""
        return "", client_id

    def _quota_limit(self, tags: tuple[str, str]) -> float | None:
        """Kafka's ``DefaultQuotaCallback.quotaLimit``: the bound for these metric tags, the
        most specific level first (``_lock`` held); None when none applies."""
        user, client_id = tags
        get = self._overrides.get
        if user and client_id:
            for entity in (QuotaEntity(user, client_id), QuotaEntity(user, DEFAULT),
                           QuotaEntity(DEFAULT, client_id), QuotaEntity(DEFAULT, DEFAULT)):
                if entity in self._overrides:
                    return get(entity)
        elif user:
            for entity in (QuotaEntity(user), QuotaEntity(DEFAULT)):
                if entity in self._overrides:
                    return get(entity)
        elif client_id:
            for entity in (QuotaEntity(None, client_id), QuotaEntity(None, DEFAULT)):
                if entity in self._overrides:
                    return get(entity)
        return None

    def quota(self, user: str, client_id: str) -> float:
        """The bound applying to this client (``NO_QUOTA`` when none; for tests and logs)."""
        with self._lock:
            limit = self._quota_limit(self._quota_metric_tags(user, client_id))
        return NO_QUOTA if limit is None else limit

    # ------------------------------------------------------------------ quota changes
    def update_quota(self, entity: QuotaEntity, quota: float | None) -> None:
        """Set (or, with None, remove) the quota of ``entity``; sensors already created take the
        new bound at once (Kafka's ``updateQuota`` and ``updateQuotaMetricConfigs``)."""
        with self._lock:
            if entity.user is not None:
                self.quota_types_enabled |= (QuotaTypes.USER_CLIENT_ID if entity.client_id is not None
                                             else QuotaTypes.USER)
            elif entity.client_id is not None:
                self.quota_types_enabled |= QuotaTypes.CLIENT_ID
            if quota is None:
                self._overrides.pop(entity, None)
            else:
                self._overrides[entity] = quota
            _log.info("quota_updated", quota_type=self.quota_type.value, entity=_describe(entity), quota=quota)
            for tags, sensors in self._sensors.items():
                limit = self._quota_limit(tags)
                if sensors.quota_sensor.config.bound != limit:
                    sensors.quota_sensor.config = self._quota_metric_config(limit)

    # ------------------------------------------------------------------ metrics and shutdown
    def snapshot(self) -> QuotaManagerSnapshot:
        """Each client's values now; sensors idle for an hour are dropped first."""
        now = self.time.milliseconds()
        with self._lock:
            for tags in [t for t, s in self._sensors.items()
                         if now - max(s.quota_sensor.last_record_ms, s.throttle_time_sensor.last_record_ms)
                         > INACTIVE_SENSOR_EXPIRATION_MS]:
                del self._sensors[tags]
            sensors = list(self._sensors.values())
        return QuotaManagerSnapshot(self.quota_type.value, self.queue_size,
                                    tuple(self._client_metrics(s, now) for s in sensors))

    def _client_metrics(self, sensors: ClientSensors, now_ms: int) -> ClientQuotaMetrics:
        user, client_id = sensors.metric_tags
        return ClientQuotaMetrics(user, client_id, sensors.quota_sensor.measure(now_ms),
                                  sensors.throttle_time_sensor.measure(now_ms))

    def initiate_shutdown(self) -> None:
        self.throttled_channel_reaper.initiate_shutdown()

    def shutdown(self) -> None:
        self.initiate_shutdown()
        self.throttled_channel_reaper.await_shutdown()


def _describe(entity: QuotaEntity) -> str:
    parts: list[Any] = []
    if entity.user is not None:
        parts.append(f"user {entity.user}")
    if entity.client_id is not None:
        parts.append(f"client-id {entity.client_id}")
    return " ".join(map(str, parts))
