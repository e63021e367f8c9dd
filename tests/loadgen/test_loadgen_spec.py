"""The workload spec is validated before anything starts, and churn resolves deterministically."""
from __future__ import annotations

import argparse
import random
from pathlib import Path

import pytest

from kafka_emu.loadgen.errors import SpecError
from kafka_emu.loadgen.spec import GroupSpec, ChurnEvent, load_spec, parse_spec
from kafka_emu.loadgen.spec_cli import add_options, parse_churn, spec_from_args
from kafka_emu.loadgen.tasks import assign_slots, build_tasks, plan_members

pytestmark = pytest.mark.timeout(10)

BASE = {"duration_s": 10, "topics": [{"name": "t", "partitions": 2}],
        "producers": [{"name": "p", "topics": ["t"], "rate": 50}]}


def test_example_spec_is_valid(tmp_path):
    spec = load_spec(Path(__file__).resolve().parents[2] / "examples" / "workload.yaml")
    assert spec.duration_s == 40
    assert {g.group_id for g in spec.groups} == {"orders-app", "orders-app-kip848", "clicks-app"}
    assert [g.group_protocol for g in spec.groups] == ["classic", "consumer", "classic"]
    assert spec.producers[1].client == "kafka-python" and spec.producers[1].acks == 1
    assert spec.producers[2].transaction_records == 20 and spec.producers[2].acks == -1
    assert spec.avro_producers == ("payments-avro-writer",) and spec.schema_registry_url is None


def test_avro_serializer_needs_confluent_and_a_registry_url_is_a_url():
    avro = {"name": "p", "topics": ["t"], "rate": 50, "serializer": "avro"}
    for raw, fragment in (({**BASE, "producers": [{**avro, "client": "kafka-python"}]},
                           "producers[0].serializer: avro needs client: confluent"),
                          ({**BASE, "producers": [{**avro, "serializer": "protobuf"}]},
                           "producers[0].serializer: must be one of bytes, avro, got 'protobuf'"),
                          ({**BASE, "schema_registry_url": "registry:8081"},
                           "schema_registry_url: must be an http:// or https:// URL, got 'registry:8081'")):
        with pytest.raises(SpecError) as info:
            parse_spec(raw)
        assert fragment in info.value.message
    spec = parse_spec({**BASE, "producers": [avro, {"name": "b", "topics": ["t"]}],
                       "schema_registry_url": "http://registry:8081"})
    params = {t.task_id: t.params for t in build_tasks(spec, 1)}
    assert params["producer:p:0"]["schema_registry_url"] == "http://registry:8081"
    assert "schema_registry_url" not in params["producer:b:0"] and params["producer:b:0"]["serializer"] == "bytes"


def test_transactional_producer_needs_confluent_and_acks_all():
    for extra in ({"acks": "1"}, {"client": "kafka-python"}):
        raw = {**BASE, "producers": [{"name": "p", "topics": ["t"], "rate": 50, "transaction_records": 5, **extra}]}
        with pytest.raises(SpecError) as info:
            parse_spec(raw)
        assert "producers[0].transaction_records: a transactional producer needs" in info.value.message
    assert parse_spec({**BASE, "producers": [{"name": "p", "topics": ["t"], "rate": 50,
                                               "transaction_records": 5}]}).producers[0].transaction_records == 5


def test_every_problem_is_reported_with_its_path():
    raw = {**BASE, "producers": [{"name": "p", "topics": ["nope"], "rate": 0, "acks": "2",
                                  "size": {"dist": "zipf", "min": 10, "max": 5}}], "extra": True}
    with pytest.raises(SpecError) as info:
        parse_spec(raw)
    msg = info.value.message
    for fragment in ("extra: unknown field", "producers[0].rate: must be > 0", "producers[0].acks",
                     "producers[0].size.dist", "min (10) is greater than max (5)",
                     "topic 'nope' is not declared"):
        assert fragment in msg
    assert "\n" not in msg   # one line for the CLI


def test_group_protocol_consumer_needs_confluent_and_no_client_side_timeouts():
    """A consumer-protocol group (KIP-848) runs confluent-kafka members with group.protocol=consumer;
    librdkafka refuses the timeouts and the assignment strategy there (the broker holds them)."""
    group = {"group_id": "g", "topics": ["t"], "group_protocol": "consumer"}
    assert parse_spec({**BASE, "groups": [group]}).groups[0].group_protocol == "consumer"
    assert parse_spec({**BASE, "groups": [{**group, "group_protocol": "classic"}]}).groups[0].group_protocol == "classic"
    for extra, fragment in (({"client": "kafka-python"}, "groups[0].group_protocol: consumer needs client confluent"),
                            ({"config": {"session.timeout.ms": 3000}}, "groups[0].config: session.timeout.ms cannot"),
                            ({"group_protocol": "streams"}, "groups[0].group_protocol: must be one of classic, consumer")):
        with pytest.raises(SpecError) as info:
            parse_spec({**BASE, "groups": [{**group, **extra}]})
        assert fragment in info.value.message


def test_churn_that_removes_more_members_than_live_is_rejected():
    raw = {**BASE, "groups": [{"group_id": "g", "topics": ["t"], "members": 1,
                               "churn": [{"at_s": 2, "action": "leave"}]}]}
    with pytest.raises(SpecError, match="no live member at the end"):
        parse_spec(raw)
    raw["groups"][0]["churn"] = [{"at_s": 2, "action": "crash", "count": 3}]
    with pytest.raises(SpecError, match="fewer are live"):
        parse_spec(raw)


