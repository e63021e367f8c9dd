"""Ports of Confluent's RestApiTest and RestApiCompatibilityTest over real HTTP, bad input answered with
Confluent's errors and changing nothing, soft and hard deletes, modes, and the test control's faults."""
from __future__ import annotations

import json
import time

import pytest

from registry_support import REGISTRY, Rest, avro_record

pytestmark = pytest.mark.kafka_cluster(**REGISTRY)

F1 = {"name": "f1", "type": "string"}
S1 = avro_record(F1)
S2 = avro_record(F1, {"name": "f2", "type": "string", "default": "x"})
S3 = avro_record(F1, {"name": "f3", "type": "string"})


def test_register_same_schema_under_two_subjects(rest: Rest) -> None:
    """RestApiTest.testRegisterSameSchemaOnDifferentSubject: one id, version 1 in each subject."""
    status, first = rest.register("s1", S1)
    assert status == 200 and first["id"] == 1 and first["version"] == 1
    assert rest.register("s2", S1)[1]["id"] == 1
    assert rest.register("s1", S1)[1] == first                      # idempotent
    assert rest.call("GET", "/schemas/ids/1/versions")[1] == [{"subject": "s1", "version": 1},
                                                               {"subject": "s2", "version": 1}]
    assert rest.call("GET", "/schemas/ids/1/subjects")[1] == ["s1", "s2"]
    assert rest.call("GET", "/subjects")[1] == ["s1", "s2"]


def test_schema_by_id_and_versions(rest: Rest) -> None:
    """RestApiTest.testBasic: versions, latest, raw schema, schema by id, lookup under subject."""
    rest.register("t", S1)
    rest.register("t", S2)
    assert rest.call("GET", "/subjects/t/versions")[1] == [1, 2]
    status, latest = rest.call("GET", "/subjects/t/versions/latest")
    assert status == 200 and latest["version"] == 2 and latest["id"] == 2 and latest["subject"] == "t"
    assert rest.call("GET", "/subjects/t/versions/1/schema")[1] == json.loads(S1)   # the bare schema
    status, by_id = rest.call("GET", "/schemas/ids/2")
    assert status == 200 and json.loads(by_id["schema"]) == json.loads(S2)
    status, found = rest.call("POST", "/subjects/t", {"schema": S1})
    assert status == 200 and (found["version"], found["id"]) == (1, 1)
    assert rest.call("GET", "/schemas/types")[1] == ["AVRO", "JSON", "PROTOBUF"]


def test_incompatible_schema_refused_with_409(rest: Rest) -> None:
    """RestApiCompatibilityTest.testCompatibility: BACKWARD refuses a field without default; NONE allows it."""
    rest.register("c", S1)
    status, error = rest.register("c", S3)
    assert status == 409 and error["error_code"] == 409
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in error["message"]
    assert rest.call("POST", "/compatibility/subjects/c/versions/latest", {"schema": S3})[1] == {"is_compatible": False}
    verbose = rest.call("POST", "/compatibility/subjects/c/versions/latest?verbose=true", {"schema": S3})[1]
    assert verbose["is_compatible"] is False and verbose["messages"]
    assert rest.call("PUT", "/config/c", {"compatibility": "NONE"})[1] == {"compatibility": "NONE"}
    assert rest.register("c", S3)[1]["version"] == 2
    assert rest.call("GET", "/config/c")[1]["compatibilityLevel"] == "NONE"


def test_transitive_levels(rest: Rest) -> None:
    """RestApiCompatibilityTest: BACKWARD checks the latest only, BACKWARD_TRANSITIVE every version."""
    a = avro_record({"name": "f", "type": "int"})
    b = avro_record({"name": "f", "type": "string", "default": ""}, {"name": "g", "type": "int", "default": 0})
    c = avro_record({"name": "g", "type": "int"})
    rest.call("PUT", "/config/tr", {"compatibility": "NONE"})
    rest.register("tr", a)
    rest.register("tr", b)
    rest.call("PUT", "/config/tr", {"compatibility": "BACKWARD_TRANSITIVE"})
    assert rest.register("tr", c)[0] == 409                      # c cannot read a's records (no g)
    rest.call("PUT", "/config/tr", {"compatibility": "BACKWARD"})
    assert rest.register("tr", c)[1]["version"] == 3


