"""``serializer: avro`` in a real Spark run: the embedded cluster runs its schema registry, the
executors' producers write Avro records through confluent-kafka's AvroSerializer, the report
counts them like any records and shows the registry's requests from the cluster's /metrics."""
from __future__ import annotations

import dataclasses

import pytest

from kafka_emu.loadgen.driver import run_load
from kafka_emu.loadgen.report import summary_blocks
from kafka_emu.loadgen.spec import parse_spec
from kafka_emu.loadgen.target import create_topics, open_target, scrape_metrics

pytest.importorskip("avro", reason="the registry extra is not installed (pip install 'kafka-emu[registry]')")
pytestmark = [pytest.mark.filterwarnings("ignore:.*does not yet fully support pandas.*:FutureWarning"),
              pytest.mark.filterwarnings("ignore:The copy keyword is deprecated"), pytest.mark.timeout(120)]

SPEC = {
    "duration_s": 3, "drain_s": 20, "seed": 5,
    "topics": [{"name": "avro", "partitions": 2, "replication_factor": 1}],
    "producers": [{"name": "avro", "topics": ["avro"], "rate": 40, "instances": 2, "serializer": "avro",
                   "size": {"dist": "fixed", "mean": 100}}],
    "consumers": [{"name": "audit", "topics": ["avro"]}],
}


def test_avro_producers_write_through_the_embedded_registry(spark, tmp_path):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    spec = parse_spec(SPEC)
    with open_target(None, brokers=1, config={"offsets.topic.replication.factor": 1},
                     schema_registry_host="127.0.0.1") as target:
        spec = dataclasses.replace(spec, schema_registry_url=target.schema_registry_url)   # as ``load`` does
        create_topics(target.bootstrap, spec.topics, 1)
        summary = run_load(spark, spec, target.bootstrap, tmp_path, {"run_id": "avro-test"}, show_progress=False)
        summary["cluster_metrics"] = scrape_metrics(target.metrics_url)
        records = [value for p in range(2) for _, _, value in target.cluster.read_all("avro", p)]
        client = SchemaRegistryClient({"url": target.schema_registry_url})
        decoded = [AvroDeserializer(client)(v, SerializationContext("avro", MessageField.VALUE)) for v in records]
        versions = client.get_versions("avro-value")

    assert summary["task_errors"] == []
    produced = summary["produced"]
    assert produced["failed"] == 0 and produced["acked"] == produced["attempted"] == len(records) > 0
    assert summary["producers"]["avro"] == {**summary["producers"]["avro"], "serializer": "avro",
                                            "acked": produced["acked"]}
    assert summary["consumed"]["consumer:audit"]["missing"] == 0
    # Both instances registered the same schema: one version, and every record carries it.
    assert versions == [1]
    assert {r["producer"] for r in decoded} == {"producer:avro:0", "producer:avro:1"}
    assert all(len(r["payload"]) == 100 for r in decoded)
    assert sorted(r["seq"] for r in decoded if r["producer"] == "producer:avro:0") == \
        list(range(sum(r["producer"] == "producer:avro:0" for r in decoded)))
    counters = summary["cluster_metrics"]["counters"]
    assert counters["kafka_emu_schema_registry_requests"] >= 2   # a registration per instance
    line = next(b.text for b in summary_blocks(summary) if b.text.startswith("Schema registry"))
    assert line.startswith(f"Schema registry {target.schema_registry_url}: ")
    assert line.endswith(", subjects 1, versions 1, schemas 1.")
