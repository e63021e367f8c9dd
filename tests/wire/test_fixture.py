"""The pytest plugin: which cluster a test gets (closest marker, scope), marker checking, reset().

Sharing and teardown are checked in inner pytest sessions (``pytester``), whose tests record the
cluster objects they were given; this module's own tests use the module marker below.
"""
from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from hypothesis import given
from hypothesis import strategies as st

from kafka_emu.broker.cluster.fixture import MARKER_KEYWORDS, import_cluster_class, marker_values
from wire_helpers import unique, wait_until

pytest_plugins = ["pytester"]

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.kafka_cluster(brokers=1, config={"num.partitions": 3})]


def test_marker_selects_size_and_config(kafka_cluster: Any, kafka_bootstrap: str) -> None:
    assert kafka_cluster.live_brokers() == [0]
    assert kafka_bootstrap == kafka_cluster.bootstrap_servers and kafka_bootstrap.count(":") == 1
    cfg = kafka_cluster.broker(0).config
    assert cfg["num.partitions"] == 3
    # replication factors are capped at the cluster size unless configured
    assert cfg["default.replication.factor"] == 1
    assert cfg["offsets.topic.replication.factor"] == 1


def test_clients_see_the_cluster(kafka_bootstrap: str) -> None:
    md = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=5)
    assert list(md.brokers) == [0]


def run_inner(pytester: pytest.Pytester, source: str) -> pytest.RunResult:
    """Run ``source`` as a test module in an inner session of this process; every thread the
    inner session started must have ended with it (clusters closed at their owner's teardown)."""
    pytester.makepyfile(test_inner=source)
    before = set(threading.enumerate())
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    leaked = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not leaked, f"threads left by the inner session: {leaked}"
    return result


SHARING = '''
import pytest

pytestmark = pytest.mark.kafka_cluster(brokers=1)
seen = {}


def stopped(cluster):
    return all(s.stopped for s in cluster.servers.values())


def test_module_first(kafka_cluster):
    seen["module"] = kafka_cluster
    assert kafka_cluster.live_brokers() == [0]


@pytest.mark.kafka_cluster(brokers=2)
def test_marker_on_a_function(kafka_cluster):
    assert kafka_cluster.live_brokers() == [0, 1]
    assert kafka_cluster.broker(0).config["default.replication.factor"] == 2
    seen["function"] = kafka_cluster


def test_module_again(kafka_cluster):
    assert kafka_cluster is seen["module"]
    assert stopped(seen["function"]), "a marked test's cluster ends with the test"


@pytest.mark.kafka_cluster(brokers=2, config={"num.partitions": 5})
class TestMarkedClass:
    def test_one(self, kafka_cluster):
        assert kafka_cluster.live_brokers() == [0, 1]
        assert kafka_cluster.broker(0).config["num.partitions"] == 5
        seen["class"] = kafka_cluster

    def test_two(self, kafka_cluster):
        assert kafka_cluster is seen["class"]

    @pytest.mark.kafka_cluster(brokers=3)
    def test_closest_marker_wins(self, kafka_cluster):
        assert kafka_cluster.live_brokers() == [0, 1, 2]
        assert kafka_cluster.broker(0).config["num.partitions"] == 1   # not the class's config


class TestUnmarkedClass:
    def test_module_cluster(self, kafka_cluster):
        assert kafka_cluster is seen["module"]
        assert stopped(seen["class"]), "a marked class's cluster ends with the class"


@pytest.mark.parametrize("n", [1, 2])
def test_param_marked(kafka_cluster, n):
    assert kafka_cluster is seen["module"]
'''


def test_marker_on_module_class_and_function(pytester: pytest.Pytester) -> None:
    """The closest marker wins (pytest's get_closest_marker); a marked class or test has a
    cluster of its own, closed when pytest tears that class or test down."""
    run_inner(pytester, SHARING).assert_outcomes(passed=9)


FRESH = '''
import pytest

pytestmark = pytest.mark.kafka_cluster(brokers=1, scope="function")
seen = []


def test_first(kafka_cluster):
    kafka_cluster.create_topic("left-over")
    seen.append(kafka_cluster)


def test_second(kafka_cluster):
    assert kafka_cluster is not seen[0]
    assert all(s.stopped for s in seen[0].servers.values())
    assert kafka_cluster.metadata.topic("left-over") is None


class TestScopeClass:
    pytestmark = pytest.mark.kafka_cluster(brokers=1, scope="class")

    def test_a(self, kafka_cluster):
        seen.append(kafka_cluster)

    def test_b(self, kafka_cluster):
        assert kafka_cluster is seen[-1]
'''


def test_scope_function_gives_each_test_a_fresh_cluster(pytester: pytest.Pytester) -> None:
    run_inner(pytester, FRESH).assert_outcomes(passed=4)


