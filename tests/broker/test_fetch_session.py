"""Incremental follower fetch sessions (KIP-227) and the HW-move completion of parked fetches.

Cache rules after Kafka's ``FetchSessionTest`` / ``FetchSessionCacheTest``; request-level
scenarios on the threadless ``ReplicaManager`` harness (MockTime/MockTimer), after
``ReplicaManagerTest``'s fetch cases.
"""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_emu.broker.server.fetch_session import (
    EVICTION_MS,
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchSessionCache,
    SessionFetchResponse,
    next_epoch,
)
from kafka_emu.broker.storage.record_batch import build_batch, iter_records
from kafka_emu.broker.server.fetch_params import ISOLATION_LOG_END, FetchParams, PartitionFetchInfo
from kafka_emu.common.errors import Errors
from kafka_emu.timer import MockTime
from broker_harness import TP, Harness

pytestmark = pytest.mark.timeout(30)

A, B, C = ("a", 0), ("a", 1), ("b", 0)


def info(offset: int = 0) -> PartitionFetchInfo:
    return PartitionFetchInfo(offset, 1 << 20)


# ---------------------------------------------------------------- the cache's rules

def test_full_fetch_creates_session_and_incremental_applies_updates_and_removals():
    """FetchSessionTest.testIncrementalFetchSession: the session keeps every partition sent in
    the full fetch; an incremental fetch changes only what it names."""
    cache = FetchSessionCache(10, MockTime())
    err, s = cache.new_context(1, 0, INITIAL_EPOCH, [(A, info()), (B, info())], [])
    assert err == Errors.NONE and s is not None and s.id > 0 and set(s.partitions) == {A, B}
    assert {tp for tp, _ in cache.take_changed(s)} == {A, B}
    err, s2 = cache.new_context(1, s.id, 1, [(C, info(5))], [A])
    assert err == Errors.NONE and s2 is s
    assert set(s.partitions) == {B, C} and s.partitions[C].fetch_offset == 5
    assert [tp for tp, _ in cache.take_changed(s)] == [C]
    assert cache.mark_changed(A) == []        # removed partitions leave the index
    assert cache.mark_changed(B) == [s]


def test_session_errors():
    """FetchSessionTest.testFetchRequestsWithSessionErrors: unknown id, wrong epoch, id 0 with
    an epoch, another replica's session."""
    cache = FetchSessionCache(10, MockTime())
    _, s = cache.new_context(1, 0, INITIAL_EPOCH, [(A, info())], [])
    assert cache.new_context(1, s.id + 99, 1, [], [])[0] == Errors.FETCH_SESSION_ID_NOT_FOUND
    assert cache.new_context(1, s.id, 2, [], [])[0] == Errors.INVALID_FETCH_SESSION_EPOCH
    assert cache.new_context(1, 0, 3, [], [])[0] == Errors.INVALID_FETCH_SESSION_EPOCH
    assert cache.new_context(2, s.id, 1, [], [])[0] == Errors.FETCH_SESSION_ID_NOT_FOUND
    assert cache.new_context(1, s.id, 1, [], []) == (Errors.NONE, s)    # still usable
    assert cache.new_context(1, s.id, 2, [], []) == (Errors.NONE, s)


def test_close_with_final_epoch_and_reopen_with_initial_epoch():
    """FetchSessionTest.testSessionless / testFullFetchWithSessionIdClosesOld: id X epoch -1
    closes X and is sessionless; id X epoch 0 closes X and opens a new session."""
    cache = FetchSessionCache(10, MockTime())
    _, s = cache.new_context(1, 0, INITIAL_EPOCH, [(A, info())], [])
    err, s2 = cache.new_context(1, s.id, INITIAL_EPOCH, [(B, info())], [])
    assert err == Errors.NONE and s2 is not None and s2.id != s.id and s.closed
    assert cache.get(s.id) is None and cache.mark_changed(A) == []
    assert cache.new_context(1, s2.id, FINAL_EPOCH, [(B, info())], []) == (Errors.NONE, None)
    assert len(cache) == 0 and s2.closed
    assert cache.new_context(1, 0, FINAL_EPOCH, [(A, info())], []) == (Errors.NONE, None)
    assert len(cache) == 0