def test_config_and_mode_endpoints(rest: Rest) -> None:
    """RestApiTest.testGetConfig/testUpdateConfig and the mode resource."""
    assert rest.call("GET", "/config")[1] == {"compatibilityLevel": "BACKWARD"}
    status, error = rest.call("GET", "/config/nosuch")
    assert status == 404 and error["error_code"] == 40408
    assert rest.call("GET", "/config/nosuch?defaultToGlobal=true")[1]["compatibilityLevel"] == "BACKWARD"
    status, error = rest.call("PUT", "/config", {"compatibility": "INVALID"})
    assert status == 422 and error["error_code"] == 42203
    assert rest.call("PUT", "/config", {"compatibility": "full"})[1] == {"compatibility": "FULL"}
    assert rest.call("DELETE", "/config")[1]["compatibilityLevel"] == "FULL"
    assert rest.call("GET", "/config")[1] == {"compatibilityLevel": "BACKWARD"}
    assert rest.call("GET", "/mode")[1] == {"mode": "READWRITE"}
    assert rest.call("PUT", "/mode", {"mode": "BOGUS"})[1]["error_code"] == 42204
    assert rest.call("PUT", "/mode/ro", {"mode": "READONLY"})[1] == {"mode": "READONLY"}
    status, error = rest.register("ro", S1)
    assert status == 422 and error["error_code"] == 42205
    assert rest.call("DELETE", "/mode/ro")[1] == {"mode": "READONLY"}
    assert rest.register("ro", S1)[0] == 200


def test_import_mode_with_explicit_ids(rest: Rest) -> None:
    """RestApiTest.testImportMode: ids and versions given; the id generator continues above them."""
    assert rest.call("PUT", "/mode", {"mode": "IMPORT"})[0] == 200
    status, out = rest.register("imp", S1, id=100, version=1)
    assert status == 200 and out["id"] == 100
    assert rest.register("imp", S2, id=100, version=2)[1]["error_code"] == 42205   # another schema's id
    assert rest.register("imp2", S2)[1]["error_code"] == 42205                      # no id in IMPORT
    rest.call("PUT", "/mode", {"mode": "READWRITE"})
    assert rest.register("imp", S2)[1]["id"] == 101
    assert rest.call("PUT", "/mode", {"mode": "IMPORT"})[1]["error_code"] == 42205  # subjects exist


def test_soft_and_hard_delete(rest: Rest) -> None:
    """RestApiTest.testDeleteSchemaVersionBasic, testSubjectSoftDelete, testDeleteSchemaVersionPermanent."""
    rest.register("d", S1)
    rest.register("d", S2)
    assert rest.call("DELETE", "/subjects/d/versions/2/?permanent=true")[1]["error_code"] == 40407
    assert rest.call("DELETE", "/subjects/d/versions/2")[1] == 2
    assert rest.call("GET", "/subjects/d/versions")[1] == [1]
    assert rest.call("GET", "/subjects/d/versions?deleted=true")[1] == [1, 2]
    assert rest.call("GET", "/subjects/d/versions/2")[1]["error_code"] == 40402
    assert rest.call("GET", "/subjects/d/versions/2?deleted=true")[1]["version"] == 2
    assert rest.call("GET", "/schemas/ids/2")[0] == 200                  # the id still decodes
    assert rest.call("DELETE", "/subjects/d/versions/2")[1]["error_code"] == 40406
    assert rest.register("d", S2)[1] == {"id": 2, "version": 3, "schemaType": "AVRO", "schema": json.dumps(
        json.loads(S2), separators=(",", ":"))}                             # re-registered: new version, same id
    assert rest.call("DELETE", "/subjects/d")[1] == [1, 3]
    assert rest.call("GET", "/subjects")[1] == []
    assert rest.call("GET", "/subjects?deleted=true")[1] == ["d"]
    assert rest.call("DELETE", "/subjects/d")[1]["error_code"] == 40404
    assert rest.call("DELETE", "/subjects/d?permanent=true")[1] == [1, 3]
    assert rest.call("GET", "/subjects?deleted=true")[1] == []
    assert rest.call("GET", "/schemas/ids/2")[1]["error_code"] == 40403


