"""RequestHandlerHelper: how a handler sends its response when client quotas may apply (Kafka's).

``send_response_maybe_throttle`` is the path of every client API but Produce and Fetch (which
weigh their byte quotas too) and the broker-to-broker ones: the request's handler-thread time
is recorded against the client's ``request_percentage`` quota; over it, the response carries the
throttle time (``throttle_time_ms``, set on any response that has the field) and the connection
is muted for that long after the response (KIP-219, ``throttle``).
``send_response_exempt_throttle`` records the time as exempt (WriteTxnMarkers, a follower's
fetch). ``send_response_maybe_throttle_with_controller_quota`` takes the larger of the request
quota's and the controller mutation quota's throttle times (CreateTopics, CreatePartitions,
DeleteTopics).

Quotas apply to requests from the network only: in-process requests (replica fetchers, the
coordinators' own, benchmarks and tests calling a broker directly) have no connection to mute
and are answered as they are.

The user a quota is looked up for is the name of the request's principal (``quota_user``): who
the connection authenticated as, ``ANONYMOUS`` on a PLAINTEXT listener, as in Kafka.
"""
from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import TYPE_CHECKING, Callable

from kafka_emu.broker.server.quota.client_quota_manager import ClientQuotaManager
from kafka_emu.broker.server.quota.controller_mutation_quota_manager import ControllerMutationQuota
from kafka_emu.broker.server.quota.quota_factory import QuotaManagers

if TYPE_CHECKING:
    from kafka_emu.broker.network.request_channel import Request, RequestChannel, ResponseBody
    from kafka_emu.timer.time import Time


def quota_user(request: Request) -> str:
    """The name of the request's principal (Kafka's ``Session.sanitizedUser``: quota entities'
    names are compared unsanitized here, on both sides)."""
    return request.principal.name


def client_id_of(request: Request) -> str:
    return request.client_id or ""


def with_throttle_time(body: ResponseBody, throttle_time_ms: int) -> ResponseBody:
    """``body`` with its ``throttle_time`` field set (kio entities; a version without the field
    is returned as it is: the channel is still muted, as Kafka does)."""
    if throttle_time_ms <= 0 or not dataclasses.is_dataclass(body) or \
            "throttle_time" not in {f.name for f in dataclasses.fields(body)}:
        return body
    return dataclasses.replace(body, throttle_time=timedelta(milliseconds=throttle_time_ms))   # type: ignore[type-var]


class _ChannelThrottle:
    """Kafka's ``ThrottleCallback`` for one request: the request channel's start and end."""

    __slots__ = ("request_channel", "request")

    def __init__(self, request_channel: RequestChannel, request: Request) -> None:
        self.request_channel = request_channel
        self.request = request

    def start_throttling(self) -> None:
        self.request_channel.start_throttling(self.request)

    def end_throttling(self) -> None:
        self.request_channel.end_throttling(self.request)


class RequestHandlerHelper:
    def __init__(self, request_channel: RequestChannel, quotas: QuotaManagers | None, time: Time) -> None:
        self.request_channel = request_channel
        self.quotas = quotas
        self.time = time

    def applies_to(self, request: Request) -> bool:
        """Whether quotas can apply: the broker has them, some quota is set, and the request came
        off the network. Every recording below is a no-op without a quota (Kafka's
        ``quotasEnabled``), so this one test spares a request its quota calls until one is set."""
        quotas = self.quotas
        return quotas is not None and request.processor_id >= 0 and quotas.any_enabled()

    def throttle(self, manager: ClientQuotaManager, request: Request, throttle_time_ms: int) -> None:
        """Mute the request's connection for ``throttle_time_ms`` after its response."""
        manager.throttle(quota_user(request), client_id_of(request), _ChannelThrottle(self.request_channel, request),
                         throttle_time_ms)

    def request_thread_time_ns(self, request: Request) -> int:
        """Kafka's ``requestThreadTimeNanos``: from dequeue to local completion (now, if the
        handler is still at it)."""
        end = request.api_local_complete_time_ns or self.time.nanoseconds()
        return max(end - request.dequeue_time_ns, 0) if request.dequeue_time_ns else 0

    def maybe_record_and_get_throttle_time_ms(self, request: Request) -> int:
        assert self.quotas is not None
        return self.quotas.request.maybe_record_request_time(
            quota_user(request), client_id_of(request), self.request_thread_time_ns(request), self.time.milliseconds())

    def send_response_maybe_throttle(self, request: Request, body: ResponseBody, close_connection: bool = False) -> None:
        if body is None:   # no answer (a closed connection): nothing to record
            self.request_channel.send_response(request, body, close_connection)
            return
        self.send_response_maybe_throttle_with(request, lambda throttle_ms: with_throttle_time(body, throttle_ms))

    def send_response_maybe_throttle_with(self, request: Request, create_response: Callable[[int], ResponseBody]
                                          ) -> None:
        """The same for a response written with its throttle time (an ``EncodedResponse``):
        ``create_response(throttle_time_ms)`` (Kafka's ``sendResponseMaybeThrottle`` callback)."""
        throttle_ms = 0
        if self.applies_to(request):
            throttle_ms = self.maybe_record_and_get_throttle_time_ms(request)
            if throttle_ms > 0:
                assert self.quotas is not None
                self.throttle(self.quotas.request, request, throttle_ms)
        self.request_channel.send_response(request, create_response(throttle_ms))

    def send_response_exempt_throttle(self, request: Request, body: ResponseBody) -> None:
        if self.applies_to(request):
            assert self.quotas is not None
            self.quotas.request.maybe_record_exempt(self.request_thread_time_ns(request), self.time.milliseconds())
        self.request_channel.send_response(request, body)

    def send_response_maybe_throttle_with_controller_quota(self, mutation_quota: ControllerMutationQuota,
                                                           request: Request, body: ResponseBody) -> None:
        if not self.applies_to(request):
            self.request_channel.send_response(request, body)
            return
        assert self.quotas is not None
        controller_ms = mutation_quota.throttle_time()
        request_ms = self.maybe_record_and_get_throttle_time_ms(request)
        if controller_ms > request_ms:
            self.throttle(self.quotas.controller_mutation, request, controller_ms)
        elif request_ms > 0:
            self.throttle(self.quotas.request, request, request_ms)
        self.request_channel.send_response(request, with_throttle_time(body, max(controller_ms, request_ms)))
