"""ShareFetch (78) and ShareAcknowledge (79), v1-2 as Kafka 4.2 serves them (v0 was Kafka 4.0's
early access, removed in 4.1; v2 adds the record-limit acquire mode, KIP-1206, and RENEW
acknowledgements, KIP-1222) → ``SharePartitionManager``: Kafka's ``KafkaApis.handleShareFetchRequest``
and ``handleShareAcknowledgeRequest``.

ShareFetch: the share session is checked or opened (``new_context``), the acknowledgements it
carries are applied, and while they are written records are acquired from the session's
partitions, waiting up to ``MaxWaitMs`` in the ShareFetch purgatory; the answer lists each partition that has
records, an error or an acknowledgement result (every session partition for a session's first
request), the records' batches with the ``AcquiredRecords`` ranges the member now holds, the
acquisition lock timeout (the group's ``share.record.lock.duration.ms``) and the endpoints of the
leaders named in NOT_LEADER_OR_FOLLOWER answers. A RENEW acknowledgement (``IsRenewAck``) only
acknowledges, as Kafka's does. ShareAcknowledge applies acknowledgements only; epoch -1 closes the
session after them.

Authorization as Kafka's: READ on the group (else GROUP_AUTHORIZATION_FAILED for the request)
and READ on each topic fetched from or acknowledged (else TOPIC_AUTHORIZATION_FAILED on its
partitions, as the fetch's or the acknowledgement's error).

Top-level errors: UNSUPPORTED_VERSION while share groups are off (``emulator.share.version=0``);
INVALID_GROUP_ID for an empty group id, INVALID_REQUEST for an empty member id, acknowledgements
in a session's first request, RENEW without ``IsRenewAck`` (or before v2); the session errors
(SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED). Served from
Kafka 4.1 (``emulator.kafka.version``: v1 as 4.1, v1-2 as 4.2); not listed as 3.9 or 4.0.
"""
from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from kafka_emu.broker.apis._common import ZERO_THROTTLE, broker_endpoint, duration_ms, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.apis.share_group import share_groups_enabled
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.server.auth_helper import GROUP, TOPIC, Op, authorize, filter_authorized
from kafka_emu.broker.server.share.share_partition import AcknowledgeType
from kafka_emu.broker.server.share.share_partition_manager import (
    FINAL_EPOCH, INITIAL_EPOCH, PartitionResult, ShareFetchRequestState, TopicIdPartition,
)
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.network.request_channel import Request
    from kafka_emu.broker.server.kafka_apis import KafkaApis

RECORD_LIMIT_MODE = 1       # ShareAcquireMode (v2): exactly MaxRecords
RENEW_VERSION = 2


Acks = dict[TopicIdPartition, list[tuple[int, int, tuple[int, ...]]]]


def _acks(topics: Any) -> Acks:
    out: Acks = {}
    for t in topics:
        for p in t.partitions:
            if p.acknowledgement_batches:
                out[(t.topic_id, int(p.partition_index))] = [
                    (int(b.first_offset), int(b.last_offset), tuple(int(x) for x in b.acknowledge_types))
                    for b in p.acknowledgement_batches]
    return out


def _renews(acks: Acks) -> bool:
    return any(AcknowledgeType.RENEW in types for batches in acks.values() for _f, _l, types in batches)


