"""Dynamic configs and partition growth below the wire: incremental op semantics (a hypothesis
property), the broker keys marked dynamic, ``validate_broker_configs``, ``DynamicBrokerConfig``
precedence, and ``MetadataStore.create_partitions``' controller rules.

Ported: ``ConfigurationControlManagerTest`` (testIncrementalAlterConfigs,
testIncrementalAlterMultipleConfigValues: APPEND/SUBTRACT on list keys, refused on others),
``PlaintextAdminIntegrationTest.testAppendConfigToEmptyDefaultValue`` / ``testAppendConfigToExistentValue``,
``ReplicationControlManagerTest`` (testCreatePartitions, testCreatePartitionsFailsWhenAllBrokersAreFencedOrInControlledShutdown,
testCreatePartitionsFailsWithManualAssignmentWithAllFenced, testCreatePartitionsISRInvariants),
``DynamicBrokerConfigTest`` (testConfigUpdateWithSomeInvalidConfigs) and ``DynamicLogConfig.ReconfigurableConfigs``.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_emu.broker.apis.alter_configs import (
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
    incremental_alter,
)
from kafka_emu.broker.server.config import KAFKA_CONFIG_DEF, KafkaConfig
from kafka_emu.common.config_def import Dynamic
from kafka_emu.broker.server.dynamic_config import DynamicBrokerConfig, validate_broker_configs
from kafka_emu.broker.storage.log_config import LOG_CONFIG_DEF, TOPIC_CONFIG_SYNONYMS
from kafka_emu.broker.server.metadata_store import BrokerInfo, MetadataStore
from kafka_emu.common.errors import Errors, KafkaError

pytestmark = pytest.mark.timeout(60)

LIST_KEY = "leader.replication.throttled.replicas"    # a LIST topic config with an empty default
element = st.sampled_from(["0:1", "0:2", "1:1", "1:2", "*"])


def _parts(value: str) -> list[str]:
    return [p for p in value.split(",") if p]


@given(st.lists(element, unique=True), st.lists(element, min_size=1), st.sampled_from([OP_APPEND, OP_SUBTRACT]))
def test_incremental_list_ops_property(start: list[str], given_values: list[str], op: int) -> None:
    """APPEND: the old elements in order, then each new one once; SUBTRACT: the old elements
    without the given ones (one occurrence each); both idempotent, neither touches other keys."""
    current = {LIST_KEY: ",".join(start), "retention.ms": "5"}
    value = ",".join(given_values)
    once = incremental_alter(current, [(LIST_KEY, op, value)], LOG_CONFIG_DEF)
    twice = incremental_alter(once, [(LIST_KEY, op, value)], LOG_CONFIG_DEF)
    assert once == twice and once["retention.ms"] == "5"
    result = _parts(once[LIST_KEY])
    if op == OP_APPEND:
        assert result[:len(start)] == start and set(result) == set(start) | set(given_values)
        assert len(result) == len(set(result))
    else:
        assert result == [e for e in start if e not in given_values]


@given(st.lists(element, unique=True))
def test_append_then_subtract_restores_the_list(start: list[str]) -> None:
    new = [e for e in ["0:1", "1:2"] if e not in start]
    current = {LIST_KEY: ",".join(start)}
    ops = [(LIST_KEY, OP_APPEND, ",".join(new))] if new else []
    appended = incremental_alter(current, ops, LOG_CONFIG_DEF)
    restored = incremental_alter(appended, [(LIST_KEY, OP_SUBTRACT, ",".join(new))] if new else [], LOG_CONFIG_DEF)
    assert _parts(restored[LIST_KEY]) == start


def test_incremental_ops_follow_configuration_control_manager() -> None:
    """testAppendConfigToEmptyDefaultValue / testAppendConfigToExistentValue: APPEND to an unset
    key starts from the default; SET/DELETE replace and remove; APPEND on a non-list key is
    INVALID_CONFIG with Kafka's message."""
    assert incremental_alter({}, [("cleanup.policy", OP_APPEND, "compact")], LOG_CONFIG_DEF) == {
        "cleanup.policy": "delete,compact"}
    assert incremental_alter({}, [(LIST_KEY, OP_APPEND, "0:1")], LOG_CONFIG_DEF) == {LIST_KEY: "0:1"}
    assert incremental_alter({}, [("cleanup.policy", OP_SUBTRACT, "delete")], LOG_CONFIG_DEF) == {"cleanup.policy": ""}
    assert incremental_alter({"a": "1"}, [("b", OP_SET, "2"), ("a", OP_DELETE, None)], LOG_CONFIG_DEF) == {"b": "2"}
    with pytest.raises(KafkaError) as info:
        incremental_alter({}, [("retention.ms", OP_APPEND, "1")], LOG_CONFIG_DEF)
    assert (info.value.code, info.value.message) == (Errors.INVALID_CONFIG,
                                                     "Can't APPEND to key retention.ms because its type is not LIST.")


