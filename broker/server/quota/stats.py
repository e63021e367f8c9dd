"""The sampled statistics client quotas are measured with (Kafka's ``org.apache.kafka.common.metrics``).

``MetricConfig`` is a statistic's window: ``samples`` samples of ``window_ms`` each and, for a
quota, an upper ``bound``. A sampled statistic (Kafka's ``SampledStat``) keeps up to
``samples + 1`` samples (the extra one overlaps the start of the measured window); a record
goes to the current sample, or starts a new one once the current sample is ``window_ms`` old,
recycling the oldest. Samples with no event for ``samples * window_ms`` are reset when measured
(``purge_obsolete``).

* ``Rate``: the sum of the samples divided by the elapsed time (``window_size``): from the
  oldest sample's start to now, but at least ``samples - 1`` full windows, so a client's first
  burst is not measured over a few milliseconds (Kafka's ``Rate.windowSize``).
* ``Avg``: sum over count (the throttle-time metric).
* ``TokenBucket`` (KIP-599, controller mutations): credits refilled at ``bound`` per second up
  to a burst of ``samples * window * bound``; a quota is exhausted when the credits are below 0.

``QuotaSensor`` is Kafka's ``Sensor`` with one quota-bearing statistic: ``record`` adds a value
and, when asked, checks the bound, raising ``QuotaViolation`` with the measured value; Kafka's
``QuotaUtils.throttleTime`` turns it into the delay that brings the rate back to the bound:
(value - bound) / bound * window size.

Locking: a sensor's ``lock`` guards its statistics (handler threads record, scrapes measure);
``record`` and ``check_quota`` take it, as Kafka's synchronized ``Sensor.record`` does.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MetricConfig:
    samples: int = 2
    window_ms: int = 30_000
    bound: float | None = None   # the quota's upper bound; None: no quota


class QuotaViolation(Exception):
    """A record took a statistic past its bound (Kafka's ``QuotaViolationException``)."""

    def __init__(self, value: float, bound: float, window_ms: int) -> None:
        super().__init__(f"{value} is above the quota bound {bound}")
        self.value = value
        self.bound = bound
        self.window_ms = window_ms   # the window the value was measured over (Rate), else 0


class _Sample:
    __slots__ = ("value", "event_count", "start_ms", "last_event_ms")

    def __init__(self, now_ms: int) -> None:
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.event_count = 0
        self.start_ms = now_ms
        self.last_event_ms = now_ms


class SampledStat:
    """Kafka's ``SampledStat``: a value kept over rotating samples (see the module docstring)."""

    def __init__(self) -> None:
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= config.window_ms:
            sample = self._advance(config, now_ms)
        sample.value += value
        sample.event_count += 1
        sample.last_event_ms = now_ms

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def _advance(self, config: MetricConfig, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (config.samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def purge_obsolete(self, config: MetricConfig, now_ms: int) -> None:
        expire_age = config.samples * config.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms)

    def oldest(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return min(self._samples, key=lambda s: s.start_ms)

    def total(self, config: MetricConfig, now_ms: int) -> tuple[float, int]:
        """(sum of the values, number of events) over the live samples."""
        self.purge_obsolete(config, now_ms)
        return sum(s.value for s in self._samples), sum(s.event_count for s in self._samples)


class Rate(SampledStat):
    """Kafka's ``Rate`` over a ``WindowedSum``: per second."""

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        value, _ = self.total(config, now_ms)
        return value / (self.window_size(config, now_ms) / 1000.0)

    def window_size(self, config: MetricConfig, now_ms: int) -> int:
        """Elapsed ms the rate divides by: since the oldest sample, at least ``samples - 1``
        full windows (Kafka's ``Rate.windowSize``), never 0."""
        self.purge_obsolete(config, now_ms)
        elapsed = now_ms - self.oldest(now_ms).start_ms
        full_windows = elapsed // config.window_ms
        min_full_windows = config.samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * config.window_ms
        return max(elapsed, 1)


class Avg(SampledStat):
    """Kafka's ``Avg``: NaN without events."""

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        value, count = self.total(config, now_ms)
        return value / count if count else math.nan


class TokenBucket:
    """Kafka's ``TokenBucket`` (see the module docstring); without a bound it measures +inf."""

    def __init__(self) -> None:
        self.tokens = 0.0
        self.last_update_ms = 0

    def measure(self, config: MetricConfig, now_ms: int) -> float:
        if config.bound is None:
            return math.inf
        self._refill(config, now_ms)
        return self.tokens

    def record(self, config: MetricConfig, value: float, now_ms: int) -> None:
        if config.bound is None:
            return
        self._refill(config, now_ms)
        self.tokens = min(self._burst(config), self.tokens - value)

    def _refill(self, config: MetricConfig, now_ms: int) -> None:
        assert config.bound is not None
        self.tokens = min(self._burst(config), self.tokens + config.bound * (now_ms - self.last_update_ms) / 1000.0)
        self.last_update_ms = now_ms

    @staticmethod
    def _burst(config: MetricConfig) -> float:
        assert config.bound is not None
        return config.samples * config.window_ms / 1000.0 * config.bound


class QuotaSensor:
    """A sensor with one quota statistic (a ``Rate``, or a ``TokenBucket`` for controller
    mutations, which also keep a plain ``Rate`` of what was recorded); ``config`` changes when
    the quota does (Kafka's ``KafkaMetric.config``)."""

    # the mutation-rate Rate beside a token bucket is measured with the metrics' default window
    # (Kafka registers it without the quota's config)
    MUTATION_RATE_CONFIG = MetricConfig()

    def __init__(self, config: MetricConfig, token_bucket: bool = False) -> None:
        self.config = config
        self.lock = threading.Lock()
        self.token_bucket = TokenBucket() if token_bucket else None
        self.rate = Rate()   # the quota's statistic, or (token bucket) the mutation rate
        self.last_record_ms = 0

    def _rate_config(self) -> MetricConfig:
        return self.config if self.token_bucket is None else self.MUTATION_RATE_CONFIG

    def record(self, value: float, now_ms: int, check_quota: bool = True) -> None:
        """Record ``value``; with ``check_quota``, raise ``QuotaViolation`` once it is past the
        bound (the value stays recorded, as in Kafka)."""
        with self.lock:
            self._record(value, now_ms)
            if check_quota:
                self._check(now_ms)

    def check_then_record(self, value: float, now_ms: int) -> None:
        """Raise ``QuotaViolation`` if the quota is already exhausted, else record ``value``
        (even past the bound): one step under the lock (a strict controller mutation quota)."""
        with self.lock:
            self._check(now_ms)
            self._record(value, now_ms)

    def _record(self, value: float, now_ms: int) -> None:
        self.last_record_ms = now_ms
        self.rate.record(self._rate_config(), value, now_ms)
        if self.token_bucket is not None:
            self.token_bucket.record(self.config, value, now_ms)

    def _check(self, now_ms: int) -> None:
        config = self.config
        if config.bound is None:
            return
        if self.token_bucket is not None:
            tokens = self.token_bucket.measure(config, now_ms)
            if tokens < 0:
                raise QuotaViolation(tokens, config.bound, 0)
            return
        value = self.rate.measure(config, now_ms)
        if value > config.bound:
            raise QuotaViolation(value, config.bound, self.rate.window_size(config, now_ms))

    def measure(self, now_ms: int) -> float:
        """The quota statistic now: the rate, or the token bucket's credits."""
        with self.lock:
            if self.token_bucket is not None:
                return self.token_bucket.measure(self.config, now_ms)
            return self.rate.measure(self.config, now_ms)

    def measure_rate(self, now_ms: int) -> float:
        with self.lock:
            return self.rate.measure(self._rate_config(), now_ms)


class AvgSensor:
    """A sensor with an ``Avg`` (Kafka's throttle-time sensors)."""

    def __init__(self, config: MetricConfig) -> None:
        self.config = config
        self.lock = threading.Lock()
        self.avg = Avg()
        self.last_record_ms = 0

    def record(self, value: float, now_ms: int) -> None:
        with self.lock:
            self.last_record_ms = now_ms
            self.avg.record(self.config, value, now_ms)

    def measure(self, now_ms: int) -> float:
        with self.lock:
            return self.avg.measure(self.config, now_ms)


def throttle_time_ms(violation: QuotaViolation) -> int:
    """Kafka's ``QuotaUtils.throttleTime``: the delay that brings the observed rate O back to the
    bound T over the window W, if nothing else is recorded: (O - T) / T * W."""
    return round((violation.value - violation.bound) / violation.bound * violation.window_ms)


def token_bucket_throttle_time_ms(violation: QuotaViolation) -> int:
    """Kafka's ``ControllerMutationQuotaManager.throttleTimeMs``: the time the bucket needs to
    refill from its negative credits to zero."""
    return round(-violation.value / violation.bound * 1000)
