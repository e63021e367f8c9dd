"""ClientRequestQuotaManager: ``request_percentage``, the share of broker threads a client may use
(KIP-124, Kafka's).

A request's handler-thread time (from the moment a handler took it until it answered or parked
it: Kafka's ``requestThreadTimeNanos``) is recorded as a percentage of one thread-second, so a
quota of 200 is two threads' worth; the quota sensor's ``Rate`` is then percent of a thread
over the window. Throttle times are capped at one quota window
(``quota.window.size.seconds``, Kafka's ``boundedThrottleTime``), and requests the quota does not
apply to (broker-to-broker ones, a follower's fetch) are recorded in ``exempt-request-time``
once quotas exist.

Difference from Kafka on purpose: only handler-thread time is recorded; Kafka also adds, after
the response is sent, the network thread's time for the request (``recordNetworkThreadTimeCallback``).
"""
from __future__ import annotations

from kafka_emu.broker.server.quota.client_quota_manager import (
    ClientQuotaConfig,
    ClientQuotaManager,
    QuotaManagerSnapshot,
    QuotaType,
)
from kafka_emu.broker.server.quota.stats import QuotaSensor, QuotaViolation, throttle_time_ms
from kafka_emu.timer.time import Time

NANOS_TO_PERCENTAGE_PER_SECOND = 100.0 / 1_000_000_000


def nanos_to_percentage(nanos: int) -> float:
    return nanos * NANOS_TO_PERCENTAGE_PER_SECOND


class ClientRequestQuotaManager(ClientQuotaManager):
    value_metric = "request-time"

    def __init__(self, config: ClientQuotaConfig, time: Time, thread_name_prefix: str = "",
                 broker_id: int | None = None) -> None:
        super().__init__(config, QuotaType.REQUEST, time, thread_name_prefix, broker_id)
        self.max_throttle_time_ms = config.quota_window_size_seconds * 1000
        self.exempt_sensor = QuotaSensor(self._quota_metric_config(None))   # exempt-request-time, never expires

    def maybe_record_request_time(self, user: str, client_id: str, thread_time_ns: int, now_ms: int) -> int:
        """Record a request's handler-thread time; its throttle time (0 without quotas)."""
        return self.maybe_record_and_get_throttle_time_ms(user, client_id, nanos_to_percentage(thread_time_ns),
                                                          now_ms)

    def maybe_record_exempt(self, thread_time_ns: int, now_ms: int) -> None:
        if self.quotas_enabled:
            self.exempt_sensor.record(nanos_to_percentage(thread_time_ns), now_ms, False)

    def throttle_time(self, violation: QuotaViolation) -> int:
        return min(throttle_time_ms(violation), self.max_throttle_time_ms)

    def snapshot(self) -> QuotaManagerSnapshot:
        snapshot = super().snapshot()
        exempt = self.exempt_sensor.measure_rate(self.time.milliseconds()) if self.quotas_enabled else None
        return QuotaManagerSnapshot(snapshot.quota_type, snapshot.queue_size, snapshot.clients, exempt)
