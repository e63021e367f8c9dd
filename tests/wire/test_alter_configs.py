"""AlterConfigs (33), IncrementalAlterConfigs (44) and DescribeConfigs (32) with dynamic configs,
over confluent-kafka's AdminClient, kafka-python's KafkaAdminClient, aiokafka's admin client and
raw requests, against a 3-broker cluster.

Ported: Kafka's ``PlaintextAdminIntegrationTest`` (testValidIncrementalAlterConfigs,
testAppendAlreadyExistsConfigsAndSubtractNotExistsConfigs, testInvalidIncrementalAlterConfigs,
testIncrementalAlterConfigsDeleteAndSetBrokerConfigs, testAlterConfigsForLog4jLogLevelsDoesNotWork),
``ConfigAdminManagerTest`` (testPreprocessIncrementalWithDuplicates, testPreprocessLegacyWithDuplicates,
testPreprocessIncrementalWithNulls, testPreprocessLegacyWithNulls, testPreprocessIncrementalWithUnknownResource,
testValidateResourceNameIsCurrentNodeId), ``KafkaApisTest`` (testEmptyLegacyAlterConfigsRequestWithKRaft,
testEmptyIncrementalAlterConfigsRequestWithKRaft, testInvalidLegacyAlterConfigsRequestWithKRaft) and
``DynamicBrokerConfigTest`` (testConfigUpdateWithSomeInvalidConfigs,
testLogRetentionTimeMinutesIsNotDynamicallyReconfigurable, testDynamicLogConfigHandlesSynonymsCorrectly).
"""
from __future__ import annotations

import asyncio
from typing import Any, Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType
from kafka.errors import MessageSizeTooLargeError
from kio.index import load_request_schema as req_cls
from kio.schema.errors import ErrorCode

from kafka_emu.broker.protocol.adapter import build, item_cls
from wire_helpers import RawClient, unique, wait_until

pytestmark = [pytest.mark.timeout(60), pytest.mark.kafka_cluster(brokers=3)]
SET, DELETE, APPEND, SUBTRACT = (AlterConfigOpType.SET, AlterConfigOpType.DELETE, AlterConfigOpType.APPEND,
                                 AlterConfigOpType.SUBTRACT)
TOPIC, BROKER = ResourceType.TOPIC, ResourceType.BROKER


@pytest.fixture(autouse=True)
def clean_cluster(kafka_cluster: Any) -> None:
    """Dynamic broker configs of one test must not leak into the next."""
    kafka_cluster.reset()


@pytest.fixture()
def admin(kafka_cluster: Any) -> Iterator[AdminClient]:
    yield AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers, "log_level": 3})


@pytest.fixture()
def raw(kafka_cluster: Any) -> Iterator[RawClient]:
    client = RawClient(kafka_cluster.broker(0).bootstrap_server)
    yield client
    client.close()


def _topic(admin: AdminClient, partitions: int = 2, rf: int = 3) -> str:
    name = unique("ac")
    admin.create_topics([NewTopic(name, partitions, rf)])[name].result(10)
    return name


def _alter(admin: AdminClient, rtype: ResourceType, name: str, *ops: tuple[str, str | None, AlterConfigOpType],
           validate_only: bool = False) -> KafkaError | None:
    """One IncrementalAlterConfigs through confluent-kafka; its error, None on success."""
    resource = ConfigResource(rtype, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=op) for key, value, op in ops])
    try:
        admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(10)
    except KafkaException as exc:
        return exc.args[0]
    return None


def _alter_default(kafka_cluster: Any, *ops: tuple[str, str | None, AlterConfigOpType],
                   validate_only: bool = False) -> tuple[int, str | None]:
    """(error code, message) of one IncrementalAlterConfigs of the cluster-wide BROKER resource
    "": raw, since confluent-kafka and kafka-python refuse the empty name locally (Java's
    ``kafka-configs --entity-default`` sends it)."""
    client = RawClient(kafka_cluster.bootstrap_servers.split(",")[0])
    try:
        resp = client.send(_incremental_request([(4, "", [(k, op.value, v) for k, v, op in ops])], validate_only))
    finally:
        client.close()
    (result,) = resp.responses
    return int(result.error_code), result.error_message


