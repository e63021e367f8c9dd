"""A producer instance: sends at the spec's rate and records each message's delivery outcome.

confluent-kafka reports delivery through callbacks served by ``poll``/``flush`` on this task's
thread, with librdkafka's own produce-to-ack latency (``Message.latency``). kafka-python resolves
futures on its sender thread; its callbacks append to the same sink, which is safe because a
list append is atomic under the GIL and nothing reads the sink until the task has ended.

``serializer: avro`` (confluent only) wraps each drawn payload in an ``AVRO_SCHEMA`` record
written by confluent-kafka's ``AvroSerializer`` against the spec's schema registry, as an
application's producer would: the serializer registers the schema under ``<topic>-value`` on its
first record for a topic and then serves the id from its client's cache. A record the serializer
refuses (the registry down or answering an error) is a failed produce attempt whose error names
the registry's error code; ``bytes`` in the samples is the serialized size.
"""
from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any, Callable

from kafka_emu.loadgen.pacing import Pacer, wait_until
from kafka_emu.loadgen.payloads import PayloadSource
from kafka_emu.loadgen.samples import SampleSink

FLUSH_TIMEOUT_S = 15.0
# Client settings per ``batching`` mode. "latency": small batches sent almost at once (what the
# mixed workloads measure); "throughput": wait longer and send bigger batches, so the generator
# itself is not what limits a saturation ramp (Kafka's own producer-perf-test advice).
BATCHING = {
    "confluent": {"latency": {"linger.ms": 5},
                  "throughput": {"linger.ms": 20, "batch.size": 1_000_000, "batch.num.messages": 10_000,
                                 "queue.buffering.max.messages": 1_000_000}},
    "kafka-python": {"latency": {"linger_ms": 5},
                     "throughput": {"linger_ms": 20, "batch_size": 262_144, "buffer_memory": 128 * 1024 * 1024}},
}


AVRO_SCHEMA = json.dumps({
    "type": "record", "name": "LoadRecord", "namespace": "kafka_emu.loadgen",
    "doc": "A load-generator record: the producer task that wrote it, its sequence number there, a payload "
           "of the spec's size distribution.",
    "fields": [{"name": "producer", "type": "string"}, {"name": "seq", "type": "long"},
               {"name": "payload", "type": "bytes"}],
})

ValueSource = Callable[[str], bytes]   # topic -> the next record value


def avro_values(registry_url: str, task: str, payloads: PayloadSource) -> ValueSource:
    """Values serialized by ``AvroSerializer`` through the registry at ``registry_url``."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    serializer = AvroSerializer(SchemaRegistryClient({"url": registry_url}), AVRO_SCHEMA)
    contexts: dict[str, SerializationContext] = {}
    seq = itertools.count()

    def value(topic: str) -> bytes:
        ctx = contexts.get(topic)
        if ctx is None:
            ctx = contexts[topic] = SerializationContext(topic, MessageField.VALUE)
        return serializer({"producer": task, "seq": next(seq), "payload": payloads.next_value()}, ctx)

    return value


def _produce_error(exc: Exception) -> str:
    """The error column of a record that never reached the client's queue."""
    from confluent_kafka import KafkaError

    err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    if err is not None:
        return err.name()
    code = getattr(exc, "error_code", None)   # SchemaRegistryError: the registry's answer
    return f"{type(exc).__name__}:{code}" if code is not None else type(exc).__name__


def run_producer(params: dict[str, Any], bootstrap: str, t0: float, start_s: float, stop_s: float,
                 sink: SampleSink, stop_event: threading.Event) -> None:
    if not wait_until(t0 + start_s, stop_event):
        return
    payloads = PayloadSource(params["size"], params["keys"], params["seed"])
    pacer = Pacer(float(params["rate"]), t0 + start_s, t0 + stop_s, stop_event)
    try:
        if params["client"] == "kafka-python":
            _run_kafka_python(params, bootstrap, pacer, payloads, sink)
        else:
            _run_confluent(params, bootstrap, pacer, payloads, sink)
    finally:
        signal_done(bootstrap, params["control_topic"], sink.task)


