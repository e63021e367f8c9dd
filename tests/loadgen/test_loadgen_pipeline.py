"""The whole load pipeline in Spark local mode against an in-process 3-broker cluster.

Real parts throughout: the EmbeddedCluster serves TCP in this process, the Spark Python workers
are separate processes running confluent-kafka and kafka-python clients, and the crashing
member is a child process killed with SIGKILL. The report's counts are checked against what the
brokers hold and against the plan.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest

from kafka_emu.loadgen.driver import run_load
from kafka_emu.loadgen.spec import parse_spec
from kafka_emu.loadgen.target import create_topics, open_target

PYSPARK_PANDAS3_NOISE = [pytest.mark.filterwarnings("ignore:.*does not yet fully support pandas.*:FutureWarning"),
                         pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")]
# 180 s: Spark start (5-15 s), a 6 s load, the drain and the report; the embedded brokers share the
# machine's 2 cores with Spark, so the drain is the part that varies.
pytestmark = [*PYSPARK_PANDAS3_NOISE, pytest.mark.timeout(180)]

SPEC = {
    "duration_s": 6,
    "drain_s": 40,
    "seed": 3,
    "topics": [{"name": "pipe", "partitions": 4, "replication_factor": 3},
               {"name": "pipe-kp", "partitions": 2, "replication_factor": 3}],
    "producers": [
        {"name": "rdk", "topics": ["pipe"], "rate": 300, "size": {"dist": "lognormal", "mean": 300, "max": 4000}},
        {"name": "kp", "topics": ["pipe-kp"], "rate": 80, "acks": 1, "client": "kafka-python", "size": 100},
    ],
    "groups": [{"group_id": "pipe-app", "topics": ["pipe"], "members": 2, "session_timeout_ms": 1500,
                "heartbeat_interval_ms": 300,
                "churn": [{"at_s": 1, "action": "join"}, {"at_s": 2, "action": "leave"},
                          {"at_s": 2.5, "action": "crash"}]},
               # the consumer group protocol (KIP-848): its timeouts become the group's configs
               {"group_id": "pipe-848", "topics": ["pipe"], "members": 2, "group_protocol": "consumer",
                "session_timeout_ms": 1500, "heartbeat_interval_ms": 300,
                "churn": [{"at_s": 2.5, "action": "crash"}]}],
    # a share group (KIP-932): three ShareConsumers accept most records, release and reject some
    "share_groups": [{"group_id": "pipe-share", "topics": ["pipe-kp"], "members": 3, "release_fraction": 0.1,
                      "reject_fraction": 0.05}],
    "consumers": [{"name": "audit", "topics": ["pipe", "pipe-kp"], "client": "kafka-python"}],
    "admin": [{"at_s": 1, "action": "list_topics"}, {"at_s": 2, "action": "describe_groups", "group": "pipe-app"}],
}




def test_pipeline_report_matches_the_cluster(spark, tmp_path, in_log):
    spec = parse_spec(SPEC)
    with open_target(None) as target:
        create_topics(target.bootstrap, spec.topics, 3)
        summary = run_load(spark, spec, target.bootstrap, tmp_path, {"run_id": "pipeline-test"},
                           show_progress=False)
        logs = {t.name: in_log(target.bootstrap, t.name, t.partitions) for t in spec.topics}
        assert target.metrics_url is None or target.metrics_url.startswith("http://127.0.0.1:")

    produced = summary["produced"]
    assert summary["task_errors"] == []
    # ~300/s x 6 s and ~80/s x 6 s were attempted, and every attempt has an outcome.
    assert 1700 <= produced["attempted"] <= 2400
    assert produced["acked"] + produced["failed"] == produced["attempted"]
    # Every acknowledged message is in a log; what the logs hold beyond that are sends the producer
    # gave up on (flush timeout) that the broker still wrote, and the report finds exactly those.
    total_in_log = logs["pipe"] + logs["pipe-kp"]
    assert produced["acked"] <= total_in_log <= produced["attempted"]
    audit = summary["consumed"]["consumer:audit"]
    assert audit["missing"] == 0 and audit["duplicates"] == 0
    assert audit["records"] == total_in_log
    assert audit["unexpected"] == total_in_log - produced["acked"]
    group = summary["consumed"]["pipe-app"]
    assert group["missing"] == 0
    assert group["unique"] == logs["pipe"]
    kip848 = summary["consumed"]["pipe-848"]
    assert kip848["missing"] == 0 and kip848["unique"] == logs["pipe"]
    assert summary["run"]["group_configs_refused"] == {}
    # The share group accepts each record once; the rejected ones (and any released up to the
    # delivery limit) are archived instead; released records came back to some member.
    share = summary["consumed"]["pipe-share"]
    assert share["duplicates"] == 0 and share["missing"] == 0
    assert share["unique"] + share["rejected"] + share["archived"] == logs["pipe-kp"]
    assert share["released"] > 0 and share["rejected"] > 0
    # The plan: pipe-app 2 initial members + 1 join; one leaves, one crashes (SIGKILL), the rest
    # drain; pipe-848 2 members, one crashes (its partitions move after the group's 1.5 s session).
    reb = summary["rebalances"]
    assert reb["joins"] == 8 and reb["crashes"] == 2 and reb["leaves"] == 1 and reb["closes_at_end"] == 5
    assert reb["count"] >= 5
    assert {g: b["protocol"] for g, b in reb["by_group"].items()} == {"pipe-app": "classic", "pipe-848": "consumer"}
    assert {"admin:list_topics", "admin:describe_groups"} <= set(summary["operations"])
    assert summary["operations"]["produce"]["latency_ms"]["p50"] > 0
    # The per-second series adds up to the totals.
    per_second = pd.read_csv(tmp_path / "per_second.csv")
    assert per_second[per_second["op"] == "produce"]["messages"].sum() == produced["acked"]
    assert per_second[per_second["op"] == "consume"]["messages"].sum() == \
        group["records"] + kip848["records"] + audit["records"] + share["records"]
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["produced"] == produced
    assert spark.read.parquet(str(tmp_path / "samples.parquet")).count() == summary["run"]["samples"]
    for chart in ("throughput.png", "latency_over_time.png", "latency_histogram.png", "rebalance_timeline.png"):
        assert (tmp_path / chart).stat().st_size > 5000