class _Answer:
    """Builds a ShareFetch or ShareAcknowledge response."""

    def __init__(self, apis: KafkaApis, request: Request, api_key: int) -> None:
        self.apis = apis
        self.request = request
        self.cls = response_schema(api_key, request.api_version)
        self.topic_cls = item_cls(self.cls, "responses")
        self.partition_cls = item_cls(self.topic_cls, "partitions")
        self.leader_cls = item_cls(self.partition_cls, "current_leader")
        self.endpoint_cls = item_cls(self.cls, "node_endpoints")
        self.acquired_cls = item_cls(self.partition_cls, "acquired_records") \
            if api_key == ApiKeys.SHARE_FETCH else None

    def error(self, code: int, message: str | None = None) -> None:
        respond(self.apis, self.request, build(self.cls, throttle_time=ZERO_THROTTLE, error_code=code,
                                               error_message=message, acquisition_lock_timeout=timedelta(0),
                                               responses=(), node_endpoints=()))

    def send(self, partitions: list[TopicIdPartition], results: dict[TopicIdPartition, PartitionResult],
             ack_errors: dict[TopicIdPartition, int], lock_timeout_ms: int) -> None:
        by_topic: dict[uuid.UUID, list[object]] = {}
        leaders: set[int] = set()
        for tp in partitions:
            r = results.get(tp) or PartitionResult()
            if r.error == Errors.NOT_LEADER_OR_FOLLOWER and r.leader_id >= 0:
                leaders.add(r.leader_id)
            fields: dict[str, object] = {
                "partition_index": tp[1], "error_code": r.error, "error_message": None,
                "acknowledge_error_code": ack_errors.get(tp, Errors.NONE), "acknowledge_error_message": None,
                "current_leader": build(self.leader_cls, leader_id=r.leader_id, leader_epoch=r.leader_epoch)}
            if self.acquired_cls is not None:
                fields["records"] = r.records
                fields["acquired_records"] = tuple(build(self.acquired_cls, first_offset=a.first_offset,
                                                         last_offset=a.last_offset, delivery_count=a.delivery_count)
                                                   for a in r.acquired)
            else:
                fields["error_code"] = ack_errors.get(tp, r.error)
            by_topic.setdefault(tp[0], []).append(build(self.partition_cls, **fields))
        endpoints = []
        for broker_id in sorted(leaders):
            info = self.apis.metadata.broker(broker_id)
            if info is not None:
                host, port = broker_endpoint(info)
                endpoints.append(build(self.endpoint_cls, node_id=broker_id, host=host, port=port, rack=info.rack))
        respond(self.apis, self.request, build(
            self.cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE, error_message=None,
            acquisition_lock_timeout=timedelta(milliseconds=lock_timeout_ms),
            responses=tuple(build(self.topic_cls, topic_id=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
            node_endpoints=tuple(endpoints)))


def _check(apis: KafkaApis, request: Request, answer: _Answer) -> bool:
    body = request.body
    if apis.share_partition_manager is None or not share_groups_enabled(apis):
        answer.error(Errors.UNSUPPORTED_VERSION)
        return False
    if not authorize(apis, request, Op.READ, GROUP, body.group_id):
        answer.error(Errors.GROUP_AUTHORIZATION_FAILED)
        return False
    if not body.group_id:
        answer.error(Errors.INVALID_GROUP_ID)
        return False
    if not body.member_id:
        answer.error(Errors.INVALID_REQUEST, "Member id can't be empty.")
        return False
    return True


def _validate_acks(request: Request, acks: Acks, answer: _Answer) -> bool:
    renew_ack = bool(getattr(request.body, "is_renew_ack", False))
    if _renews(acks) and (request.api_version < RENEW_VERSION or not renew_ack):
        answer.error(Errors.INVALID_REQUEST, "Renew acknowledgements need IsRenewAck (ShareFetch/ShareAcknowledge v2).")
        return False
    return True


def _unreadable(apis: KafkaApis, request: Request, partitions: list[TopicIdPartition]) -> set[TopicIdPartition]:
    """The partitions of topics the principal may not READ (Kafka: a share consumer needs READ on
    each topic it fetches from or acknowledges). Unknown topic ids are left to the manager
    (UNKNOWN_TOPIC_ID)."""
    names = {tp: apis.metadata.topic_name(tp[0]) for tp in partitions}
    readable = filter_authorized(apis, request, Op.READ, TOPIC, [n for n in names.values() if n is not None])
    return {tp for tp, name in names.items() if name is not None and name not in readable}


def _prologue(apis: KafkaApis, request: Request, api_key: int) -> tuple[_Answer, Acks] | None:
    """What both handlers check first; None when the request was answered with an error."""
    answer = _Answer(apis, request, api_key)
    if not _check(apis, request, answer):
        return None
    acks = _acks(request.body.topics)
    if not _validate_acks(request, acks, answer):
        return None
    return answer, acks


def handle_share_fetch(apis: KafkaApis, request: Request) -> None:
    checked = _prologue(apis, request, ApiKeys.SHARE_FETCH)
    if checked is None:
        return
    answer, acks = checked
    manager = apis.share_partition_manager
    body = request.body
    group_id, member_id, epoch = body.group_id, body.member_id, int(body.share_session_epoch)
    requested = [(t.topic_id, int(p.partition_index)) for t in body.topics for p in t.partitions]
    forgotten = [(t.topic_id, int(p)) for t in body.forgotten_topics_data for p in t.partitions]
    error, session = manager.new_context(group_id, member_id, epoch, requested, forgotten, bool(acks))
    if error != Errors.NONE or session is None:
        answer.error(error)
        return
    lock_timeout = manager.record_lock_duration_ms(group_id)
    renew_only = bool(getattr(body, "is_renew_ack", False))
    fetch_from = [] if epoch == FINAL_EPOCH or renew_only else list(session.partitions)
    denied = _unreadable(apis, request, fetch_from + list(acks))
    denied_fetches = {tp: PartitionResult(Errors.TOPIC_AUTHORIZATION_FAILED) for tp in fetch_from if tp in denied}
    denied_acks = {tp: Errors.TOPIC_AUTHORIZATION_FAILED for tp in acks if tp in denied}
    fetch_from = [tp for tp in fetch_from if tp not in denied]
    acks = {tp: batches for tp, batches in acks.items() if tp not in denied}
    state = ShareFetchRequestState(group_id, member_id, fetch_from, int(body.max_bytes), int(body.max_records),
                                   int(getattr(body, "share_acquire_mode", 0)) == RECORD_LIMIT_MODE)

    # the acknowledgements are applied at once; their write and the fetch then proceed together,
    # and the answer goes out when both are done (Kafka's combined acknowledge and fetch futures)
    done: dict[str, Any] = {}
    lock = threading.Lock()

    def complete(part: str, value: Any) -> None:
        with lock:
            done[part] = value
            if len(done) < 2:
                return
        results, ack_errors = {**done["fetch"], **denied_fetches}, {**done["acks"], **denied_acks}
        listed = list(dict.fromkeys(
            (list(session.partitions) if epoch == INITIAL_EPOCH else []) + list(results) + list(ack_errors)))
        answer.send(listed, results, ack_errors, lock_timeout)

    manager.acknowledge(group_id, member_id, acks, lambda ack_errors: complete("acks", ack_errors))
    manager.fetch(state, duration_ms(body.max_wait), lambda results: complete("fetch", results))


def handle_share_acknowledge(apis: KafkaApis, request: Request) -> None:
    checked = _prologue(apis, request, ApiKeys.SHARE_ACKNOWLEDGE)
    if checked is None:
        return
    answer, acks = checked
    manager = apis.share_partition_manager
    body = request.body
    group_id, member_id, epoch = body.group_id, body.member_id, int(body.share_session_epoch)
    error = manager.session_epoch_ok(group_id, member_id, epoch)
    if error != Errors.NONE:
        answer.error(error)
        return
    listed = [(t.topic_id, int(p.partition_index)) for t in body.topics for p in t.partitions]
    denied = _unreadable(apis, request, list(acks))

    def done(ack_errors: dict[TopicIdPartition, int]) -> None:
        if epoch == FINAL_EPOCH:
            manager.close_session(group_id, member_id)
        ack_errors.update({tp: Errors.TOPIC_AUTHORIZATION_FAILED for tp in denied})
        answer.send(listed, {}, ack_errors, manager.record_lock_duration_ms(group_id))

    manager.acknowledge(group_id, member_id, {tp: b for tp, b in acks.items() if tp not in denied}, done)


APIS = (
    ApiSpec(ApiKeys.SHARE_FETCH, 1, 2, handle_share_fetch),
    ApiSpec(ApiKeys.SHARE_ACKNOWLEDGE, 1, 2, handle_share_acknowledge),
)
