"""What the schema registry tests share: the cluster they run on, a REST client, Avro schemas."""
from __future__ import annotations

import http.client
import json
from typing import Any

REGISTRY = {"brokers": 1, "schema_registry_port": 0,
            "config": {"offsets.topic.replication.factor": 1, "default.replication.factor": 1}}


class Rest:
    """One keep-alive connection to the registry; ``call`` returns (status, decoded JSON or text)."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/vnd.schemaregistry.v1+json",
             raw: bytes | None = None) -> tuple[int, Any]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        headers = {"Content-Type": content_type} if data is not None else {}
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        text = response.read().decode()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text

    def register(self, subject: str, schema: str, schema_type: str = "AVRO", **extra: Any) -> tuple[int, Any]:
        return self.call("POST", f"/subjects/{subject}/versions", {"schema": schema, "schemaType": schema_type, **extra})


def avro_record(*fields: dict[str, Any], name: str = "myrecord") -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields)})
