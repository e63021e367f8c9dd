"""Schema registry tests: the registry's REST API over real HTTP, real confluent-kafka clients."""
from __future__ import annotations

from typing import Any

import pytest
from registry_support import Rest

pytest.importorskip("avro", reason="the registry extra is not installed (pip install 'kafka-emu[registry]')")


@pytest.fixture()
def rest(kafka_cluster: Any) -> Rest:
    kafka_cluster.reset()
    client = Rest(kafka_cluster.schema_registry_url)
    yield client
    client.conn.close()