def _describe(admin: AdminClient, rtype: ResourceType, name: str) -> dict[str, Any]:
    resource = ConfigResource(rtype, name)
    return admin.describe_configs([resource])[resource].result(10)


def _log_configs(kafka_cluster: Any, topic: str) -> list[Any]:
    """The LogConfig of every replica of ``topic`` (every broker's, every partition's)."""
    return [kafka_cluster.broker(b).partition(topic, p).log.config
            for p, st in kafka_cluster.metadata.topic(topic).partitions.items() for b in st.replicas]


def test_incremental_alter_topic_configs_take_effect_on_every_replica(kafka_cluster: Any, admin: AdminClient) -> None:
    """testValidIncrementalAlterConfigs: SET, APPEND on a list, DELETE back to the default;
    DescribeConfigs shows each state and every replica's log applies it at once."""
    topic = _topic(admin)
    assert _alter(admin, TOPIC, topic, ("retention.ms", "10000", SET), ("min.insync.replicas", "2", SET),
                  ("cleanup.policy", "compact", APPEND), ("max.message.bytes", "2048", SET)) is None
    entries = _describe(admin, TOPIC, topic)
    assert entries["retention.ms"].value == "10000"
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["cleanup.policy"].value == "delete,compact"
    for config in _log_configs(kafka_cluster, topic):
        assert (config.retention_ms, config.min_insync_replicas, config.max_message_bytes) == (10000, 2, 2048)
        assert config.cleanup_policy == {"delete", "compact"}
    assert _alter(admin, TOPIC, topic, ("retention.ms", None, DELETE), ("cleanup.policy", "delete", SUBTRACT)) is None
    entries = _describe(admin, TOPIC, topic)
    assert (entries["retention.ms"].value, entries["retention.ms"].source) == ("604800000",
                                                                               ConfigSource.DEFAULT_CONFIG.value)
    assert entries["cleanup.policy"].value == "compact"
    assert all(c.retention_ms == 604800000 and c.cleanup_policy == {"compact"}
               for c in _log_configs(kafka_cluster, topic))


def test_max_message_bytes_applies_to_the_next_produce(kafka_cluster: Any, admin: AdminClient) -> None:
    """A lowered max.message.bytes refuses the next larger batch (MESSAGE_TOO_LARGE)."""
    topic = _topic(admin, 1)
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers, request_timeout_ms=5000,
                             retries=0, max_request_size=10_000_000)
    try:
        producer.send(topic, b"x" * 5000).get(timeout=10)
        assert _alter(admin, TOPIC, topic, ("max.message.bytes", "1000", SET)) is None
        with pytest.raises(MessageSizeTooLargeError):
            producer.send(topic, b"x" * 5000).get(timeout=10)
    finally:
        producer.close(timeout=5)


def test_append_existing_and_subtract_missing(admin: AdminClient) -> None:
    """testAppendAlreadyExistsConfigsAndSubtractNotExistsConfigs: both leave the list as it is."""
    topic = _topic(admin)
    assert _alter(admin, TOPIC, topic, ("cleanup.policy", "delete", APPEND)) is None
    assert _describe(admin, TOPIC, topic)["cleanup.policy"].value == "delete"
    assert _alter(admin, TOPIC, topic, ("cleanup.policy", "compact", SUBTRACT)) is None
    assert _describe(admin, TOPIC, topic)["cleanup.policy"].value == "delete"


