"""GroupOffsets: the committed and pending offsets of one group, whatever its type.

Kafka 4 keeps every group's offsets in the ``OffsetMetadataManager`` of the ``__consumer_offsets``
partition, keyed by group id, apart from the group objects. The emulator keeps them in the group
object (every group type derives from this class), so the group lock that guards the group
guards its offsets too; ``OffsetMetadataManager`` (``offset_metadata_manager.py``) holds the
logic that is not per group: appends, loads, fetches, expiration and tombstones. A group replaced
by a group of another type (a classic group converted to a consumer group and back) hands its
offsets over with ``take_offsets_from``.

Three kinds of offsets:
* committed (``offsets``), with where each record is in the log (``offset_positions``, Kafka's
  ``appendedBatchOffset``): log offsets for what was loaded, then a per-group counter in append
  order (appends of one group happen under its lock, so the counter orders them as the log does);
* pending consumer commits (``pending_offset_commits``): appended but not acknowledged yet;
* pending transactional commits (``pending_transactional_offset_commits``, producer id ->
  {partition: (append position or None until appended, offset)}): TxnOffsetCommit offsets that
  count once their transaction's COMMIT marker lands (Kafka's ``prepareTxnOffsetCommit`` /
  ``onTxnOffsetCommitAppend`` / ``failPendingTxnOffsetCommit`` / ``completePendingTxnOffsetCommit``).

Not thread-safe: the caller holds the owning group's lock.
"""
from __future__ import annotations

from typing import Callable, Iterable

from kafka_emu.coordinator.group.results import OffsetAndMetadata

TopicPartition = tuple[str, int]
# When an offset's retention period starts (Kafka's ``OffsetExpirationCondition``'s base timestamp).
ExpirationBase = Callable[[OffsetAndMetadata], int]


class IllegalStateError(RuntimeError):
    """Kafka's IllegalStateException."""