BAD_INPUTS = [
    ("POST", "/subjects/b/versions", b"{not json", "application/json", 400, 400),
    ("POST", "/subjects/b/versions", b'{"schema": "{\\"type\\": \\"nosuchtype\\"}"}', "application/json", 422, 42201),
    ("POST", "/subjects/b/versions", b'{"schema": ""}', "application/json", 422, 42201),
    ("POST", "/subjects/b/versions", b'{"schema": 5}', "application/json", 422, 42201),
    ("POST", "/subjects/b/versions", b'{"schema": "\\"int\\"", "schemaType": "XML"}', "application/json", 422, 42201),
    ("POST", "/subjects/b/versions", b'{"schema": "\\"int\\""}', "text/plain", 415, 415),
    ("POST", "/subjects/b/versions", b'{"schema": "\\"int\\"", "ruleSet": {"x": 1}}', "application/json", 422, 42201),
    ("GET", "/subjects/nosuch/versions", None, "", 404, 40401),
    ("GET", "/subjects/nosuch/versions/1", None, "", 404, 40401),
    ("GET", "/subjects/b0/versions/0", None, "", 422, 42202),
    ("GET", "/subjects/b0/versions/2147483648", None, "", 422, 42202),
    ("GET", "/subjects/b0/versions/-5", None, "", 422, 42202),
    ("GET", "/subjects/b0/versions/abc", None, "", 422, 42202),
    ("GET", "/subjects/b0/versions/99", None, "", 404, 40402),
    ("GET", "/schemas/ids/999", None, "", 404, 40403),
    ("GET", "/schemas/ids/notanumber", None, "", 404, 404),
    ("GET", "/no/such/path", None, "", 404, 404),
    ("PATCH", "/subjects", None, "", 405, 405),
]


@pytest.mark.parametrize(("method", "path", "raw", "content_type", "status", "code"), BAD_INPUTS)
def test_bad_input_gets_confluent_errors_and_changes_nothing(rest: Rest, method: str, path: str, raw: bytes | None,
                                                              content_type: str, status: int, code: int) -> None:
    """RestApiTest.testRegisterInvalidSchemaBadType, testInvalidVersion, testSchemaNotFound & co."""
    rest.register("b0", S1)
    before = [rest.call("GET", p)[1] for p in ("/subjects?deleted=true", "/subjects/b0/versions?deleted=true")]
    got_status, error = rest.call(method, path, raw=raw, content_type=content_type or "application/json")
    assert (got_status, error["error_code"]) == (status, code), error
    assert isinstance(error["message"], str) and error["message"]
    after = [rest.call("GET", p)[1] for p in ("/subjects?deleted=true", "/subjects/b0/versions?deleted=true")]
    assert after == before


def test_oversized_schema_refused(rest: Rest, kafka_cluster) -> None:
    registry = kafka_cluster.schema_registry.registry
    big = avro_record(*({"name": f"f{i}", "type": "string", "doc": "x" * 100} for i in range(20)))
    limit, registry.max_schema_bytes = registry.max_schema_bytes, len(big) - 1
    try:
        status, error = rest.register("big", big)
    finally:
        registry.max_schema_bytes = limit
    assert (status, error["error_code"]) == (422, 42209)
    assert rest.call("GET", "/subjects")[1] == []


def test_references_across_subjects(rest: Rest) -> None:
    """RestApiTest.testSchemaReferences: a named type from another subject; referencedby; delete refused."""
    rest.register("ref", json.dumps({"type": "record", "name": "Inner", "namespace": "n",
                                     "fields": [{"name": "x", "type": "int"}]}))
    outer = json.dumps({"type": "record", "name": "Outer", "namespace": "n", "fields": [{"name": "i", "type": "Inner"}]})
    status, out = rest.register("outer", outer, references=[{"name": "n.Inner", "subject": "ref", "version": 1}])
    assert status == 200, out
    assert rest.call("GET", "/subjects/ref/versions/1/referencedby")[1] == [out["id"]]
    assert rest.call("DELETE", "/subjects/ref/versions/1")[1]["error_code"] == 42206
    assert rest.register("bad", outer)[1]["error_code"] == 42201   # Inner unknown without the reference


def test_injected_registry_errors_and_latency(rest: Rest, kafka_cluster) -> None:
    """Test control fails registry calls like broker calls: status by Confluent code, then normal service."""
    rest.register("f", S1)
    kafka_cluster.control.inject_registry_errors([50001, 40403], endpoint="/schemas/ids/{id}")
    assert rest.call("GET", "/schemas/ids/1")[1]["error_code"] == 50001
    status, error = rest.call("GET", "/schemas/ids/1")
    assert (status, error["error_code"]) == (404, 40403)
    assert rest.call("GET", "/schemas/ids/1")[0] == 200
    kafka_cluster.control.set_registry_latency(150)
    started = time.monotonic()
    assert rest.call("GET", "/subjects")[0] == 200
    assert time.monotonic() - started >= 0.15
    kafka_cluster.clear_faults()
    assert kafka_cluster.control.describe()["schema_registry"] == {"errors": [], "latency_ms": 0}


