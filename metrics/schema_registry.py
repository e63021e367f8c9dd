"""The samples of a cluster's embedded schema registry, read from one snapshot per scrape.

The registry (``broker.cluster.schema_registry``) serves the whole cluster, so its families
(``names.SCHEMA_REGISTRY``) carry no ``broker_id``. ``ClusterMetrics`` follows
``cluster.schema_registry`` at every scrape, as it follows ``cluster.servers``: a registry
started or stopped after the metrics is picked up or dropped without registering anything.
``schemas`` has a sample per schema type the registry implements, zero included, so a type's
series exists before its first schema.
"""
from __future__ import annotations

from kafka_emu.metrics import names
from kafka_emu.metrics.broker_metrics import Samples
from kafka_emu.metrics.sources import SchemaRegistrySnapshotView


def collect_schema_registry(samples: Samples, snapshot: SchemaRegistrySnapshotView) -> None:
    for (method, endpoint, status), count in sorted(snapshot.requests.items()):
        samples.add(names.SCHEMA_REGISTRY_REQUESTS, count, method, endpoint, str(status))
    for (method, endpoint), seconds in sorted(snapshot.request_seconds.items()):
        samples.add(names.SCHEMA_REGISTRY_REQUEST_SECONDS, seconds, method, endpoint)
    contents = snapshot.contents
    samples.add(names.SCHEMA_REGISTRY_SUBJECTS, contents.subjects)
    samples.add(names.SCHEMA_REGISTRY_VERSIONS, contents.versions)
    samples.add(names.SCHEMA_REGISTRY_SOFT_DELETED, contents.soft_deleted_versions)
    samples.add(names.SCHEMA_REGISTRY_MAX_ID, contents.max_schema_id)
    for schema_type, count in sorted(contents.schemas_by_type.items()):
        samples.add(names.SCHEMA_REGISTRY_SCHEMAS, count, schema_type)