def test_invalid_incremental_alter_configs(kafka_cluster: Any, admin: AdminClient) -> None:
    """testInvalidIncrementalAlterConfigs: APPEND/SUBTRACT on a non-list key and a bad value are
    INVALID_CONFIG with Kafka's messages; an unknown topic UNKNOWN_TOPIC_OR_PARTITION; nothing
    changes, with or without validate_only."""
    topic = _topic(admin)
    for validate_only in (True, False):
        error = _alter(admin, TOPIC, topic, ("compression.type", "gzip", APPEND), validate_only=validate_only)
        assert (error.code(), error.str()) == (KafkaError.INVALID_CONFIG,
                                               "Can't APPEND to key compression.type because its type is not LIST.")
        error = _alter(admin, TOPIC, topic, ("compression.type", "snappy", SUBTRACT), validate_only=validate_only)
        assert error.str() == "Can't SUBTRACT to key compression.type because its type is not LIST."
        error = _alter(admin, TOPIC, topic, ("min.cleanable.dirty.ratio", "1.1", SET), validate_only=validate_only)
        assert (error.code(), error.str()) == (
            KafkaError.INVALID_CONFIG, "Invalid value 1.1 for configuration min.cleanable.dirty.ratio: "
                                       "Value must be no more than 1")
        error = _alter(admin, TOPIC, topic, ("retention.msx", "1", SET), validate_only=validate_only)
        assert (error.code(), error.str()) == (KafkaError.INVALID_CONFIG, "Unknown topic config name: retention.msx")
        error = _alter(admin, TOPIC, unique("missing"), ("retention.ms", "1", SET), validate_only=validate_only)
        assert error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert _alter(admin, TOPIC, topic, ("retention.ms", "5", SET), validate_only=True) is None
    assert kafka_cluster.metadata.topic(topic).configs == {}


def test_legacy_alter_configs_replaces_the_whole_set(kafka_cluster: Any) -> None:
    """AlterConfigs (ConfigurationControlManager.legacyAlterConfigResource): the listed configs
    replace the topic's overrides, unlisted ones are deleted. kafka-python (forced to the legacy
    API) first reads the topic's modified dynamic configs and sends them along, so they stay;
    aiokafka sends only what it is given, so the others go."""
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource as AioConfigResource
    from aiokafka.admin.config_resource import ConfigResourceType as AioType

    topic = unique("legacy")
    kafka_cluster.create_topic(topic, 1, 3, configs={"retention.ms": "1000", "segment.ms": "5000"})
    client = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers, request_timeout_ms=5000)
    try:
        client.alter_configs([KpConfigResource(ConfigResourceType.TOPIC, topic, {"retention.bytes": "4096"})],
                             incremental=False)
        assert kafka_cluster.metadata.topic(topic).configs == {"retention.bytes": 4096, "retention.ms": 1000,
                                                                "segment.ms": 5000}
        described = client.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, topic)])
        entry = described["topic"][topic]["retention.bytes"]
        assert (entry["value"], entry["config_source"]) == ("4096", "DYNAMIC_TOPIC_CONFIG")
    finally:
        client.close()

    async def run() -> list[Any]:
        aio = AIOKafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers, request_timeout_ms=5000)
        await aio.start()
        try:
            await aio.alter_configs([AioConfigResource(AioType.TOPIC, topic, {"segment.ms": "7000"})])
            return await aio.describe_configs([AioConfigResource(AioType.TOPIC, topic)])
        finally:
            await aio.close()

    (response,) = asyncio.run(run())
    assert kafka_cluster.metadata.topic(topic).configs == {"segment.ms": 7000}
    entries = {e[0]: e[1] for e in response.resources[0][4]}
    assert entries["segment.ms"] == "7000" and entries["retention.bytes"] == "-1"


