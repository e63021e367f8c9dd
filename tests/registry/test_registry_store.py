"""Ports of Confluent's KafkaStoreTest (storage and replay): records in _schemas in Confluent's formats,
a registry restarted on the same log gets subjects, ids and versions back; ids monotonic and stable."""
from __future__ import annotations

import json

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry_support import REGISTRY, Rest, avro_record
from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.cluster.schema_registry.registry import SchemaRegistry

CONFIG = REGISTRY["config"]


def test_records_use_confluent_key_and_value_formats() -> None:
    """KafkaStoreTest.testSimplePut / SchemaRegistryKeysTest: the key and value JSON of each change."""
    with EmbeddedCluster(brokers=1, config=CONFIG, schema_registry_port=0) as cluster:
        rest = Rest(cluster.schema_registry_url)
        rest.register("s", avro_record({"name": "a", "type": "int"}))
        rest.call("PUT", "/config/s", {"compatibility": "FULL"})
        rest.call("PUT", "/mode/s", {"mode": "READONLY"})
        rest.call("DELETE", "/mode/s")
        rest.call("DELETE", "/subjects/s")
        records = [(json.loads(k), v and json.loads(v)) for _, k, v in cluster.read_all("_schemas", 0)]
    assert records[0] == ({"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1},
                          {"subject": "s", "version": 1, "id": 1, "schemaType": "AVRO",
                           "schema": '{"type":"record","name":"myrecord","fields":[{"name":"a","type":"int"}]}',
                           "deleted": False})
    assert records[1] == ({"keytype": "CONFIG", "subject": "s", "magic": 0},
                          {"compatibilityLevel": "FULL", "subject": "s"})
    assert records[2] == ({"keytype": "MODE", "subject": "s", "magic": 0}, {"subject": "s", "mode": "READONLY"})
    assert records[3] == ({"keytype": "MODE", "subject": "s", "magic": 0}, None)
    assert records[4] == ({"keytype": "DELETE_SUBJECT", "subject": "s", "magic": 0}, {"subject": "s", "version": 1})
    assert cluster.metadata.topics["_schemas"].configs["cleanup.policy"] == ["compact"]


def test_restart_on_log_dirs_keeps_subjects_ids_and_versions(tmp_path) -> None:
    """KafkaStoreTest.testRestartStore: a new process on the same log.dirs replays _schemas."""
    config = {**CONFIG, "log.dirs": str(tmp_path)}
    with EmbeddedCluster(brokers=1, config=config, schema_registry_port=0) as cluster:
        rest = Rest(cluster.schema_registry_url)
        ids = [rest.register(f"s{i}", avro_record({"name": f"f{i}", "type": "int"}))[1]["id"] for i in range(3)]
        rest.register("s0", avro_record({"name": "f0", "type": "int"}, {"name": "g", "type": "int", "default": 1}))
        rest.call("DELETE", "/subjects/s1/versions/1")
        rest.call("PUT", "/config", {"compatibility": "NONE"})
    with EmbeddedCluster(brokers=1, config=config, schema_registry_port=0) as cluster:
        rest = Rest(cluster.schema_registry_url)
        assert rest.call("GET", "/subjects")[1] == ["s0", "s2"]
        assert rest.call("GET", "/subjects/s0/versions")[1] == [1, 2]
        assert [rest.call("GET", f"/subjects/s{i}/versions/1?deleted=true")[1]["id"] for i in range(3)] == ids
        assert rest.call("GET", "/config")[1] == {"compatibilityLevel": "NONE"}
        assert rest.register("new", avro_record({"name": "n", "type": "int"}))[1]["id"] == 5   # after the max


class _Replayed:
    """A registry replaying the same cluster's _schemas into a fresh state (a restarted registry)."""

    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.registry = SchemaRegistry(cluster).start()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 4), st.booleans()), min_size=1,
                max_size=12))
@pytest.mark.kafka_cluster(**REGISTRY)
def test_ids_monotonic_and_stable_across_replay(kafka_cluster: EmbeddedCluster, ops: list[tuple[str, int, bool]]
                                                ) -> None:
    """Whatever is registered and soft-deleted, ids only grow, equal schemas share one, and a replay of
    the log gives every version back with its id."""
    cluster = kafka_cluster
    cluster.reset()
    rest = Rest(cluster.schema_registry_url)
    rest.call("PUT", "/config", {"compatibility": "NONE"})
    seen: dict[int, int] = {}
    highest = 0
    for subject, field, delete in ops:
        status, out = rest.register(subject, avro_record({"name": f"f{field}", "type": "int"}))
        assert status == 200
        assert seen.setdefault(field, out["id"]) == out["id"]
        if out["id"] > highest:
            assert out["id"] == highest + 1
            highest = out["id"]
        if delete:
            rest.call("DELETE", f"/subjects/{subject}/versions/{out['version']}")
    live = cluster.schema_registry.registry
    replayed = _Replayed(cluster).registry
    for subject in ("a", "b", "c"):
        assert [(v.version, v.id, v.deleted) for v in live._sorted(subject, True)] == \
               [(v.version, v.id, v.deleted) for v in replayed._sorted(subject, True)]
    assert replayed.max_id == highest