class GroupOffsets:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.pending_offset_commits: dict[TopicPartition, OffsetAndMetadata] = {}
        self.pending_transactional_offset_commits: dict[int, dict[TopicPartition, tuple[int | None, OffsetAndMetadata]]] = {}
        self.offset_positions: dict[TopicPartition, int] = {}
        self._next_position = 0

    # ------------------------------------------------------------------ what the group type says
    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Kafka's ``Group.isSubscribedToTopic``: offsets of subscribed topics never expire."""
        raise NotImplementedError

    def offset_expiration_base(self) -> ExpirationBase | None:
        """Kafka's ``Group.offsetExpirationCondition``: None while no offset of the group may expire."""
        raise NotImplementedError

    # ------------------------------------------------------------------ load and hand-over
    def initialize_offsets(self, offsets: dict[TopicPartition, OffsetAndMetadata],
                           positions: dict[TopicPartition, int] | None = None,
                           pending_txn_offsets: dict[int, dict[TopicPartition, tuple[int, OffsetAndMetadata]]] | None = None,
                           next_position: int = 0) -> None:
        """Offsets replayed from the log: committed ones (with their log offsets) and those of
        transactions still open at the end of the log."""
        self.offsets.update(offsets)
        self.offset_positions.update(positions or {})
        for producer_id, pending in (pending_txn_offsets or {}).items():
            self.pending_transactional_offset_commits.setdefault(producer_id, {}).update(pending)
        self._next_position = max(self._next_position, next_position)

    def take_offsets_from(self, other: "GroupOffsets") -> None:
        """This group replaces ``other`` (same id, another type): its offsets move over."""
        self.offsets = other.offsets
        self.pending_offset_commits = other.pending_offset_commits
        self.pending_transactional_offset_commits = other.pending_transactional_offset_commits
        self.offset_positions = other.offset_positions
        self._next_position = other._next_position

    def next_append_position(self) -> int:
        """The position of the record the caller appends now (group lock held)."""
        self._next_position += 1
        return self._next_position

    # ------------------------------------------------------------------ consumer commits
    def prepare_offset_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        self.pending_offset_commits.update(offsets)

    def _is_newer(self, tp: TopicPartition, position: int | None) -> bool:
        current = self.offset_positions.get(tp)
        return position is None or current is None or current < position

    def on_offset_commit_append(self, tp: TopicPartition, offset: OffsetAndMetadata,
                                position: int | None = None) -> None:
        if tp in self.pending_offset_commits and self._is_newer(tp, position):
            self.offsets[tp] = offset
            if position is not None:
                self.offset_positions[tp] = position
        if self.pending_offset_commits.get(tp) == offset:
            del self.pending_offset_commits[tp]

    def fail_pending_offset_write(self, tp: TopicPartition, offset: OffsetAndMetadata) -> None:
        if self.pending_offset_commits.get(tp) == offset:
            del self.pending_offset_commits[tp]

    # ------------------------------------------------------------------ transactional commits
    def prepare_txn_offset_commit(self, producer_id: int, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        pending = self.pending_transactional_offset_commits.setdefault(producer_id, {})
        for tp, om in offsets.items():
            pending[tp] = (None, om)

    def on_txn_offset_commit_append(self, producer_id: int, tp: TopicPartition, position: int,
                                    offset: OffsetAndMetadata) -> None:
        pending = self.pending_transactional_offset_commits.get(producer_id)
        if pending is not None and tp in pending and pending[tp][1] == offset:
            pending[tp] = (position, offset)

    def fail_pending_txn_offset_commit(self, producer_id: int, tp: TopicPartition) -> None:
        pending = self.pending_transactional_offset_commits.get(producer_id)
        if pending is not None:
            pending.pop(tp, None)
            if not pending:
                del self.pending_transactional_offset_commits[producer_id]

    def complete_pending_txn_offset_commit(self, producer_id: int, is_commit: bool) -> None:
        """The transaction's marker is in the log: on COMMIT its offsets become the committed
        ones unless a record written later already is; on ABORT they are dropped."""
        pending = self.pending_transactional_offset_commits.pop(producer_id, None)
        if not is_commit or pending is None:
            return
        for tp, (position, om) in pending.items():
            if position is None:
                raise IllegalStateError(
                    f"Trying to complete a transactional offset commit for producerId {producer_id} and "
                    f"groupId {self.group_id} even though the offset commit record itself hasn't been "
                    f"appended to the log.")
            if self._is_newer(tp, position):
                self.offsets[tp] = om
                self.offset_positions[tp] = position

    # ------------------------------------------------------------------ queries
    def has_pending_offset_commits_from_producer(self, producer_id: int) -> bool:
        return producer_id in self.pending_transactional_offset_commits

    def has_pending_offset_commits_for_partition(self, tp: TopicPartition) -> bool:
        return tp in self.pending_offset_commits or any(
            tp in pending for pending in self.pending_transactional_offset_commits.values())

    def has_pending_offset_commits(self) -> bool:
        return bool(self.pending_offset_commits) or bool(self.pending_transactional_offset_commits)

    def has_offsets(self) -> bool:
        return (bool(self.offsets) or bool(self.pending_offset_commits)
                or bool(self.pending_transactional_offset_commits))

    def offset(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        return self.offsets.get(tp)

    # ------------------------------------------------------------------ removal
    def remove_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        removed = {}
        for tp in tps:
            self.pending_offset_commits.pop(tp, None)
            for pending in self.pending_transactional_offset_commits.values():
                pending.pop(tp, None)
            self.offset_positions.pop(tp, None)
            v = self.offsets.pop(tp, None)
            if v is not None:
                removed[tp] = v
        return removed

    def remove_expired_offsets(self, current_ms: int, retention_ms: int) -> dict[TopicPartition, OffsetAndMetadata]:
        """Kafka's ``cleanupExpiredOffsets`` for this group: an offset of a topic the group does
        not subscribe to, with no pending commit, expires at its ``expire_timestamp`` (old
        records) or ``retention_ms`` after the group type's base timestamp."""
        base = self.offset_expiration_base()
        if base is None:
            return {}
        found = {}
        for tp, om in self.offsets.items():
            if self.is_subscribed_to_topic(tp[0]) or tp in self.pending_offset_commits:
                continue
            if om.expire_timestamp is None:
                if current_ms - base(om) >= retention_ms:
                    found[tp] = om
            elif current_ms >= om.expire_timestamp:
                found[tp] = om
        for tp in found:
            del self.offsets[tp]
            self.offset_positions.pop(tp, None)
        return found