def test_dynamic_log_keys_are_the_primary_synonyms() -> None:
    """DynamicLogConfig.ReconfigurableConfigs: the first broker synonym of every topic config is
    dynamic, the alternate units are not; applied exactly where the log implements it."""
    primaries = {synonyms[0].name for synonyms in TOPIC_CONFIG_SYNONYMS.values()}
    alternates = {s.name for synonyms in TOPIC_CONFIG_SYNONYMS.values() for s in synonyms[1:]}
    for name in primaries:
        key = KAFKA_CONFIG_DEF.keys[name]
        assert key.dynamic is (Dynamic.APPLIED if key.implemented else Dynamic.NOT_APPLIED), name
    assert all(KAFKA_CONFIG_DEF.keys[name].dynamic is Dynamic.READ_ONLY for name in alternates)


def test_validate_broker_configs() -> None:
    """DynamicBrokerConfigTest.testConfigUpdateWithSomeInvalidConfigs: non-dynamic keys and bad
    types refused (INVALID_REQUEST), valid ones typed."""
    assert validate_broker_configs({"log.retention.ms": "100", "log.cleanup.policy": "compact,delete"}) == {
        "log.retention.ms": 100, "log.cleanup.policy": ["compact", "delete"]}
    for configs, code in (({"broker.id": "3", "log.retention.ms": "1"}, Errors.INVALID_REQUEST),
                          ({"min.insync.replicas": "0"}, Errors.INVALID_REQUEST),
                          ({"log.preallocate": "true"}, Errors.INVALID_CONFIG),
                          ({"no.such.key": "1"}, Errors.INVALID_CONFIG)):
        with pytest.raises(KafkaError) as info:
            validate_broker_configs(configs)
        assert info.value.code == code, configs


def test_dynamic_broker_config_precedence() -> None:
    static = KafkaConfig({"broker.id": 1, "log.retention.ms": 10, "message.max.bytes": 20})
    view = DynamicBrokerConfig(static, {"log.retention.ms": 30, "min.insync.replicas": 2}, {"log.retention.ms": 40})
    current = view.current()
    assert (current["log.retention.ms"], current["min.insync.replicas"], current["message.max.bytes"]) == (40, 2, 20)
    assert DynamicBrokerConfig(static, {}, {}).current() is static


def _store(brokers: int = 3) -> MetadataStore:
    store = MetadataStore()
    for b in range(brokers):
        store.register_broker(BrokerInfo(b))
    return store


def test_create_partitions_states_and_isr_invariants() -> None:
    """testCreatePartitions / testCreatePartitionsISRInvariants: new ids follow the old ones,
    the replication factor is kept, the ISR is the live replicas and the leader the first of them;
    a fenced replica is left out of the ISR."""
    store = _store()
    store.create_topic("t", 2, 2)
    store.broker_stopped(2)
    states = store.create_partitions("t", 4, [[2, 0], [1, 2]])
    assert [(s.partition, s.replicas, s.isr, s.leader) for s in states] == [(2, (2, 0), (0,), 0), (3, (1, 2), (1,), 1)]
    assert len(store.topic("t").partitions) == 4
    assert store.create_partitions("t", 5, None, validate_only=True)[0].partition == 4
    assert len(store.topic("t").partitions) == 4


def test_create_partitions_with_fenced_brokers() -> None:
    """testCreatePartitionsFailsWhenAllBrokersAreFencedOrInControlledShutdown and
    testCreatePartitionsFailsWithManualAssignmentWithAllFenced."""
    store = _store(2)
    store.create_topic("t", 1, 2)
    store.broker_stopped(1)
    with pytest.raises(KafkaError) as info:
        store.create_partitions("t", 2, None)
    assert (info.value.code, info.value.message) == (
        Errors.INVALID_REPLICATION_FACTOR,
        "The target replication factor of 2 cannot be reached because only 1 broker(s) are registered.")
    store.broker_stopped(0, elect=False)
    with pytest.raises(KafkaError) as info:
        store.create_partitions("t", 2, [[0, 1]])
    assert (info.value.code, info.value.message) == (
        Errors.INVALID_REPLICA_ASSIGNMENT,
        "All brokers specified in the manual partition assignment for partition 1 are fenced or in "
        "controlled shutdown.")
    with pytest.raises(KafkaError) as info:
        store.create_partitions("t", 2, None)
    assert (info.value.code, info.value.message) == (Errors.INVALID_REPLICATION_FACTOR,
                                                     "All brokers are currently fenced.")
    assert len(store.topic("t").partitions) == 1