def test_dynamic_broker_configs_cluster_default_and_per_broker(kafka_cluster: Any, admin: AdminClient,
                                                               raw: RawClient) -> None:
    """testIncrementalAlterConfigsDeleteAndSetBrokerConfigs: a cluster-wide default and a
    per-broker value, their DescribeConfigs sources and synonyms, and the logs that apply them
    (per-broker > cluster default > static > default; topic overrides win over both)."""
    topic, pinned = _topic(admin, 3), _topic(admin, 3)
    assert _alter(admin, TOPIC, pinned, ("retention.ms", "123", SET)) is None
    assert _alter_default(kafka_cluster, ("log.retention.ms", "50000", SET)) == (0, None)
    assert _alter(admin, BROKER, "1", ("log.retention.ms", "70000", SET)) is None
    by_broker = {b: {kafka_cluster.broker(b).partition(topic, p).log.config.retention_ms
                     for p in range(3) if kafka_cluster.broker(b).partition(topic, p) is not None} for b in range(3)}
    assert by_broker == {0: {50000}, 1: {70000}, 2: {50000}}
    assert {c.retention_ms for c in _log_configs(kafka_cluster, pinned)} == {123}
    created_after = _topic(admin, 3)          # new logs start with the dynamic values too
    assert {c.retention_ms for c in _log_configs(kafka_cluster, created_after)} == {50000, 70000}
    entry = _describe(admin, BROKER, "1")["log.retention.ms"]
    assert (entry.value, entry.source, entry.is_read_only) == ("70000", ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
    assert list(entry.synonyms) == ["log.retention.ms", "log.retention.hours"]   # keyed by name (order: raw test)
    entry = _describe(admin, BROKER, "0")["log.retention.ms"]
    assert (entry.value, entry.source) == ("50000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    # the cluster-wide resource: only what is set there (and KIP-966's activation record, 4.1+)
    assert [(e.name, e.value, e.config_source) for e in _describe_raw(raw, 4, "", None).results[0].configs] == \
        [("min.insync.replicas", "1", 3), ("log.retention.ms", "50000", 3)]
    topic_entry = _describe(admin, TOPIC, topic)["retention.ms"]
    assert (topic_entry.value, topic_entry.source) in {("50000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
                                                       ("70000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)}
    assert _alter(admin, BROKER, "1", ("log.retention.ms", None, DELETE)) is None
    assert _alter_default(kafka_cluster, ("log.retention.ms", None, DELETE)) == (0, None)
    assert {c.retention_ms for c in _log_configs(kafka_cluster, topic)} == {604800000}
    assert [e.name for e in _describe_raw(raw, 4, "", None).results[0].configs] == ["min.insync.replicas"]


def _describe_raw(raw: RawClient, rtype: int, name: str, key: str | None) -> Any:
    cls = req_cls(32, 4)
    res_cls = item_cls(cls, "resources")
    return raw.send(build(cls, resources=(build(res_cls, resource_type=rtype, resource_name=name,
                                                configuration_keys=None if key is None else (key,)),),
                          include_synonyms=True, include_documentation=True))


def _synonyms_raw(raw: RawClient, rtype: int, name: str, key: str | None) -> tuple[Any, list[tuple[str, str | None, int]]]:
    """The one entry described (DescribeConfigs v4, synonyms and documentation) and its synonyms."""
    (entry,) = _describe_raw(raw, rtype, name, key).results[0].configs
    return entry, [(s.name, s.value, s.source) for s in entry.synonyms]


def test_describe_synonyms_in_kafka_order(kafka_cluster: Any, admin: AdminClient, raw: RawClient) -> None:
    """ConfigHelper.configSynonyms: DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG, DEFAULT_CONFIG, with the config type and documentation (v3+)."""
    assert _alter_default(kafka_cluster, ("message.max.bytes", "3000000", SET)) == (0, None)
    assert _alter(admin, BROKER, "0", ("message.max.bytes", "2000000", SET)) is None
    entry, synonyms = _synonyms_raw(raw, 4, "0", "message.max.bytes")
    assert synonyms == [("message.max.bytes", "2000000", 2), ("message.max.bytes", "3000000", 3),
                        ("message.max.bytes", "1048588", 5)]
    assert (entry.value, entry.config_source, entry.read_only, entry.config_type) == ("2000000", 2, False, 3)
    assert entry.documentation == "The largest record batch size allowed."
    topic = _topic(admin, 1)
    entry, synonyms = _synonyms_raw(raw, 2, topic, "max.message.bytes")
    assert entry.value == "2000000" and synonyms[:2] == [("message.max.bytes", "2000000", 2),
                                                         ("message.max.bytes", "3000000", 3)]
    entry, synonyms = _synonyms_raw(raw, 4, "", "message.max.bytes")   # cluster-wide: no per-broker entries
    assert entry.value == "3000000" and synonyms == [("message.max.bytes", "3000000", 3),
                                                     ("message.max.bytes", "1048588", 5)]
    errors = [(r.error_code, r.error_message) for name in ("1", "x") for r in _describe_raw(raw, 4, name, None).results]
    assert errors == [(ErrorCode.invalid_request, "Unexpected broker id, expected 0 or empty string, but received 1"),
                      (ErrorCode.invalid_request, "Broker id must be an integer, but it is: x")]
    entry, _ = _synonyms_raw(raw, 4, "0", "num.io.threads")
    assert entry.read_only   # Kafka can resize the pool; the emulator cannot, so it refuses and says so


def test_broker_configs_kafka_does_not_make_dynamic_are_refused(kafka_cluster: Any, admin: AdminClient) -> None:
    """DynamicBrokerConfigTest.testConfigUpdateWithSomeInvalidConfigs and
    testLogRetentionTimeMinutesIsNotDynamicallyReconfigurable: a non-dynamic key and a bad value
    are INVALID_REQUEST with Kafka's message (KAFKA-13609); a dynamic key the emulator reads only
    at start-up, or one it does not know, is INVALID_CONFIG naming it; nothing is stored."""
    cases = [
        ("log.retention.minutes", "3", KafkaError.INVALID_REQUEST,
         "Cannot update these configs dynamically: Set(log.retention.minutes)"),
        ("num.partitions", "3", KafkaError.INVALID_REQUEST, "Cannot update these configs dynamically: Set(num.partitions)"),
        ("message.max.bytes", "abc", KafkaError.INVALID_REQUEST,
         "Invalid value abc for configuration message.max.bytes: Not a number of type INT"),
        ("num.io.threads", "4", KafkaError.INVALID_CONFIG,
         "The emulator does not apply these configs at run time: Set(num.io.threads)"),
        ("log.cleaner.threads", "2", KafkaError.INVALID_CONFIG,
         "The emulator does not apply these configs at run time: Set(log.cleaner.threads)"),
    ]
    for key, value, code, message in cases:
        error = _alter(admin, BROKER, "0", (key, value, SET))
        assert error is not None and (error.code(), error.str()) == (code, message), key
        assert _alter_default(kafka_cluster, (key, value, SET)) == (code, message), key
    activation = {"": {"min.insync.replicas": 1}}   # KIP-966's cluster-level record (4.1+)
    assert _stored(kafka_cluster) == activation
    assert _alter_default(kafka_cluster, ("log.retention.ms", "1000", SET), validate_only=True) == (0, None)
    assert _stored(kafka_cluster) == activation


def _stored(kafka_cluster: Any) -> dict[str, dict[str, Any]]:
    md = kafka_cluster.metadata
    return {r: md.broker_configs(r) for r in md.broker_config_resources()}


def test_dynamic_message_max_bytes_keeps_other_synonyms(kafka_cluster: Any, admin: AdminClient) -> None:
    """DynamicBrokerConfigTest.testDynamicLogConfigHandlesSynonymsCorrectly: a dynamic change of
    one key leaves the statically derived others (retention) as they were."""
    topic = _topic(admin, 1, 1)
    before = _log_configs(kafka_cluster, topic)[0]
    assert _alter_default(kafka_cluster, ("message.max.bytes", "12345678", SET)) == (0, None)
    after = _log_configs(kafka_cluster, topic)[0]
    assert (after.max_message_bytes, after.retention_ms) == (12345678, before.retention_ms)


def _incremental_request(resources: list[tuple[int, str, list[tuple[str, int, str | None]]]],
                         validate_only: bool = False) -> Any:
    cls = req_cls(44, 1)
    res_cls = item_cls(cls, "resources")
    cfg_cls = item_cls(res_cls, "configs")
    return build(cls, validate_only=validate_only, resources=tuple(
        build(res_cls, resource_type=t, resource_name=n,
              configs=tuple(build(cfg_cls, name=k, config_operation=op, value=v) for k, op, v in configs))
        for t, n, configs in resources))


def _legacy_request(resources: list[tuple[int, str, list[tuple[str, str | None]]]], version: int = 2) -> Any:
    cls = req_cls(33, version)
    res_cls = item_cls(cls, "resources")
    cfg_cls = item_cls(res_cls, "configs")
    return build(cls, validate_only=False, resources=tuple(
        build(res_cls, resource_type=t, resource_name=n,
              configs=tuple(build(cfg_cls, name=k, value=v) for k, v in configs)) for t, n, configs in resources))


def _results(resp: Any) -> list[tuple[int, str, ErrorCode, str | None]]:
    return [(r.resource_type, r.resource_name, r.error_code, r.error_message) for r in resp.responses]


def test_preprocess_rules_incremental(kafka_cluster: Any, raw: RawClient) -> None:
    """ConfigAdminManagerTest: testPreprocessIncrementalWithDuplicates (a resource named twice:
    both INVALID_REQUEST, the others processed), testPreprocessIncrementalWithNulls (null only
    with DELETE), testPreprocessIncrementalWithUnknownResource, testValidateResourceNameIsCurrentNodeId;
    KafkaApisTest.testEmptyIncrementalAlterConfigsRequestWithKRaft."""
    topic = unique("pre")
    kafka_cluster.create_topic(topic, 1, 1)
    resp = raw.send(_incremental_request([
        (2, topic, [("retention.ms", 0, "100")]), (2, topic, [("segment.ms", 0, "100")]),
        (4, "0", [("log.retention.ms", 0, "100")]),
        (2, "other", [("retention.ms", 0, "1"), ("retention.ms", 0, "2")]),
        (2, "nulls", [("retention.ms", 0, None), ("segment.ms", 1, None)]),
        (2, "badop", [("retention.ms", 7, "1")]),
        (4, "1", [("log.retention.ms", 0, "1")]), (4, "x", [("log.retention.ms", 0, "1")]),
        (99, "r", []), (8, "0", [("root", 0, "DEBUG")]),
    ]))
    assert _results(resp) == [
        (2, topic, ErrorCode.invalid_request, "Each resource must appear at most once."),
        (2, topic, ErrorCode.invalid_request, "Each resource must appear at most once."),
        (4, "0", ErrorCode.none, None),
        (2, "other", ErrorCode.invalid_request, "Error due to duplicate config keys"),
        (2, "nulls", ErrorCode.invalid_request, "Null value not supported for : retention.ms"),
        (2, "badop", ErrorCode.invalid_request, "Unknown operations type 7"),
        (4, "1", ErrorCode.invalid_request, "Unexpected broker id, expected 0, but received 1"),
        (4, "x", ErrorCode.invalid_request, "Node id must be an integer, but it is: x"),
        (99, "r", ErrorCode.invalid_request, "Unknown resource type 99"),
        (8, "0", ErrorCode.invalid_request, "Resource type BROKER_LOGGER is not supported by the emulator"),
    ]
    assert kafka_cluster.metadata.topic(topic).configs == {}
    assert kafka_cluster.metadata.broker_configs("0") == {"log.retention.ms": 100}
    assert _results(raw.send(_incremental_request([]))) == []


@pytest.mark.parametrize("version", [0, 1, 2])
def test_preprocess_rules_legacy(kafka_cluster: Any, raw: RawClient, version: int) -> None:
    """ConfigAdminManagerTest.testPreprocessLegacyWithDuplicates / testPreprocessLegacyWithNulls,
    KafkaApisTest.testInvalidLegacyAlterConfigsRequestWithKRaft (a null value, even for a broker:
    INVALID_REQUEST) and testEmptyLegacyAlterConfigsRequestWithKRaft; AlterConfigs refuses
    BROKER_LOGGER (testAlterConfigsForLog4jLogLevelsDoesNotWork)."""
    resp = raw.send(_legacy_request([(4, "0", [("foo", None)]), (2, "t", [("a", "1"), ("a", "2")]),
                                     (8, "0", [("root", "DEBUG")])], version))
    assert _results(resp) == [(4, "0", ErrorCode.invalid_request, "Null value not supported for : foo"),
                              (2, "t", ErrorCode.invalid_request, "Error due to duplicate config keys"),
                              (8, "0", ErrorCode.invalid_request,
                               "Resource type BROKER_LOGGER is not supported by the emulator")]
    assert _results(raw.send(_legacy_request([], version))) == []


@pytest.mark.kafka_cluster(brokers=1, config={"log.retention.check.interval.ms": 50, "log.initial.task.delay.ms": 0})
def test_retention_change_deletes_segments_at_the_next_check(kafka_cluster: Any, admin: AdminClient) -> None:
    """A retention.bytes set with IncrementalAlterConfigs, then a cluster-wide log.retention.bytes,
    delete old segments at the next run of the retention task (every 50 ms here)."""
    topic, other = unique("ret"), unique("ret-other")
    for name in (topic, other):
        kafka_cluster.create_topic(name, 1, 1, configs={"segment.bytes": "1024"})
        for i in range(40):
            kafka_cluster.produce(name, 0, [(None, b"x" * 100 + str(i).encode())])
    logs = [kafka_cluster.broker(0).partition(name, 0).log for name in (topic, other)]
    assert all(log.num_segments() > 3 and log.log_start_offset == 0 for log in logs)
    assert _alter(admin, TOPIC, topic, ("retention.bytes", "1024", SET)) is None
    wait_until(lambda: logs[0].log_start_offset > 0, what="retention of the altered topic")
    assert logs[0].size_bytes <= 2 * 1024 and logs[1].log_start_offset == 0
    assert _alter_default(kafka_cluster, ("log.retention.bytes", "2048", SET)) == (0, None)
    wait_until(lambda: logs[1].log_start_offset > 0, what="retention by the cluster-wide default")


def test_kafka_python_incremental_broker_config(kafka_cluster: Any) -> None:
    """kafka-python's KafkaAdminClient picks IncrementalAlterConfigs (advertised) and first checks
    the key is dynamic with DescribeConfigs (read_only false); the emulator's read-only keys are
    refused by the client before sending, the dynamic ones applied."""
    client = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers, request_timeout_ms=5000)
    try:
        result = client.alter_configs([KpConfigResource(ConfigResourceType.BROKER, "2",
                                                        {"log.cleanup.policy": ("APPEND", "compact")})])
        assert kafka_cluster.metadata.broker_configs("2") == {"log.cleanup.policy": ["delete", "compact"]}
        assert result == {"broker": {"2": "OK"}}
        described = client.describe_configs([KpConfigResource(ConfigResourceType.BROKER, "2")],
                                            config_filter="dynamic")
        entry = described["broker"]["2"]["log.cleanup.policy"]
        assert (entry["value"], entry["config_source"]) == ("delete,compact", "DYNAMIC_BROKER_CONFIG")
        with pytest.raises(ValueError):
            client.alter_configs([KpConfigResource(ConfigResourceType.BROKER, "2", {"num.io.threads": "2"})])
    finally:
        client.close()
