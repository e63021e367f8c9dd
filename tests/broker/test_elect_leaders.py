"""MetadataStore.elect_leaders: ReplicationControlManagerTest's election cases (tag 4.0.0) ported
against the in-process controller, with pushes recorded per broker."""
from __future__ import annotations

import pytest

from kafka_emu.broker.server.metadata_store import BrokerInfo, MetadataStore
from kafka_emu.broker.server.partition_state import ELECTION_PREFERRED, ELECTION_UNCLEAN
from kafka_emu.common.errors import Errors

pytestmark = pytest.mark.timeout(30)


def store(brokers: int = 3) -> tuple[MetadataStore, dict[int, list]]:
    md = MetadataStore()
    pushed: dict[int, list] = {b: [] for b in range(brokers)}
    for b in range(brokers):
        md.register_broker(BrokerInfo(b), lambda states, removed, b=b: pushed[b].extend(states))
    return md, pushed


def test_elect_preferred_leaders() -> None:
    """testElectPreferredLeaders: ELECTION_NOT_NEEDED where the preferred replica leads, NONE (and
    a pushed state with a new epoch) where another ISR member led, UNKNOWN_TOPIC_OR_PARTITION
    for unknown partitions."""
    md, pushed = store()
    md.create_topic("foo", 2, 3)
    preferred = md.partition_state("foo", 1).replicas[0]
    md.elect_leader("foo", 1, md.partition_state("foo", 1).replicas[1])
    for b in pushed:
        pushed[b].clear()
    result = md.elect_leaders(ELECTION_PREFERRED, [("foo", 0), ("foo", 1), ("foo", 2), ("bar", 0)])
    assert result[("foo", 0)][0] == Errors.ELECTION_NOT_NEEDED
    assert result[("foo", 1)] == (Errors.NONE, None)
    assert result[("foo", 2)][0] == result[("bar", 0)][0] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    st = md.partition_state("foo", 1)
    assert (st.leader, st.leader_epoch) == (preferred, 2)
    assert all(st in pushed[b] for b in st.replicas)


def test_preferred_election_does_not_trigger_unclean_election() -> None:
    """testPreferredElectionDoesNotTriggerUncleanElection: the preferred replica is live but out
    of the ISR: PREFERRED_LEADER_NOT_AVAILABLE and nothing changes."""
    md, _ = store()
    md.create_topic("foo", 1, 3)
    st = md.partition_state("foo", 0)
    md.broker_stopped(st.replicas[0])
    md.broker_started(BrokerInfo(st.replicas[0]))   # back, but not in the ISR any more
    before = md.partition_state("foo", 0)
    assert st.replicas[0] not in before.isr
    assert md.elect_leaders(ELECTION_PREFERRED, [("foo", 0)])[("foo", 0)][0] == \
        Errors.PREFERRED_LEADER_NOT_AVAILABLE
    assert md.partition_state("foo", 0) == before


def test_elect_unclean_leaders_without_elr() -> None:
    """testElectUncleanLeaders_WithoutElr: with a leader, ELECTION_NOT_NEEDED; once the whole ISR
    is gone, the first live replica leads with itself as the ISR; with no live replica,
    ELIGIBLE_LEADERS_NOT_AVAILABLE."""
    md, _ = store()
    md.create_topic("foo", 1, 2)
    st = md.partition_state("foo", 0)
    leader, other = st.replicas
    assert md.elect_leaders(ELECTION_UNCLEAN, [("foo", 0)])[("foo", 0)][0] == Errors.ELECTION_NOT_NEEDED
    # the other replica left the ISR (it fell behind), then the leader died
    md.alter_isr("foo", 0, leader, st.leader_epoch, (leader,))
    md.broker_stopped(leader)
    offline = md.partition_state("foo", 0)
    assert offline.leader == -1 and offline.isr == (leader,)
    assert md.elect_leaders(ELECTION_UNCLEAN, None) == {("foo", 0): (Errors.NONE, None)}
    st = md.partition_state("foo", 0)
    assert (st.leader, st.isr, st.leader_epoch) == (other, (other,), offline.leader_epoch + 1)
    md.broker_stopped(other)
    assert md.elect_leaders(ELECTION_UNCLEAN, [("foo", 0)])[("foo", 0)][0] == Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE


def test_unclean_election_prefers_a_live_isr_member() -> None:
    """PartitionChangeBuilder.electAnyLeader: an offline partition whose ISR member is live again
    elects it cleanly (its ISR unchanged)."""
    md, _ = store()
    md.create_topic("foo", 1, 2)
    st = md.partition_state("foo", 0)
    leader, _other = st.replicas
    md.alter_isr("foo", 0, leader, st.leader_epoch, (leader,))
    md.broker_stopped(leader)
    with md._lock:   # the broker is live again but no election ran yet (its start-up is pending)
        md.brokers[leader].live = True
    assert md.elect_leaders(ELECTION_UNCLEAN, [("foo", 0)])[("foo", 0)][0] == Errors.NONE
    assert md.partition_state("foo", 0).leader == leader and md.partition_state("foo", 0).isr == (leader,)
