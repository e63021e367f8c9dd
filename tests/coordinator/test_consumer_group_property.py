"""Property of KIP-848's reconciliation (hypothesis): over any sequence of joins, leaves, crashes
(the member stops heartbeating and its session expires), subscription changes and partition
additions, with the members heartbeating as clients do (reporting what they own, taking each
assignment they are given), no partition is ever owned by two live members at once, and once the
membership stops changing every partition of a subscribed topic is owned by exactly one member
subscribed to it."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_emu.common.errors import Errors

from consumer_harness import SESSION_TIMEOUT, ConsumerHarness

TOPICS = ("t0", "t1", "t2")
MEMBERS = tuple(f"m{i}" for i in range(5))

action = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(MEMBERS), st.sets(st.sampled_from(TOPICS), min_size=1)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("crash"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("subscribe"), st.sampled_from(MEMBERS), st.sets(st.sampled_from(TOPICS), min_size=1)),
    st.tuples(st.just("grow"), st.sampled_from(TOPICS)),
    st.tuples(st.just("round"),),
)


class Client:
    """What a consumer believes: its epoch, its subscription and the partitions it owns."""

    def __init__(self, topics: set[str]) -> None:
        self.epoch = 0
        self.topics = tuple(sorted(topics))
        self.owned: dict = {}


def heartbeat(h: ConsumerHarness, member_id: str, c: Client, subscribe: bool = False) -> None:
    fields = {"topic_partitions": tuple((t, tuple(sorted(ps))) for t, ps in c.owned.items())}
    if c.epoch == 0 or subscribe:
        fields.update(subscribed_topic_names=c.topics, rebalance_timeout_ms=60_000)
    if c.epoch == 0:
        fields["topic_partitions"] = ()
    r = h.heartbeat(member_id=member_id, member_epoch=c.epoch, **fields)
    if r.error in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
        c.epoch, c.owned = 0, {}   # the client gives everything up and rejoins
        return
    assert r.error == Errors.NONE, r
    c.epoch = r.member_epoch
    if r.assignment is not None:
        c.owned = {t: set(ps) for t, ps in r.assignment.items()}


def assert_disjoint(clients: dict[str, Client]) -> None:
    seen: dict = {}
    for member_id, c in clients.items():
        for t, ps in c.owned.items():
            for p in ps:
                assert (t, p) not in seen, f"{(t, p)} owned by {seen[(t, p)]} and {member_id}"
                seen[(t, p)] = member_id


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(action, max_size=25), st.lists(st.integers(1, 4), min_size=3, max_size=3))
def test_no_partition_owned_twice_and_all_owned_at_rest(actions: list, partitions: list[int]) -> None:
    h = ConsumerHarness(**{"group.consumer.session.timeout.ms": SESSION_TIMEOUT}).own()
    for topic, n in zip(TOPICS, partitions):
        h.image.add_topic(topic, n)
    live: dict[str, Client] = {}
    for step in actions:
        kind = step[0]
        if kind == "join" and step[1] not in live:
            live[step[1]] = Client(step[2])
            heartbeat(h, step[1], live[step[1]])
        elif kind == "leave" and step[1] in live:
            c = live.pop(step[1])
            if c.epoch > 0:
                h.heartbeat(member_id=step[1], member_epoch=-1)
        elif kind == "crash" and step[1] in live:
            live.pop(step[1])
            for member_id, c in live.items():   # the others keep their sessions across the expiry
                heartbeat(h, member_id, c)
            h.advance(SESSION_TIMEOUT // 2 + 1)
            for member_id, c in live.items():
                heartbeat(h, member_id, c)
            h.advance(SESSION_TIMEOUT // 2 + 1)
        elif kind == "subscribe" and step[1] in live:
            live[step[1]].topics = tuple(sorted(step[2]))
            heartbeat(h, step[1], live[step[1]], subscribe=True)
        elif kind == "grow":
            h.image.grow(step[1], len(h.image.topics[step[1]].partitions) + 1)
        else:
            for member_id, c in live.items():
                heartbeat(h, member_id, c)
        assert_disjoint(live)
    # membership stops changing: heartbeat until nothing moves
    for _ in range(20):
        before = {m: (c.epoch, {t: set(ps) for t, ps in c.owned.items()}) for m, c in live.items()}
        for member_id, c in live.items():
            heartbeat(h, member_id, c)
            assert_disjoint(live)
        if before == {m: (c.epoch, {t: set(ps) for t, ps in c.owned.items()}) for m, c in live.items()}:
            break
    else:
        raise AssertionError("the group did not settle")
    ids = {t.topic_id: name for name, t in h.image.topics.items()}
    owned = {(ids[t], p): m for m, c in live.items() for t, ps in c.owned.items() for p in ps}
    for name, topic in h.image.topics.items():
        subscribers = {m for m, c in live.items() if name in c.topics}
        for p in topic.partitions:
            if subscribers:
                assert owned.get((name, p)) in subscribers, (name, p, owned)
            else:
                assert (name, p) not in owned