def signal_done(bootstrap: str, control_topic: str, task: str) -> None:
    """Tell the readers this producer has nothing more in flight (see ``loadgen.tasks``)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0})
    for _ in range(3):
        producer.produce(control_topic, task.encode())
        if producer.flush(10) == 0:
            return


def _run_confluent(params: dict[str, Any], bootstrap: str, pacer: Pacer, payloads: PayloadSource,
                   sink: SampleSink) -> None:
    from confluent_kafka import KafkaError, Producer

    acks = {-1: "all", 0: "0", 1: "1"}[params["acks"]]
    conf = {"bootstrap.servers": bootstrap, "acks": acks, "client.id": sink.task, "message.timeout.ms": 30000,
            **BATCHING["confluent"][params.get("batching", "latency")], **params["config"]}
    per_transaction = int(params.get("transaction_records", 0))
    if per_transaction:
        # one transactional id per task: a restarted task fences its previous incarnation
        conf["transactional.id"] = sink.task
    producer = Producer(conf)
    topics = params["topics"]
    values: ValueSource = (avro_values(params["schema_registry_url"], sink.task, payloads)
                           if params.get("serializer") == "avro" else lambda _topic: payloads.next_value())
    in_transaction = 0
    if per_transaction:
        producer.init_transactions(30)

    def on_delivery(err: Any, msg: Any) -> None:
        lat = msg.latency()
        value = msg.value()
        sink.add("produce", None if lat is None else lat * 1000.0,
                 error=err.name() if err is not None else "", topic=msg.topic(), partition=msg.partition(),
                 offset=msg.offset() if err is None else None, nbytes=len(value) if value else 0)

    def end_transaction() -> None:
        """Commit what this transaction holds; a failed commit is recorded as a produce error
        (its records were delivered but are aborted, so readers will miss them)."""
        try:
            producer.commit_transaction(30)
        except Exception as exc:
            err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            sink.add("produce", None, error=f"commit:{err.name() if err else type(exc).__name__}", topic=topics[0])
            if err is None or not err.fatal():
                producer.abort_transaction(30)
            else:
                raise   # a fenced producer can do nothing more; the task ends

    i = 0
    while pacer.running():
        for _ in range(pacer.due()):
            if per_transaction and in_transaction == 0:
                producer.begin_transaction()
            topic = topics[i % len(topics)]
            try:
                producer.produce(topic, values(topic), payloads.next_key(), on_delivery=on_delivery)
                in_transaction += 1
            except BufferError:
                sink.add("produce", None, error="_QUEUE_FULL", topic=topic)
                producer.poll(0.05)
            except Exception as exc:  # KafkaException from produce() itself, or the serializer's
                sink.add("produce", None, error=_produce_error(exc), topic=topic)
            pacer.sent += 1
            i += 1
            if per_transaction and in_transaction >= per_transaction:
                end_transaction()
                in_transaction = 0
        producer.poll(0)
        pacer.wait_next()
    if per_transaction and in_transaction:
        end_transaction()
    remaining = producer.flush(FLUSH_TIMEOUT_S)
    for _ in range(remaining):
        sink.add("produce", None, error="_FLUSH_TIMEOUT")


def _run_kafka_python(params: dict[str, Any], bootstrap: str, pacer: Pacer, payloads: PayloadSource,
                      sink: SampleSink) -> None:
    from kafka import KafkaProducer

    acks = {-1: "all", 0: 0, 1: 1}[params["acks"]]
    extra = {**BATCHING["kafka-python"][params.get("batching", "latency")],
             **{k.replace(".", "_"): v for k, v in params["config"].items()}}
    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks=acks, client_id=sink.task, **extra)
    topics = params["topics"]

    def ok(started: float, size: int, md: Any) -> None:
        sink.add("produce", (time.perf_counter() - started) * 1000.0, topic=md.topic, partition=md.partition,
                 offset=md.offset, nbytes=size)

    def failed(started: float, size: int, topic: str, exc: BaseException) -> None:
        sink.add("produce", (time.perf_counter() - started) * 1000.0, error=type(exc).__name__, topic=topic,
                 nbytes=size)

    i = 0
    try:
        while pacer.running():
            for _ in range(pacer.due()):
                topic = topics[i % len(topics)]
                value = payloads.next_value()
                started = time.perf_counter()
                fut = producer.send(topic, value=value, key=payloads.next_key())
                fut.add_callback(lambda md, s=started, n=len(value): ok(s, n, md))
                fut.add_errback(lambda exc, s=started, n=len(value), t=topic: failed(s, n, t, exc))
                pacer.sent += 1
                i += 1
            pacer.wait_next()
        producer.flush(FLUSH_TIMEOUT_S)
    finally:
        producer.close(timeout=5)
