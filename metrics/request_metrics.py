"""Request timing histograms and error counts, fed by the broker's ``request_listeners``.

Kafka's ``RequestChannel.Request.updateRequestMetrics`` splits a request's life into the same
five phases from the timestamps the request carries; the emulator's ``Request`` has the same
fields (``*_ns``, one monotonic clock). A listener runs on whichever thread completes the
request (a network processor after the send, or the thread that answered an in-process
request), so it must be cheap: it computes six differences and observes prometheus_client
histograms, whose children each guard their buckets with their own small lock. Nothing here
waits for a scrape: the registry's collect() only reads those children.

Timestamps a request never reached are 0: an in-process request has no response queue or
send; a request answered from its handler has no remote phase. Missing stamps collapse onto the
previous phase, as Kafka does for ``apiLocalCompleteTimeNanos < 0``.

ErrorsPerSec counts the error codes of the response the request was answered with
(``metrics.error_counts``), by API name only, as Kafka's ``updateErrorMetrics`` does. Difference
from Kafka: an in-process follower fetch (answered with the replica manager's results, not a
response entity) adds nothing to it.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, TypeVar

import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram

from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.metrics import names
from kafka_emu.metrics.error_counts import error_counts, error_name
from kafka_emu.metrics.sources import RequestListener, RequestView

_log = structlog.get_logger("metrics.request_metrics")

_NS_PER_MS = 1_000_000.0
_FETCH = ApiKeys.FETCH.name
_Key = tuple[str, str, int]
_T = TypeVar("_T")


def request_metric_names(request: RequestView) -> tuple[str, ...]:
    """The ``request`` label values a request is recorded under (Fetch: two, as in Kafka)."""
    if request.api_name == _FETCH:
        return ("FetchFollower" if request.is_from_follower else "FetchConsumer", _FETCH)
    return (request.api_name,)


def phase_times_ms(request: RequestView) -> tuple[float, float, float, float, float, float] | None:
    """(total, request queue, local, remote, response queue, send) in ms; None if never stamped.

    ``end_time_ns`` (send finished) is used when the request carries it; otherwise the end is
    the latest stamp present, so an in-process request's send time is 0 rather than a guess.
    """
    start = request.start_time_ns
    if start <= 0:
        return None
    dequeue = request.dequeue_time_ns or start
    response_complete = request.response_complete_time_ns
    local = request.api_local_complete_time_ns or response_complete or dequeue
    response_complete = response_complete or local
    response_dequeue = request.response_dequeue_time_ns or response_complete
    end = request.end_time_ns or response_dequeue

    def ms(later: int, earlier: int) -> float:
        return max(0, later - earlier) / _NS_PER_MS

    return (ms(end, start), ms(dequeue, start), ms(local, dequeue), ms(response_complete, local),
            ms(response_dequeue, response_complete), ms(end, response_dequeue))


class RequestMetrics:
    """The request histograms, RequestsPerSec and ErrorsPerSec counters of one cluster registry.

    One instance per registry; each broker gets a listener bound to its ``broker_id`` label.
    prometheus_client caches label children in a dict guarded by the parent's lock, so the
    per-request cost after the first request of a type is a dict lookup plus six observes.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self._histograms: list[Histogram] = [
            Histogram(spec.name, spec.help, labelnames=spec.all_labels, registry=registry,
                      buckets=names.TIME_BUCKETS_MS)
            for spec in names.REQUEST_TIME_HISTOGRAMS
        ]
        self._requests = Counter(names.REQUESTS.name, names.REQUESTS.help,
                                 labelnames=names.REQUESTS.all_labels, registry=registry)
        self._errors = Counter(names.ERRORS.name, names.ERRORS.help,
                               labelnames=names.ERRORS.all_labels, registry=registry)
        # (broker_id, request name, version) -> (six histogram children, counter child), and
        # (broker_id, request name, error code) -> counter child; written under _children_lock,
        # read without it (dict reads are atomic under the GIL).
        self._children: dict[_Key, tuple[tuple[Any, ...], Any]] = {}
        self._error_children: dict[_Key, Any] = {}
        self._children_lock = threading.Lock()
        self.listener_errors = 0

    def _cached(self, cache: dict[_Key, _T], key: _Key, make: Callable[[], _T]) -> _T:
        """``cache[key]``, made under ``_children_lock`` the first time (read without it)."""
        found = cache.get(key)
        if found is None:
            with self._children_lock:
                found = cache.get(key)
                if found is None:
                    found = cache[key] = make()
        return found

    def _children_for(self, broker: str, request_name: str, version: int) -> tuple[tuple[Any, ...], Any]:
        return self._cached(self._children, (broker, request_name, version), lambda: (
            tuple(h.labels(broker, request_name) for h in self._histograms),
            self._requests.labels(broker, request_name, str(version))))

    def _error_child(self, broker: str, request_name: str, code: int) -> Any:
        return self._cached(self._error_children, (broker, request_name, code),
                            lambda: self._errors.labels(broker, request_name, error_name(code)))

    def forget_broker(self, broker_id: int) -> None:
        """Drop a broker's request series (it stopped, or was replaced by a restarted one).

        A stopped Kafka broker's beans vanish and a restarted one counts from zero; doing the
        same lets Prometheus mark the old series stale and treat the new ones as a reset. A
        request completing concurrently may land in a dropped child and be lost, which only
        happens to a broker that is going away.
        """
        broker = str(broker_id)
        with self._children_lock:
            keys = [k for k in self._children if k[0] == broker]
            for key in keys:
                del self._children[key]
            error_keys = [k for k in self._error_children if k[0] == broker]
            for error_key in error_keys:
                del self._error_children[error_key]
        for _, request_name, version in keys:
            for histogram in self._histograms:
                try:
                    histogram.remove(broker, request_name)
                except KeyError:
                    pass  # already removed with another version of the same request
            try:
                self._requests.remove(broker, request_name, str(version))
            except KeyError:
                pass
        for _, request_name, code in error_keys:
            try:
                self._errors.remove(broker, request_name, error_name(code))
            except KeyError:
                pass  # two unknown codes share UNKNOWN_SERVER_ERROR

    def observe(self, broker_id: int, request: RequestView) -> None:
        """Record one completed request for ``broker_id``."""
        times = phase_times_ms(request)
        broker = str(broker_id)
        for request_name in request_metric_names(request):
            histograms, counter = self._children_for(broker, request_name, request.api_version)
            counter.inc()
            if times is not None:
                for histogram, value in zip(histograms, times):
                    histogram.observe(value)
        for code, count in error_counts(request.response_body).items():
            self._error_child(broker, request.api_name, code).inc(count)

    def listener_for(self, broker_id: int) -> RequestListener:
        """A ``request_listeners`` entry for one broker; it never raises into the caller."""

        def on_request_complete(request: RequestView) -> None:
            try:
                self.observe(broker_id, request)
            except Exception:
                self.listener_errors += 1
                _log.exception("request_metrics_failed", broker_id=broker_id)

        on_request_complete.__qualname__ = f"RequestMetrics.listener[broker {broker_id}]"
        return on_request_complete