def test_invalid_yaml_is_a_spec_error(tmp_path):
    bad = tmp_path / "w.yaml"
    bad.write_text("duration_s: [1,\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_spec(bad)
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "missing.yaml")


def test_churn_plan_is_deterministic_and_respects_liveness():
    g = GroupSpec("g", ("t",), members=3, churn=(ChurnEvent(5, "join", 2), ChurnEvent(8, "leave"),
                                                  ChurnEvent(9, "crash", 2)))
    a = plan_members(g, random.Random(3))
    b = plan_members(g, random.Random(3))
    assert a == b
    assert len(a) == 5
    assert sum(m.end == "leave" for m in a) == 1 and sum(m.end == "crash" for m in a) == 2
    assert all(m.start_s <= (m.end_s if m.end_s is not None else 1e9) for m in a)
    assert sum(m.end == "drain" for m in a) == 2


def test_tasks_are_balanced_over_slots_and_sorted():
    spec = parse_spec({**BASE, "producers": [{"name": "p", "topics": ["t"], "rate": 100, "instances": 4}],
                       "groups": [{"group_id": "g", "topics": ["t"], "members": 2}]})
    tasks = build_tasks(spec, 2)
    assert [t.slot for t in tasks] == sorted(t.slot for t in tasks)
    per_slot = [sum(t.kind == "producer" for t in tasks if t.slot == s) for s in (0, 1)]
    assert per_slot == [2, 2]
    assert len(assign_slots(tasks, 1)) == len(tasks)


def test_cli_options_make_a_valid_spec():
    parser = argparse.ArgumentParser()
    add_options(parser)
    parser.add_argument("--duration", type=float)
    args = parser.parse_args(["--churn", "join@5,crash@8x1", "--group-members", "2", "--duration", "12"])
    spec = parse_spec(spec_from_args(args))
    assert spec.duration_s == 12 and spec.groups[0].members == 2
    assert [(e.action, e.at_s) for e in spec.groups[0].churn] == [("join", 5.0), ("crash", 8.0)]
    with pytest.raises(SpecError):
        parse_churn("explode")


def test_ramp_spec_and_command_line_overrides():
    import argparse

    from kafka_emu.loadgen.spec_cli import add_options, add_ramp_options, ramp_from_args, spec_from_args

    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=float, default=None)
    add_options(parser)
    add_ramp_options(parser)
    args = parser.parse_args(["--ramp", "1000,500,3000", "--ramp-step-s", "4", "--ramp-lag-growth-s", "0",
                              "--batching", "throughput"])
    raw = spec_from_args(args)
    raw["ramp"] = ramp_from_args(args, raw.get("ramp"))
    spec = parse_spec(raw)
    assert spec.ramp is not None
    assert (spec.ramp.start_rate, spec.ramp.step_rate, spec.ramp.max_rate) == (1000, 500, 3000)
    assert spec.ramp.step_s == 4 and spec.ramp.limits.lag_growth_s is None and spec.ramp.limits.p99_ms == 100
    assert spec.producers[0].batching == "throughput"

    from kafka_emu.loadgen.ramp import step_rates, step_spec

    assert step_rates(spec.ramp) == [1000, 1500, 2000, 2500, 3000]
    step = step_spec(spec, 1500, 2)
    assert sum(p.rate * p.instances for p in step.producers) == pytest.approx(1500)
    assert step.duration_s == 4 and step.ramp is None


def test_ramp_spec_refuses_what_it_cannot_run():
    base = {"topics": [{"name": "t"}], "producers": [{"name": "p", "topics": ["t"]}],
            "groups": [{"group_id": "g", "topics": ["t"], "churn": [{"at_s": 1, "action": "join"}]}]}
    with pytest.raises(SpecError) as err:
        parse_spec({**base, "ramp": {"start_rate": 10, "step_rate": 10, "max_rate": 5,
                                     "limits": {"p99_ms": None, "error_rate": None, "lag_growth_s": None}}})
    text = str(err.value)
    assert "ramp.max_rate: is below start_rate" in text
    assert "ramp.limits: names no limit" in text
    assert "churn, admin actions" in text


def test_ramp_judgement_and_lag_growth():
    import pandas as pd

    from kafka_emu.loadgen.ramp import judge_step, longest_growth_s
    from kafka_emu.loadgen.spec import RampSpec

    assert longest_growth_s([0, 5, 3, 4, 6, 9, 9, 10]) == 3
    rows = [{"op": "produce", "error": "", "latency_ms": float(i % 100)} for i in range(950)]
    rows += [{"op": "produce", "error": "_MSG_TIMED_OUT", "latency_ms": None}] * 50
    ramp = RampSpec(100, 100, 1000, step_s=10)
    verdict = judge_step(pd.DataFrame(rows), 100.0, 10.0, {"g": [0, 1, 2, 3, 4, 5, 6]}, ramp)
    assert verdict["acked"] == 950 and verdict["error_rate"] == 0.05 and verdict["lag_growth_s"] == {"g": 6}
    assert any("error rate" in c for c in verdict["crossed"]) and any("g lag grew" in c for c in verdict["crossed"])
    assert not any("p99" in c for c in verdict["crossed"])      # p99 of 0..99 ms is 98 ms
    short = judge_step(pd.DataFrame(rows[:500]), 100.0, 10.0, {}, ramp)
    assert any("of offered" in c for c in short["crossed"])


@pytest.mark.parametrize("name", ["ramp.yaml", "ceiling.yaml"])
def test_example_ramp_specs_are_valid(name):
    spec = load_spec(Path(__file__).resolve().parents[2] / "examples" / name)
    assert spec.ramp is not None and all(p.batching == "throughput" for p in spec.producers)