def test_no_free_slot_means_sessionless_until_a_session_is_idle_long_enough():
    """FetchSessionCacheTest.testSessionCache / testEvictableSessions: a full cache answers
    without a session (id 0); a session unused for longer than the eviction time is evicted
    for a new one, least recently used first."""
    time = MockTime()
    cache = FetchSessionCache(2, time)
    _, s1 = cache.new_context(1, 0, INITIAL_EPOCH, [(A, info())], [])
    time.advance(10)
    _, s2 = cache.new_context(2, 0, INITIAL_EPOCH, [(A, info())], [])
    assert cache.new_context(3, 0, INITIAL_EPOCH, [(A, info())], []) == (Errors.NONE, None)
    time.advance(EVICTION_MS - 5)
    cache.new_context(2, s2.id, 1, [], [])          # s2 used; s1 idle > EVICTION_MS
    err, s3 = cache.new_context(3, 0, INITIAL_EPOCH, [(A, info())], [])
    assert s3 is not None and s1.closed and cache.get(s1.id) is None and cache.evictions == 1
    assert cache.new_context(1, s1.id, 1, [], [])[0] == Errors.FETCH_SESSION_ID_NOT_FOUND
    cache.take_changed(s2)
    cache.take_changed(s3)
    assert set(cache.mark_changed(A)) == {s2, s3}


def test_zero_slots_keeps_every_fetch_sessionless():
    cache = FetchSessionCache(0, MockTime())
    assert cache.new_context(1, 0, INITIAL_EPOCH, [(A, info())], []) == (Errors.NONE, None)


def test_epochs_wrap_to_one():
    """FetchMetadata.nextEpoch."""
    assert next_epoch(INITIAL_EPOCH) == 1 and next_epoch(0x7FFFFFFF) == 1


def test_hw_only_marks_are_reported_but_do_not_wake():
    cache = FetchSessionCache(10, MockTime())
    _, s = cache.new_context(1, 0, INITIAL_EPOCH, [(A, info()), (B, info())], [])
    cache.take_changed(s)
    assert not s.changed
    cache.mark_changed(A, wake=False)
    assert not s.changed                               # a parked fetch stays parked
    assert [tp for tp, _ in cache.take_changed(s)] == [A]
    assert list(cache.quiescent(A)) and list(cache.quiescent(B))
    cache.mark_changed(B)
    assert s.changed and list(cache.quiescent(B)) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["full", "inc", "mark", "take"]),
                          st.sets(st.sampled_from([A, B, C]))), max_size=30))
def test_session_holds_exactly_what_was_sent_and_reports_every_change(steps):
    """Invariant: the session's partitions are the last full fetch's plus later updates minus
    removals; every partition sent or marked since the last take is reported exactly once; a
    waking mark returns the session exactly when it had no waking change pending (so a parked
    fetch, which only exists while none is pending, is always tried)."""
    cache = FetchSessionCache(10, MockTime())
    _, s = cache.new_context(1, 0, INITIAL_EPOCH, [], [])
    model: set = set()
    pending: set = set()
    waking: set = set()    # what a parked fetch would complete for (FetchSession.changed)
    for kind, tps in steps:
        if kind == "full":
            err, s = cache.new_context(1, s.id, INITIAL_EPOCH, [(tp, info()) for tp in tps], [])
            model, pending, waking = set(tps), set(tps), set(tps)
        elif kind == "inc":
            removed = sorted(tps & model)[:1]
            updated = sorted(tps - set(removed))
            err, _ = cache.new_context(1, s.id, s.epoch, [(tp, info()) for tp in updated], removed)
            model = (model | set(updated)) - set(removed)
            pending = (pending | set(updated)) - set(removed)
            waking = (waking | set(updated)) - set(removed)
        elif kind == "mark":
            wake = len(tps) % 2 == 0
            for tp in sorted(tps):
                woken = cache.mark_changed(tp, wake=wake)
                assert woken == ([s] if wake and tp in model and not waking else [])
                if wake and tp in model:
                    waking.add(tp)
            pending |= tps & model
        else:
            assert {tp for tp, _ in cache.take_changed(s)} == pending
            pending, waking = set(), set()
        assert err == Errors.NONE if kind in ("full", "inc") else True
        assert set(s.partitions) == model
        assert s.changed == waking


# ---------------------------------------------------------------- request level

