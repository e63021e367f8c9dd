"""Property: under random acks=all produces, broker stops/starts and follower stalls, every
acknowledged record ends up on the leader exactly once, in acknowledgement order, and every
replica converges on the leader's log."""
import threading

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.common.errors import Errors
from cluster_support import broker_threads, wait_until

pytestmark = pytest.mark.timeout(110)

ops = st.lists(
    st.one_of(
        st.tuples(st.just("produce"), st.integers(1, 4)),
        st.tuples(st.just("stop"), st.integers(0, 2)),
        st.tuples(st.just("start"), st.integers(0, 2)),
        st.tuples(st.just("stall"), st.integers(0, 2)),
        st.tuples(st.just("unstall"), st.integers(0, 2)),
    ),
    min_size=3, max_size=14)


# No shrinking phase: a failing example is reported as found, and the run stays bounded.
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(ops)
def test_acknowledged_records_survive_failures(steps):
    before = set(broker_threads())
    acked: list[bytes] = []
    seq = 0
    with EmbeddedCluster(brokers=3, offsets_topic=False, enable_coordinator=False,
                         config={"replica.lag.time.max.ms": 150, "replica.fetch.wait.max.ms": 50, "listeners": ""}) as c:
        c.create_topic("p", 1, 3)
        for op, arg in steps:
            if op == "produce":
                for _ in range(arg):
                    seq += 1
                    value = b"r%d" % seq
                    err, _ = c.produce("p", 0, [(b"k", value)], timeout_ms=2000)
                    if err == Errors.NONE:
                        acked.append(value)
            elif op == "stop":
                if len(c.live_brokers()) > 1:
                    c.stop_broker(arg)
            elif op == "start":
                c.start_broker(arg)
            elif op in ("stall", "unstall"):
                server = c.servers.get(arg)
                if server is not None and not server.stopped:
                    server.fetcher_manager.set_paused(op == "stall")
        for b in range(3):
            c.start_broker(b).fetcher_manager.set_paused(False)
        wait_until(lambda: c.leader_of("p") >= 0, msg="a leader")
        # one more acknowledged record proves the partition is writable again
        seq += 1
        wait_until(lambda: c.produce("p", 0, [(b"k", b"r%d" % seq)], timeout_ms=2000)[0] == Errors.NONE,
                   timeout_s=8, interval_s=0.05, msg="a writable partition")
        acked.append(b"r%d" % seq)
        leader = c.leader_of("p")
        values = [v for _, _, v in c.read_all("p", 0, broker_id=leader, upto_hw=True)]
        assert len(values) == len(set(values)), "duplicate records"
        positions = [values.index(v) if v in values else -1 for v in acked]
        assert -1 not in positions, f"lost acknowledged records: {[v for v in acked if v not in values]}"
        assert positions == sorted(positions), "acknowledged records out of order"
        full = c.read_all("p", 0, broker_id=leader)
        for b in range(3):
            wait_until(lambda: c.read_all("p", 0, broker_id=b) == c.read_all("p", 0, broker_id=c.leader_of("p")),
                       timeout_s=5, msg=f"replica {b} converges")
        assert full
    assert set(broker_threads()) <= before, "threads survived close()"
