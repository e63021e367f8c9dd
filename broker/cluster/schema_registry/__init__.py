"""An embedded Confluent Schema Registry (REST API v1) stored in the cluster's ``_schemas`` topic.

A front end of the cluster, like a Kafka client: it reaches the brokers only through
in-process requests (``store.KafkaStore``), and nothing below ``broker.cluster`` imports it.
``EmbeddedCluster(schema_registry_port=0)`` / ``kafka-emu serve --schema-registry-port N``
start it (``rest.serve_schema_registry``); ``registry.SchemaRegistry`` holds the behaviour and
its deliberate differences from Confluent's, ``schema_types`` the AVRO, JSON and PROTOBUF rules.

Its libraries are the ``registry`` extra (``pip install 'kafka-emu[registry]'``):
``require_extra`` turns a missing one into a one-line ``ConfigException`` naming the extra.
"""
from __future__ import annotations

import importlib.util

EXTRA = "registry"
# import name -> what it is for; each is a dependency of the ``registry`` extra
MODULES = {"avro": "AVRO schemas", "jsonschema": "JSON schemas", "google.protobuf": "PROTOBUF schemas",
           "proto_schema_parser": "PROTOBUF schemas"}


def missing_modules() -> list[str]:
    out = []
    for name in MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:   # a missing parent package (google)
            found = False
        if not found:
            out.append(name)
    return out


def require_extra() -> None:
    """ConfigException (one line, naming the extra) when a library of the registry is missing."""
    missing = missing_modules()
    if missing:
        from kafka_emu.broker.server.config import ConfigException

        raise ConfigException(f"the schema registry needs the {EXTRA} extra (missing: {', '.join(missing)}): "
                              f"pip install 'kafka-emu[{EXTRA}]'")