@pytest.mark.parametrize(("marker", "message"), [
    ("broker=1", "unknown keyword 'broker' (accepted: brokers, kafka_version, config, scope, record_requests, time, "
                 "schema_registry_port, security)"),
    ("kafka_version='4.1', config={'emulator.kafka.version': '4.0'}",
     "kafka_version='4.1' and config's emulator.kafka.version='4.0' disagree"),
    ("1", "takes keywords only"),
    ("brokers=0", "brokers must be a positive int, got 0"),
    ("scope='session'", "scope must be one of module, class, function, got 'session'"),
    ("config=['num.partitions']", "config must be a mapping"),
])
def test_bad_marker_is_a_usage_error(pytester: pytest.Pytester, marker: str, message: str) -> None:
    """Refused at collection, before any test runs, naming the test and the problem."""
    source = f'''
import pytest

def test_fine(kafka_cluster):
    pass

class TestIt:
    @pytest.mark.kafka_cluster({marker})
    def test_typo(self, kafka_cluster):
        pass
'''
    result = run_inner(pytester, source)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: test_inner.py::TestIt::test_typo: @pytest.mark.kafka_cluster: {message}*"])
    result.assert_outcomes()   # nothing ran


@given(st.dictionaries(st.from_regex(r"[a-z_]{1,12}", fullmatch=True).filter(lambda k: k not in MARKER_KEYWORDS),
                       st.integers(1, 5), min_size=1))
def test_any_unknown_keyword_is_named(unknown: dict[str, int]) -> None:
    """Every keyword the marker does not know is named, next to valid ones."""
    mark = pytest.mark.kafka_cluster(brokers=2, scope="class", **unknown).mark
    names = ", ".join(map(repr, sorted(unknown)))
    with pytest.raises(pytest.UsageError, match=f"^here: @pytest.mark.kafka_cluster: unknown keyword {names} "):
        marker_values(mark, "here")


def test_cluster_import_leaves_hypothesis_alone() -> None:
    """The first set-up imports the broker and kio without importing hypothesis (kio would, to
    register strategies nobody here uses); hypothesis still imports normally afterwards."""
    assert import_cluster_class().__name__ == "EmbeddedCluster"
    probe = ("import sys; from kafka_emu.broker.cluster.fixture import import_cluster_class; import_cluster_class(); "
             "loaded = 'hypothesis' in sys.modules; import hypothesis.strategies; "
             "print(loaded, 'kio.static._phantom' in sys.modules, 'hypothesis' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "True", "True"]


def consumer_conf(bs: str, group: str) -> dict[str, Any]:
    return {"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": 1500, "heartbeat.interval.ms": 100,
            "fetch.wait.max.ms": 50, "reconnect.backoff.ms": 20, "retry.backoff.ms": 20}


def consume_one(bs: str, topic: str, group: str) -> Any:
    """A consumer of ``group`` that has read and committed one record (still in the group)."""
    c = Consumer(consumer_conf(bs, group))
    c.subscribe([topic])
    got: list[Any] = []

    def polled() -> bool:
        got.extend(m for m in c.consume(num_messages=1, timeout=0.1) if m.error() is None)
        return bool(got)

    wait_until(polled, 15, interval_s=0, what=f"a record for {group}")
    c.commit(asynchronous=False)
    return c


@pytest.mark.kafka_cluster(brokers=3, record_requests=True)
def test_reset_leaves_no_user_topic_and_no_group(kafka_cluster: Any) -> None:
    """reset() deletes through DeleteGroups and DeleteTopics: a group that still has a member is
    NON_EMPTY_GROUP, as in Kafka (GroupCoordinatorTest's testDeleteNonEmptyGroup), and reset
    says so; once its consumer has closed, nothing but __consumer_offsets is left. Injected
    faults and recorded requests (a marker option passed on to the cluster) are gone too."""
    bs = kafka_cluster.bootstrap_servers
    topics = [unique("reset") for _ in range(3)]
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 1})
    for t in topics:
        kafka_cluster.create_topic(t, partitions=2)
        p.produce(t, b"v")
    assert p.flush(10) == 0
    p.close()  # a live producer's periodic Metadata request would be recorded after reset()
    closed = consume_one(bs, topics[0], "group-closed")
    closed.close()
    member = consume_one(bs, topics[1], "group-with-member")

    with pytest.raises(RuntimeError, match=r"group group-with-member \(NON_EMPTY_GROUP\)"):
        kafka_cluster.reset(timeout_s=0.3)
    member.close()
    kafka_cluster.inject_errors("ListGroups", ["UNKNOWN_SERVER_ERROR"] * 10)
    assert kafka_cluster.requests()
    kafka_cluster.reset()
    assert kafka_cluster.requests() == []

    admin = AdminClient({"bootstrap.servers": bs})
    assert set(admin.list_topics(timeout=5).topics) == {"__consumer_offsets"}
    listed = admin.list_consumer_groups(request_timeout=5).result(timeout=10)
    assert listed.valid == [] and listed.errors == []
    # the cluster is as good as new: the names can be used again
    kafka_cluster.create_topic(topics[0])
    assert kafka_cluster.produce(topics[0], 0, [(None, b"again")]) == (0, 0)
