"""Incremental fetch sessions (KIP-227) for follower fetches: FetchSession and FetchSessionCache.

A follower's replica fetcher sends every partition it fetches from a leader once (a full fetch
that creates a session), and from then on only the partitions whose fetch state changed
(``updated``) and those it stopped fetching (``removed``), with the session id and the next
epoch. The leader keeps the session's partitions with their last fetch state and, per session,
the set of partitions that changed since the last response (``changed``): the follower's own
updates, and every leader-side event that gives the follower something to read or learn (an
append, a high-watermark move, a role change). A fetch reads only ``changed`` and answers with
only those partitions; a fetch with nothing changed parks in the Fetch purgatory under the
session itself as key and is woken when a partition of the session changes, not on every append
of the broker. An idle session therefore costs a parked operation, not a read of each of its
partitions, and a produce costs each follower a read of the one partition it wrote.

Kafka's rules for the session id and epoch (``FetchMetadata``, ``FetchSessionCache``):

* id 0, epoch -1 (``FINAL_EPOCH``): a sessionless full fetch.
* id 0, epoch 0 (``INITIAL_EPOCH``): a full fetch that creates a session; the answer carries
  its id, or 0 when the cache has no free slot (``max.incremental.fetch.session.cache.slots``)
  and no session idle longer than ``EVICTION_MS`` to evict: the fetch is then sessionless.
* id X, epoch 0: close session X, then as id 0, epoch 0.  id X, epoch -1: close X, sessionless.
* id X, epoch N > 0: incremental; X unknown → ``FETCH_SESSION_ID_NOT_FOUND``; N not the
  session's next epoch → ``INVALID_FETCH_SESSION_EPOCH``; id 0 with N > 0 →
  ``INVALID_FETCH_SESSION_EPOCH``. The fetcher answers either error with a new full fetch.

Differences from Kafka, on purpose: sessions are kept for the emulator's in-process follower
fetches only (consumers' Fetch requests stay sessionless: the answer carries session id 0, which
every client treats as "no session"); a fetch reads only the changed partitions instead of every
partition of the session, so a follower learns a leader's log start offset moved by retention
only when that partition next changes; unchanged partitions count as fetched at the session's
last fetch for the leader's ISR bookkeeping (``FetchSessionCache.quiescent``).

Locking: ``FetchSessionCache._lock`` guards the session map, the partition → sessions index and
every session's ``partitions``, ``changed`` and ``epoch`` (``mark_changed`` first reads the
marks without it, to skip a mark already pending). It is never held while a partition lock is
taken or a purgatory is triggered.
"""
from __future__ import annotations

import itertools
import threading
from typing import TYPE_CHECKING, Iterable, Iterator, NamedTuple

from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.partition import LogReadResult
    from kafka_emu.broker.server.fetch_params import PartitionFetchInfo
    from kafka_emu.timer.time import Time

TP = tuple[str, int]
INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_MS = 120_000   # Kafka's FetchSessionCache: min.incremental.fetch.session.eviction.ms


class SessionFetchResponse(NamedTuple):
    """The answer to an in-process follower fetch that carries session fields."""

    error: int
    session_id: int
    results: list[tuple[TP, "LogReadResult"]]


def next_epoch(epoch: int) -> int:
    """Kafka's ``FetchMetadata.nextEpoch``: epochs wrap to 1, never back to 0."""
    return 1 if epoch >= 0x7FFFFFFF else epoch + 1


class FetchSession:
    """One follower fetcher's session on a leader (also its key in the Fetch purgatory)."""

    __slots__ = ("id", "replica_id", "partitions", "changed", "hw_moved", "epoch", "last_used_ms", "closed")

    def __init__(self, session_id: int, replica_id: int, now_ms: int) -> None:
        self.id = session_id
        self.replica_id = replica_id
        self.partitions: dict[TP, PartitionFetchInfo] = {}
        self.changed: set[TP] = set()    # new data or a role change: wakes a parked fetch
        self.hw_moved: set[TP] = set()   # only the HW moved: reported, does not wake (as Kafka)
        self.epoch = next_epoch(INITIAL_EPOCH)   # the epoch the next incremental fetch must carry
        self.last_used_ms = now_ms
        self.closed = False

    def __repr__(self) -> str:
        return f"FetchSession(id={self.id}, replica={self.replica_id}, partitions={len(self.partitions)})"