class SessionHarness(Harness):
    """The leader of ``t-0`` and of three partitions of ``u`` (``self.u``; replicas 0, 1, 2),
    with session fetch helpers."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        u = self.metadata.create_topic("u", 9, 3)
        self.rm.apply_partition_states(list(u.partitions.values()))
        self.u = [("u", p) for p, st in sorted(u.partitions.items()) if st.leader == 0][:3]
        assert len(self.u) == 3
        self.tps = [TP, *self.u]

    def session_fetch(self, replica: int, session_id: int, epoch: int, offsets: dict, removed=(),
                      max_wait_ms: int = 500) -> list[SessionFetchResponse]:
        box: list[SessionFetchResponse] = []
        params = FetchParams(replica_id=replica, max_wait_ms=max_wait_ms, isolation=ISOLATION_LOG_END)
        self.rm.fetch_in_session(params, session_id, epoch,
                                 [(tp, PartitionFetchInfo(o, 1 << 20, 0)) for tp, o in offsets.items()],
                                 list(removed), box.append)
        return box

    def append(self, tp, n: int = 1) -> None:
        self.rm.append_records(1000, 1, {tp: build_batch([(b"k", b"v")] * n)}, lambda st: None)
        self.drain()


def test_incremental_fetch_reads_and_answers_only_changed_partitions():
    h = SessionHarness()
    first = h.session_fetch(1, 0, INITIAL_EPOCH, {tp: 0 for tp in h.tps})
    assert first == []                                   # nothing to read: parked under the session
    h.append(h.u[1], 2)                                # wakes it: only u-1 is new
    [resp] = first
    assert resp.error == Errors.NONE and resp.session_id > 0
    assert {tp for tp, _ in resp.results} == set(h.tps)   # first answer: the full fetch's partitions
    got = dict(resp.results)
    assert [o for o, _, _ in iter_records(got[h.u[1]].records)] == [0, 1]
    sid = resp.session_id
    nxt = h.session_fetch(1, sid, 1, {h.u[1]: 2})      # the follower's one update
    assert nxt == [] and h.fetch_purgatory.num_delayed() == 1
    h.append(TP)
    [resp2] = nxt
    assert {tp for tp, _ in resp2.results} == {TP, h.u[1]}
    assert dict(resp2.results)[TP].records and not dict(resp2.results)[h.u[1]].records


def test_idle_session_fetch_is_woken_only_by_its_own_partitions_and_expires_empty():
    h = SessionHarness()
    [full] = h.session_fetch(1, 0, INITIAL_EPOCH, {h.u[0]: 0}, max_wait_ms=0)   # a session of one partition
    r = h.session_fetch(1, full.session_id, 1, {})
    h.append(h.u[2])
    h.append(TP)
    assert r == []                                       # not its partitions
    h.advance(501)
    # expires with nothing read from the other partitions (at most u[0]'s HW, if it moved)
    assert r[0].error == Errors.NONE and {tp for tp, _ in r[0].results} <= {h.u[0]}
    assert all(not res.records for _, res in r[0].results)


def test_session_errors_at_request_level():
    h = SessionHarness()
    assert h.session_fetch(1, 12345, 3, {})[0].error == Errors.FETCH_SESSION_ID_NOT_FOUND
    [r] = h.session_fetch(1, 0, INITIAL_EPOCH, {TP: 0}, max_wait_ms=0)
    assert h.session_fetch(1, r.session_id, 5, {})[0].error == Errors.INVALID_FETCH_SESSION_EPOCH


def test_follower_session_fetch_that_moves_the_hw_completes_parked_consumer_fetch_at_once():
    """The trigger matrix's "follower fetch advanced HW → Fetch, Produce checked directly":
    no timer advance and no action-queue drain between the last follower fetch and the
    consumer's answer or the producer's acknowledgement."""
    h = SessionHarness()
    [s1] = h.session_fetch(1, 0, INITIAL_EPOCH, {tp: 0 for tp in h.tps}, max_wait_ms=0)
    [s2] = h.session_fetch(2, 0, INITIAL_EPOCH, {tp: 0 for tp in h.tps}, max_wait_ms=0)
    consumer = h.consumer_fetch(0, max_wait_ms=10_000)
    acked = h.produce(3, timeout_ms=10_000)
    h.drain()
    assert consumer == [] and acked == {}
    h.session_fetch(1, s1.session_id, 1, {TP: 3})
    assert consumer == [] and h.partition.log.high_watermark == 0
    h.session_fetch(2, s2.session_id, 1, {TP: 3})
    assert h.partition.log.high_watermark == 3
    assert [o for o, _, _ in iter_records(consumer[0][1].records)] == [0, 1, 2]
    assert acked[TP].error == Errors.NONE


def test_hw_move_is_reported_in_the_next_answer_without_waking():
    h = SessionHarness(replicas=(0, 1, 2))
    [s1] = h.session_fetch(1, 0, INITIAL_EPOCH, {TP: 0}, max_wait_ms=0)
    [s2] = h.session_fetch(2, 0, INITIAL_EPOCH, {TP: 0}, max_wait_ms=0)
    h.append(TP)
    parked = h.session_fetch(1, s1.session_id, 1, {TP: 1})
    assert parked == []
    h.session_fetch(2, s2.session_id, 1, {TP: 1})           # moves the HW to 1
    assert parked == [] and h.partition.log.high_watermark == 1
    h.advance(501)
    assert dict(parked[0].results)[TP].high_watermark == 1


def test_quiescent_partitions_keep_their_follower_in_the_isr():
    """An idle partition is left out of incremental fetches; the leader still counts the
    follower as caught up at the session's last fetch (Kafka's leader reads every session
    partition on every fetch), so an append after a long idle does not shrink the ISR."""
    h = SessionHarness(lag_ms=10_000)
    sessions = {}
    for r in (1, 2):
        [resp] = h.session_fetch(r, 0, INITIAL_EPOCH, {tp: 0 for tp in h.tps}, max_wait_ms=0)
        sessions[r] = resp.session_id
    for epoch in range(1, 8):                                   # 35 s of idle incremental fetches
        h.time.advance(5000)
        for r in (1, 2):
            h.session_fetch(r, sessions[r], epoch, {}, max_wait_ms=0)
        h.rm.maybe_shrink_isr()
    h.append(TP)                                                # followers have not fetched it yet
    assert h.rm.maybe_shrink_isr() == 0 and h.partition.isr == (0, 1, 2)


def test_delete_records_wakes_follower_sessions_with_the_new_log_start():
    """DeleteRecords moves the leader's log start without new data: the parked session fetches
    are woken so each follower learns it, and the follower fetch that reports the follower's
    new log start completes the DeleteRecords (low watermark)."""
    h = SessionHarness()
    sessions = {}
    for r in (1, 2):
        [resp] = h.session_fetch(r, 0, INITIAL_EPOCH, {TP: 0}, max_wait_ms=0)
        sessions[r] = resp.session_id
    h.append(TP, 5)
    for r in (1, 2):
        h.session_fetch(r, sessions[r], 1, {TP: 5}, max_wait_ms=0)   # caught up: HW 5
    assert h.partition.log.high_watermark == 5
    parked = {r: h.session_fetch(r, sessions[r], 2, {}) for r in (1, 2)}
    done = {}
    h.rm.delete_records(10_000, {TP: 3}, done.update)
    for r in (1, 2):
        [resp] = parked[r]
        assert dict(resp.results)[TP].log_start_offset == 3
    assert done == {}                                              # followers still report 0
    for r in (1, 2):
        box = []
        h.rm.fetch_in_session(FetchParams(replica_id=r, max_wait_ms=0, isolation=ISOLATION_LOG_END),
                              sessions[r], 3, [(TP, PartitionFetchInfo(5, 1 << 20, 3))], [], box.append)
    assert done[TP].error == Errors.NONE and done[TP].low_watermark == 3


def test_partition_the_response_had_no_room_for_is_read_next_time():
    """A partition whose new batch did not fit what an earlier partition left of the response's
    max bytes stays marked (Kafka's leader reads every session partition on every fetch): the
    next incremental fetch returns it. Found by ``kafka-emu stress overload``: without it,
    followers stopped fetching such partitions, and acks=all produces to them hung."""
    h = SessionHarness()
    a, b = h.u[0], h.u[1]
    size = len(build_batch([(b"k", b"v")] * 50))
    params = FetchParams(replica_id=1, max_wait_ms=0, isolation=ISOLATION_LOG_END, max_bytes=size + size // 2)
    box: list[SessionFetchResponse] = []
    h.rm.fetch_in_session(params, 0, INITIAL_EPOCH, [(a, PartitionFetchInfo(0, 1 << 20, 0)),
                                                     (b, PartitionFetchInfo(0, 1 << 20, 0))], [], box.append)
    sid = box[0].session_id
    h.append(a, 50)
    h.append(b, 50)
    h.rm.fetch_in_session(params, sid, 1, [], [], box.append)
    got = dict(box[1].results)
    [read] = [tp for tp, r in got.items() if r.records]
    [left] = [tp for tp in (a, b) if tp != read]          # no room left for it
    h.rm.fetch_in_session(params, sid, 2, [(read, PartitionFetchInfo(50, 1 << 20, 0))], [], box.append)
    assert dict(box[2].results)[left].records               # read in the next fetch
