"""Prometheus collector of the schema registry: requests by endpoint and status, and what it holds.

Registered on the cluster's metrics registry when both run (``EmbeddedCluster.start``, ``serve``):

* ``kafka_emu_schema_registry_requests_total{method, endpoint, status}`` (counter): answered
  requests, ``endpoint`` the route template (``/subjects/{subject}/versions``), ``unknown`` for a
  path without route;
* ``kafka_emu_schema_registry_request_seconds_total{method, endpoint}`` (counter): time spent
  answering them (divide by the requests' rate for a mean);
* ``kafka_emu_schema_registry_subjects``, ``..._versions``, ``..._soft_deleted_versions``
  (gauges): live subjects, live versions and soft-deleted versions;
* ``kafka_emu_schema_registry_schemas{schema_type}`` (gauge): distinct schema ids per type;
* ``kafka_emu_schema_registry_max_schema_id`` (gauge): the largest id given out.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from kafka_emu.broker.cluster.schema_registry.rest import SchemaRegistryServer

PREFIX = "kafka_emu_schema_registry"


class SchemaRegistryCollector:
    def __init__(self, server: "SchemaRegistryServer") -> None:
        self.server = server

    def describe(self) -> list[Any]:
        return list(self.collect())

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        requests, seconds = self.server.counts.snapshot()
        family = CounterMetricFamily(f"{PREFIX}_requests", "Schema registry requests answered, by route "
                                     "and HTTP status", labels=["method", "endpoint", "status"])
        for (method, endpoint, status), n in sorted(requests.items()):
            family.add_metric([method, endpoint, str(status)], float(n))
        yield family
        family = CounterMetricFamily(f"{PREFIX}_request_seconds", "Seconds spent answering schema registry "
                                     "requests, by route", labels=["method", "endpoint"])
        for (method, endpoint), total in sorted(seconds.items()):
            family.add_metric([method, endpoint], total)
        yield family
        counts = self.server.registry.counts()
        for name, value, text in (("subjects", counts.subjects, "Subjects with a live version"),
                                  ("versions", counts.versions, "Live (not deleted) subject versions"),
                                  ("soft_deleted_versions", counts.soft_deleted_versions,
                                   "Soft-deleted subject versions"),
                                  ("max_schema_id", counts.max_id, "Largest schema id given out")):
            yield GaugeMetricFamily(f"{PREFIX}_{name}", text, value=float(value))
        family = GaugeMetricFamily(f"{PREFIX}_schemas", "Distinct schema ids, by schema type",
                                   labels=["schema_type"])
        for schema_type in ("AVRO", "JSON", "PROTOBUF"):
            family.add_metric([schema_type], float(counts.by_type.get(schema_type, 0)))
        yield family
