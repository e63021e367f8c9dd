"""confluent-kafka's SchemaRegistryClient with its Avro, JSON and Protobuf serializers and deserializers,
round-tripping records through the brokers of the same cluster."""
from __future__ import annotations

import json

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from registry_support import REGISTRY

pytestmark = pytest.mark.kafka_cluster(**REGISTRY)

V1 = json.dumps({"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]})
V2 = json.dumps({"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"},
                                                              {"name": "age", "type": "int", "default": 0}]})
BAD = json.dumps({"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"},
                                                               {"name": "email", "type": "string"}]})


def roundtrip(cluster, topic: str, serializer, deserializer, values: list) -> list:
    cluster.create_topic(topic, 1, 1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for value in values:
        producer.produce(topic, serializer(value, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    out = []
    try:
        while len(out) < len(values):
            msg = consumer.poll(10)
            assert msg is not None and msg.error() is None
            out.append(deserializer(msg.value(), SerializationContext(topic, MessageField.VALUE)))
    finally:
        consumer.close()
    return out


@pytest.fixture()
def client(kafka_cluster) -> SchemaRegistryClient:
    kafka_cluster.reset()
    return SchemaRegistryClient({"url": kafka_cluster.schema_registry_url})


def test_avro_roundtrip_evolution_and_refusal(kafka_cluster, client: SchemaRegistryClient) -> None:
    values = [{"name": "a"}, {"name": "b"}]
    got = roundtrip(kafka_cluster, "users", AvroSerializer(client, V1), AvroDeserializer(client), values)
    assert got == values
    v2 = AvroSerializer(client, V2)
    assert roundtrip(kafka_cluster, "users2", v2, AvroDeserializer(client), [{"name": "c", "age": 3}]) == [
        {"name": "c", "age": 3}]
    v2_users = AvroSerializer(client, V2)
    v2_users({"name": "d", "age": 4}, SerializationContext("users", MessageField.VALUE))
    assert client.get_latest_version("users-value").version == 2          # a compatible evolution
    with pytest.raises(SchemaRegistryError, match="incompatible") as refused:   # BACKWARD refuses, 409
        AvroSerializer(client, BAD)({"name": "e", "email": "x"}, SerializationContext("users", MessageField.VALUE))
    assert refused.value.http_status_code == 409
    assert client.get_versions("users-value") == [1, 2]


def test_json_schema_roundtrip(kafka_cluster, client: SchemaRegistryClient) -> None:
    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
                         "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
                         "required": ["id"]})
    values = [{"id": 1, "item": "x"}, {"id": 2}]
    got = roundtrip(kafka_cluster, "orders", JSONSerializer(schema, client), JSONDeserializer(None, schema_registry_client=client),
                    values)
    assert got == values


def test_protobuf_roundtrip_with_an_import_reference(kafka_cluster, client: SchemaRegistryClient) -> None:
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    from google.protobuf import timestamp_pb2
    from google.protobuf.descriptor_pb2 import FileDescriptorProto
    from google.protobuf import descriptor_pool, message_factory

    fdp = FileDescriptorProto(name="event.proto", package="emu", syntax="proto3",
                              dependency=["google/protobuf/timestamp.proto"])
    msg = fdp.message_type.add(name="Event")
    msg.field.add(name="name", number=1, type=9, label=1)
    msg.field.add(name="at", number=2, type=11, label=1, type_name=".google.protobuf.Timestamp")
    pool = descriptor_pool.DescriptorPool()
    ts = FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(ts)
    pool.Add(ts)
    pool.Add(fdp)
    event_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("emu.Event"))
    serializer = ProtobufSerializer(event_cls, client, {"use.deprecated.format": False})
    deserializer = ProtobufDeserializer(event_cls, {"use.deprecated.format": False})
    event = event_cls(name="hello")
    event.at.seconds = 42
    got = roundtrip(kafka_cluster, "events", serializer, deserializer, [event])
    assert got[0].name == "hello" and got[0].at.seconds == 42
    assert client.get_subjects() == ["events-value"]   # a well-known import needs no reference
    assert client.get_latest_version("events-value").schema.schema_type == "PROTOBUF"