def test_store_failure_is_50001_and_changes_nothing(rest: Rest, kafka_cluster) -> None:
    """A write the cluster cannot take (its only broker down, so _schemas has no leader) is a 50001 store
    error once the store's retries run out; nothing is applied, and writes work again after the restart."""
    store = kafka_cluster.schema_registry.registry.store
    timeout, store.timeout_s = store.timeout_s, 0.3
    kafka_cluster.stop_broker(0)
    try:
        status, error = rest.register("st", S1)
    finally:
        store.timeout_s = timeout
        kafka_cluster.start_broker(0)
    assert (status, error["error_code"]) == (500, 50001)
    assert rest.call("GET", "/subjects")[1] == []
    assert rest.register("st", S1)[0] == 200


def test_registry_faults_over_the_control_http_api(rest: Rest, kafka_cluster) -> None:
    """POST /v1/faults/registry queues registry errors for suites in any language."""
    from kafka_emu.broker.cluster.control.control_http import serve_control

    control = serve_control(kafka_cluster)
    try:
        status, body = Rest(control.url).call("POST", "/v1/faults/registry", {"errors": [50001], "method": "GET"},
                                              content_type="application/json")
        assert status == 201 and body["injection"]["errors"] == [50001]
        assert rest.call("GET", "/subjects")[1]["error_code"] == 50001
        assert rest.call("GET", "/subjects")[0] == 200
    finally:
        control.close()


def test_metrics_of_known_activity(rest: Rest, kafka_cluster) -> None:
    """The registry's series, as the cluster's ClusterMetrics scrapes them (metrics.schema_registry),
    after known requests: answered requests by route and status (counters: the module's earlier tests
    counted too, so deltas), time spent, and what the registry then holds; no broker_id label."""
    from prometheus_client.parser import text_string_to_metric_families

    from kafka_emu.metrics import ClusterMetrics

    requests = "kafka_emu_schema_registry_requests_total"
    expected = {("POST", "/subjects/{subject}/versions", "200"): 3, ("GET", "/schemas/ids/{id}", "200"): 2,
                ("GET", "/schemas/ids/{id}", "404"): 1, ("DELETE", "/subjects/{subject}/versions/{version}", "200"): 1,
                ("GET", "unknown", "404"): 1}
    with ClusterMetrics(kafka_cluster) as metrics:
        def count(key: tuple[str, str, str]) -> float:
            return metrics.sample(requests, dict(zip(("method", "endpoint", "status"), key))) or 0.0

        before = {key: count(key) for key in expected}
        rest.register("m", S1)
        rest.register("m", S2)
        rest.register("j", json.dumps({"type": "object"}), "JSON")
        rest.call("GET", "/schemas/ids/1")
        rest.call("GET", "/schemas/ids/3")
        rest.call("GET", "/schemas/ids/99")
        rest.call("DELETE", "/subjects/m/versions/1")
        rest.call("GET", "/nowhere")
        assert {key: count(key) - before[key] for key in expected} == expected
        assert metrics.sample("kafka_emu_schema_registry_request_seconds_total",
                              {"method": "POST", "endpoint": "/subjects/{subject}/versions"}) > 0
        contents = {name: metrics.sample(f"kafka_emu_schema_registry_{name}")
                    for name in ("subjects", "versions", "soft_deleted_versions", "max_schema_id")}
        assert contents == {"subjects": 2, "versions": 2, "soft_deleted_versions": 1, "max_schema_id": 3}
        assert {t: metrics.sample("kafka_emu_schema_registry_schemas", {"schema_type": t})
                for t in ("AVRO", "JSON", "PROTOBUF")} == {"AVRO": 2, "JSON": 1, "PROTOBUF": 0}
        families = [f for f in text_string_to_metric_families(metrics.exposition())
                    if f.name.startswith("kafka_emu_schema_registry")]
        assert len(families) == 7 and all("broker_id" not in s.labels for f in families for s in f.samples)
