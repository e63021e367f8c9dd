"""ControllerMutationQuotaManager: ``controller_mutation_rate``, partitions created or deleted per
second (KIP-599, Kafka's).

The quota is a ``TokenBucket`` (``stats``): credits refill at the quota per second up to
``controller.quota.window.num`` * ``controller.quota.window.size.seconds`` seconds' worth, and
each partition a CreateTopics, CreatePartitions or DeleteTopics request creates or deletes takes
one. A request gets a ``ControllerMutationQuota`` for its lifetime:

* strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): a topic whose partitions
  would take the bucket below zero while it is already exhausted is refused with
  THROTTLING_QUOTA_EXCEEDED (the client retries it after the throttle time); a mutation is let
  through whenever the bucket is not yet negative, even if it drives it negative;
* permissive (older versions, auto topic creation): every mutation goes through, and the
  request is throttled once the bucket is negative;
* unbounded, while no controller mutation quota exists.

The response is throttled by the larger of this quota's and the request quota's time (Kafka's
``sendResponseMaybeThrottleWithControllerQuota``); the throttle time is computed when the
response is sent, less the time elapsed since the violation (``throttle_time``).
"""
from __future__ import annotations

from typing import Protocol

from kafka_emu.broker.server.quota.client_quota_manager import (
    ClientQuotaConfig,
    ClientQuotaManager,
    ClientQuotaMetrics,
    ClientSensors,
    QuotaType,
)
from kafka_emu.broker.server.quota.stats import (
    MetricConfig,
    QuotaSensor,
    QuotaViolation,
    token_bucket_throttle_time_ms,
)
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.timer.time import Time


class ControllerMutationQuota(Protocol):
    """A request's view of its mutation quota (Kafka's trait)."""

    def record(self, permits: float) -> None:
        """Take ``permits`` partitions' worth; raises ``KafkaError(THROTTLING_QUOTA_EXCEEDED)``
        when a strict quota refuses them."""

    def throttle_time(self) -> int: ...


class UnboundedControllerMutationQuota:
    def record(self, permits: float) -> None:
        pass

    def throttle_time(self) -> int:
        return 0


UNBOUNDED = UnboundedControllerMutationQuota()


class _AbstractControllerMutationQuota:
    def __init__(self, time: Time, sensor: QuotaSensor) -> None:
        self.time = time
        self.sensor = sensor
        self.last_throttle_time_ms = 0
        self.last_recorded_time_ms = 0

    def _update_throttle_time(self, violation: QuotaViolation, now_ms: int) -> None:
        self.last_throttle_time_ms = token_bucket_throttle_time_ms(violation)
        self.last_recorded_time_ms = now_ms

    def throttle_time(self) -> int:
        """The throttle time recorded, less the time since (the response may be sent later)."""
        elapsed = self.time.milliseconds() - self.last_recorded_time_ms
        return max(0, self.last_throttle_time_ms - elapsed)


class StrictControllerMutationQuota(_AbstractControllerMutationQuota):
    def record(self, permits: float) -> None:
        now = self.time.milliseconds()
        try:
            self.sensor.check_then_record(permits, now)
        except QuotaViolation as violation:
            self._update_throttle_time(violation, now)
            raise KafkaError(Errors.THROTTLING_QUOTA_EXCEEDED, Errors.THROTTLING_QUOTA_EXCEEDED.message or "") from None


class PermissiveControllerMutationQuota(_AbstractControllerMutationQuota):
    def record(self, permits: float) -> None:
        now = self.time.milliseconds()
        try:
            self.sensor.record(permits, now, True)
        except QuotaViolation as violation:
            self._update_throttle_time(violation, now)


class ControllerMutationQuotaManager(ClientQuotaManager):
    value_metric = "tokens"

    def __init__(self, config: ClientQuotaConfig, time: Time, thread_name_prefix: str = "",
                 broker_id: int | None = None) -> None:
        super().__init__(config, QuotaType.CONTROLLER_MUTATION, time, thread_name_prefix, broker_id)

    def _new_quota_sensor(self, config: MetricConfig) -> QuotaSensor:
        return QuotaSensor(config, token_bucket=True)

    def throttle_time(self, violation: QuotaViolation) -> int:
        return token_bucket_throttle_time_ms(violation)

    def record_and_get_throttle_time_ms(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Strict: refused (and not recorded) while the bucket is already exhausted."""
        sensors = self.get_or_create_quota_sensors(user, client_id)
        try:
            sensors.quota_sensor.check_then_record(value, now_ms)
            return 0
        except QuotaViolation as violation:
            return self.throttle_time(violation)

    def new_quota_for(self, user: str, client_id: str, api_version: int,
                      strict_since_version: int) -> ControllerMutationQuota:
        """Strict from ``strict_since_version`` on, permissive below; unbounded without quotas."""
        if not self.quotas_enabled:
            return UNBOUNDED
        sensor = self.get_or_create_quota_sensors(user, client_id).quota_sensor
        if api_version >= strict_since_version:
            return StrictControllerMutationQuota(self.time, sensor)
        return PermissiveControllerMutationQuota(self.time, sensor)

    def new_permissive_quota_for(self, user: str, client_id: str) -> ControllerMutationQuota:
        if not self.quotas_enabled:
            return UNBOUNDED
        return PermissiveControllerMutationQuota(self.time, self.get_or_create_quota_sensors(user, client_id).quota_sensor)

    def _client_metrics(self, sensors: ClientSensors, now_ms: int) -> ClientQuotaMetrics:
        base = super()._client_metrics(sensors, now_ms)
        return ClientQuotaMetrics(base.user, base.client_id, base.value, base.throttle_time_ms,
                                  sensors.quota_sensor.measure_rate(now_ms))
