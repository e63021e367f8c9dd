"""TxnOffsetCommit (key 28), v0-v5: a transactional producer commits a group's offsets inside its
transaction (``send_offsets_to_transaction``).

Kafka's ``handleTxnOffsetCommitRequest``: unknown topics or partitions get
UNKNOWN_TOPIC_OR_PARTITION; the others go to the group coordinator's
``handle_txn_commit_offsets``, which writes them as the producer's transactional batch to the
group's ``__consumer_offsets`` partition; they are the group's committed offsets only once the
transaction's COMMIT marker lands there, and are dropped by an ABORT marker. First the partition
is verified with the transaction coordinator (KIP-890 part 1: it must be in the producer's
transaction, added by AddOffsetsToTxn): not in it ⇒ TRANSACTION_ABORTABLE (v4) or
INVALID_TXN_STATE (older), a fenced producer ⇒ INVALID_PRODUCER_EPOCH, a coordinator not ready ⇒
COORDINATOR_NOT_AVAILABLE (retried). v0-v1 answer COORDINATOR_LOAD_IN_PROGRESS as
COORDINATOR_NOT_AVAILABLE.

The answer is checked up front (so the error is the one of the request's version), then again by
the partition leader as the batch is appended under its verification guard, as Kafka does.
v5 (transaction version 2, Kafka's ``txnOffsetCommitRequestVersionToTransactionSupportedOperation``
ADD_PARTITION) adds the group's ``__consumer_offsets`` partition to the transaction instead
(``ReplicaManager.add_to_transaction``; the producer sends no AddOffsetsToTxn), whatever
``transaction.version`` is finalized, as Kafka does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import GROUP, TRANSACTIONAL_ID, Op, deny
from kafka_emu.broker.apis.find_coordinator import partition_for
from kafka_emu.broker.apis.group import OffsetCommitParts
from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

FIRST_ADD_PARTITION_VERSION = 5   # transaction version 2: no AddOffsetsToTxn, the partition is added here
_RETRIABLE_VERIFICATION = frozenset({Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE,
                                     Errors.NOT_COORDINATOR, Errors.CONCURRENT_TRANSACTIONS})


def verification_error(code: int, version: int) -> int:
    """The transaction coordinator's verification answer as a TxnOffsetCommit client gets it."""
    if code == Errors.PRODUCER_FENCED:
        return Errors.INVALID_PRODUCER_EPOCH
    if code == Errors.TRANSACTION_ABORTABLE and version < 4:
        return Errors.INVALID_TXN_STATE
    if code in _RETRIABLE_VERIFICATION:
        return Errors.COORDINATOR_NOT_AVAILABLE
    return code


def handle_txn_offset_commit(apis: KafkaApis, request: Request) -> None:
    body = request.body
    version = request.api_version
    # Kafka's handleTxnOffsetCommitRequest: WRITE on the transactional id, READ on the group, then
    # READ on each topic (OffsetCommitParts)
    if deny(apis, request, Op.WRITE, TRANSACTIONAL_ID, body.transactional_id,
            Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED) or \
            deny(apis, request, Op.READ, GROUP, body.group_id, Errors.GROUP_AUTHORIZATION_FAILED):
        return
    parts = OffsetCommitParts(apis, request, ApiKeys.TXN_OFFSET_COMMIT)
    offsets = parts.offsets

    def old_client_codes(code: int) -> int:
        return Errors.COORDINATOR_NOT_AVAILABLE if code == Errors.COORDINATOR_LOAD_IN_PROGRESS and version < 2 else code

    def callback(result: dict[tuple[str, int], int]) -> None:
        parts.respond(result, old_client_codes)

    gc = apis.group_coordinator
    if gc is None:
        callback({tp: Errors.COORDINATOR_NOT_AVAILABLE for tp in offsets})
        return
    if not offsets:
        callback({})
        return
    producer_id, producer_epoch = int(body.producer_id), int(body.producer_epoch)
    rm = apis.replica_manager
    check = rm.add_to_transaction if version >= FIRST_ADD_PARTITION_VERSION else rm.verify_transaction
    code = check(body.transactional_id, producer_id, producer_epoch, (OFFSETS_TOPIC, partition_for(apis, body.group_id)))
    if code != Errors.NONE:
        error = verification_error(code, version)
        callback({tp: error for tp in offsets})
        return
    gc.handle_txn_commit_offsets(body.group_id, body.transactional_id, producer_id, producer_epoch,
                                 getattr(body, "member_id", "") or "", getattr(body, "group_instance_id", None),
                                 int(getattr(body, "generation_id", -1)), offsets, callback)


APIS = (ApiSpec(ApiKeys.TXN_OFFSET_COMMIT, 0, 5, handle_txn_offset_commit),)