class FetchSessionCache:
    def __init__(self, max_slots: int, time: "Time") -> None:
        self.max_slots = max_slots
        self.time = time
        self._lock = threading.Lock()
        self._sessions: dict[int, FetchSession] = {}
        self._by_partition: dict[TP, set[FetchSession]] = {}
        self._ids = itertools.count(1)
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    # ------------------------------------------------------------------ fetch contexts
    def new_context(self, replica_id: int, session_id: int, epoch: int,
                    updated: Iterable[tuple[TP, "PartitionFetchInfo"]],
                    removed: Iterable[TP]) -> tuple[int, FetchSession | None]:
        """(error, session) for a fetch; session None means sessionless (read what was sent).

        A full fetch (epoch 0 or -1) replaces the partitions of any session it closes; an
        incremental one applies ``updated`` and ``removed``. Every sent partition is marked
        changed, so the fetch reads it.
        """
        now = self.time.milliseconds()
        with self._lock:
            if epoch > INITIAL_EPOCH:
                session = self._sessions.get(session_id) if session_id != INVALID_SESSION_ID else None
                if session_id == INVALID_SESSION_ID:
                    return Errors.INVALID_FETCH_SESSION_EPOCH, None
                if session is None or session.replica_id != replica_id:
                    return Errors.FETCH_SESSION_ID_NOT_FOUND, None
                if session.epoch != epoch:
                    return Errors.INVALID_FETCH_SESSION_EPOCH, None
                for tp in removed:
                    if session.partitions.pop(tp, None) is not None:
                        self._unindex(tp, session)
                    session.changed.discard(tp)
                    session.hw_moved.discard(tp)
                self._add(session, updated)
                session.epoch = next_epoch(epoch)
                session.last_used_ms = now
                return Errors.NONE, session
            if epoch < FINAL_EPOCH:
                return Errors.INVALID_FETCH_SESSION_EPOCH, None
            if session_id != INVALID_SESSION_ID:
                old = self._sessions.get(session_id)
                if old is not None and old.replica_id == replica_id:
                    self._remove(old)
            if epoch == FINAL_EPOCH or not self._make_room(now):
                return Errors.NONE, None
            session = FetchSession(next(self._ids), replica_id, now)
            self._sessions[session.id] = session
            self._add(session, updated)
            return Errors.NONE, session

    def _add(self, session: FetchSession, updated: Iterable[tuple[TP, "PartitionFetchInfo"]]) -> None:
        for tp, info in updated:
            if tp not in session.partitions:
                self._by_partition.setdefault(tp, set()).add(session)
            session.partitions[tp] = info
            session.changed.add(tp)

    def _make_room(self, now_ms: int) -> bool:
        """Lock held. A free slot, or one freed by evicting the least recently used session
        idle for more than ``EVICTION_MS``."""
        if len(self._sessions) < self.max_slots:
            return True
        lru = min(self._sessions.values(), key=lambda s: s.last_used_ms, default=None)
        if lru is None or now_ms - lru.last_used_ms <= EVICTION_MS:
            return False
        self._remove(lru)
        self.evictions += 1
        return True

    def _remove(self, session: FetchSession) -> None:
        self._sessions.pop(session.id, None)
        for tp in session.partitions:
            self._unindex(tp, session)
        session.closed = True

    def _unindex(self, tp: TP, session: FetchSession) -> None:
        holders = self._by_partition.get(tp)
        if holders is not None:
            holders.discard(session)
            if not holders:
                del self._by_partition[tp]

    def close_all(self) -> list[FetchSession]:
        """Broker shutdown: every session closes (its parked fetch may then complete)."""
        with self._lock:
            sessions = list(self._sessions.values())
            for s in sessions:
                self._remove(s)
        return sessions

    # ------------------------------------------------------------------ leader-side changes
    def mark_changed(self, tp: TP, wake: bool = True) -> list[FetchSession]:
        """Partition ``tp`` has something new for its followers: mark it in the sessions holding
        it; returns the sessions whose parked fetch (if any) must be tried now. ``wake`` false:
        only its HW moved (a parked follower fetch is not completed for that, as Kafka's
        DelayedFetch counts bytes only; the next answer carries the HW), so none.

        Only a session that had no change pending is returned: one with changes pending has
        been returned by the mark that made them pending, and no fetch parks on it until a
        fetch takes them (``DelayedSessionFetch`` completes at once on a session with changes),
        so a trigger for it would find nothing to complete. An append to a partition whose
        followers are busy fetching thus costs each session a set insertion, not a purgatory
        check."""
        holders = self._by_partition.get(tp)   # a plain dict read: most partitions have no session
        if not holders:
            return []
        # Without the lock: is ``tp`` pending in every holder already (a follower busy fetching
        # while the producers append)? Then nothing changes: a pending mark is taken by a fetch
        # that starts after it is seen here, so after the change being marked, and reads it.
        # (``tuple`` copies the set atomically under the GIL; ``tp in s.changed`` reads one set.)
        for s in tuple(holders):
            if tp not in s.changed and (wake or tp not in s.hw_moved):
                break
        else:
            return []
        with self._lock:
            holders = self._by_partition.get(tp, ())
            if not wake:
                for s in holders:
                    s.hw_moved.add(tp)
                return []
            woken = []
            for s in holders:
                changed = s.changed
                if not changed:
                    woken.append(s)
                changed.add(tp)
        return woken

    def take_changed(self, session: FetchSession) -> list[tuple[TP, "PartitionFetchInfo"]]:
        """The changed partitions of ``session`` with their fetch state; they are unmarked."""
        with self._lock:
            changed = session.changed | session.hw_moved if session.hw_moved else session.changed
            session.changed = set()
            session.hw_moved = set()
            parts = session.partitions
            return [(tp, parts[tp]) for tp in changed if tp in parts]

    def mark_unread(self, session: FetchSession, tps: Iterable[TP]) -> None:
        """Partitions a response had no room for: read them again next time."""
        with self._lock:
            session.changed.update(tp for tp in tps if tp in session.partitions)

    def quiescent(self, tp: TP) -> Iterator[tuple[int, "PartitionFetchInfo", int]]:
        """(replica id, fetch state, last fetch time) of each session holding ``tp`` unchanged:
        as far as the leader knows, that follower fetched it at that time at that offset."""
        with self._lock:
            holders = list(self._by_partition.get(tp, ()))
            out = [(s.replica_id, s.partitions[tp], s.last_used_ms) for s in holders
                   if tp not in s.changed and tp not in s.hw_moved and tp in s.partitions]
        return iter(out)
