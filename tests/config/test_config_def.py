"""ConfigDef parsing and validation, and server.properties reading.

Ported scenarios: Kafka's ``ConfigDefTest`` (testBasicTypes, testBadInputs, testInvalidDefaultRange,
testValidators, testParseEmptyList/testDefinedTwice) and ``KafkaConfigTest.testFromPropsInvalid``
(each bad value of a key refused with a message naming it).
"""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from kafka_emu.broker.server.config import KAFKA_CONFIG_DEF, ConfigException, KafkaConfig
from kafka_emu.broker.storage.log_config import (
    BROKER_DEFAULTS, LOG_CONFIG_DEF, LOG_MANAGER_KEYS, SERVER_LOG_KEYS, topic_value,
)
from kafka_emu.common.properties import load_properties, parse_properties
from kafka_emu.common.config_def import (
    INT_MAX,
    INT_MIN,
    ConfigDef,
    ConfigKey,
    Importance,
    Range,
    Type,
    ValidList,
    ValidString,
    parse_type,
)


def _error(props: dict[str, object]) -> str:
    with pytest.raises(ConfigException) as info:
        KafkaConfig(props)
    return str(info.value)


def test_basic_types_from_strings() -> None:
    """ConfigDefTest.testBasicTypes: each type parsed from its string form, spaces trimmed."""
    assert parse_type("k", " 42 ", Type.INT) == 42
    assert parse_type("k", "-7", Type.SHORT) == -7
    assert parse_type("k", "9223372036854775807", Type.LONG) == 2**63 - 1
    assert parse_type("k", "0.25", Type.DOUBLE) == 0.25
    assert parse_type("k", " TRUE ", Type.BOOLEAN) is True
    assert parse_type("k", "false", Type.BOOLEAN) is False
    assert parse_type("k", " a , b,c ", Type.LIST) == ["a", "b", "c"]
    assert parse_type("k", "   ", Type.LIST) == []
    assert parse_type("k", " x ", Type.STRING) == "x"
    assert parse_type("k", ["a", "b"], Type.LIST) == ["a", "b"]
    assert parse_type("k", 5, Type.LONG) == 5 and parse_type("k", 3, Type.DOUBLE) == 3.0


@pytest.mark.parametrize("type_, value, message", [
    (Type.INT, "hello", "Invalid value hello for configuration k: Not a number of type INT"),
    (Type.INT, "1.5", "Invalid value 1.5 for configuration k: Not a number of type INT"),
    (Type.INT, str(INT_MAX + 1), f"Invalid value {INT_MAX + 1} for configuration k: Not a number of type INT"),
    (Type.INT, True, "Invalid value true for configuration k: Expected value to be a 32-bit integer, but it was a bool"),
    (Type.SHORT, "40000", "Invalid value 40000 for configuration k: Not a number of type SHORT"),
    (Type.LONG, "1_000", "Invalid value 1_000 for configuration k: Not a number of type LONG"),
    (Type.LONG, "1MB", "Invalid value 1MB for configuration k: Not a number of type LONG"),
    (Type.DOUBLE, "hello", "Invalid value hello for configuration k: Not a number of type DOUBLE"),
    (Type.BOOLEAN, "yes", "Invalid value yes for configuration k: Expected value to be either true or false"),
    (Type.BOOLEAN, 1, "Invalid value 1 for configuration k: Expected value to be either true or false"),
    (Type.STRING, 53, "Invalid value 53 for configuration k: Expected value to be a string, but it was a int"),
    (Type.LIST, 53, "Invalid value 53 for configuration k: Expected a comma separated list."),
])
def test_bad_inputs(type_: Type, value: object, message: str) -> None:
    """ConfigDefTest.testBadInputs: a value that is not of the key's type is refused, one line."""
    with pytest.raises(ConfigException) as info:
        parse_type("k", value, type_)
    assert str(info.value) == message


def test_validators() -> None:
    """ConfigDefTest.testValidators: Range, ValidString, ValidList with Kafka's messages."""
    with pytest.raises(ConfigException, match="^Invalid value 11 for configuration r: Value must be no more than 10$"):
        Range.between(0, 10)("r", 11)
    with pytest.raises(ConfigException, match="^Invalid value -1 for configuration r: Value must be at least 0$"):
        Range.at_least(0)("r", -1)
    with pytest.raises(ConfigException, match="^Invalid value d for configuration s: String must be one of: a, b$"):
        ValidString(("a", "b"))("s", "d")
    ValidString(("A",), case_insensitive=True)("s", "a")
    with pytest.raises(ConfigException, match="String must be one of: compact, delete$"):
        ValidList(("compact", "delete"))("l", ["compact", "x"])
    with pytest.raises(ConfigException, match="Empty list is not allowed$"):
        ValidList(("a",))("l", [])


def test_defined_twice_is_a_programming_error() -> None:
    """ConfigDefTest.testDefinedTwice."""
    key = ConfigKey("a", Type.INT, 1, None, Importance.LOW, "doc")
    with pytest.raises(AssertionError):
        ConfigDef([key, key])


def test_every_default_passes_its_own_validator() -> None:
    """ConfigDefTest.testInvalidDefault: a table whose default fails its validator is a bug."""
    for key in KAFKA_CONFIG_DEF.keys.values():
        if key.validator is not None and key.default is not None:
            key.validator(key.name, key.default)


@pytest.mark.parametrize("props, message", [
    ({"num.partitions": "abc"}, "Invalid value abc for configuration num.partitions: Not a number of type INT"),
    ({"num.partitions": "0"}, "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    ({"num.io.threads": ""}, "Invalid value  for configuration num.io.threads: Not a number of type INT"),
    ({"auto.create.topics.enable": "yes"},
     "Invalid value yes for configuration auto.create.topics.enable: Expected value to be either true or false"),
    ({"offsets.topic.replication.factor": "70000"},
     "Invalid value 70000 for configuration offsets.topic.replication.factor: Not a number of type SHORT"),
    ({"log.cleanup.policy": "compact,forever"},
     "Invalid value compact,forever for configuration log.cleanup.policy: String must be one of: compact, delete"),
    ({"log.message.timestamp.type": "Now"},
     "Invalid value Now for configuration log.message.timestamp.type: String must be one of: CreateTime, LogAppendTime"),
    ({"listeners": "localhost:9092"}, "Invalid value localhost:9092 for configuration listeners: Unable to parse "
                                      "localhost:9092 to a broker endpoint (expected NAME://host:port)"),
    ({"log.level": "loud"}, "Invalid value loud for configuration log.level: String must be one of (case "
                            "insensitive): debug, info, warning, error, critical, warn"),
    ({"log.level.broker": "loud"}, "Invalid value loud for configuration log.level.broker: String must be one of "
                                   "(case insensitive): debug, info, warning, error, critical, warn"),
    ({"emulator.strict.config": "on"},
     "Invalid value on for configuration emulator.strict.config: Expected value to be either true or false"),
    # KafkaConfig.validateValues: the default follower fetch wait (500 ms) exceeds this lag time
    ({"replica.lag.time.max.ms": "300"},
     "Invalid value 500 for configuration replica.fetch.wait.max.ms: replica.fetch.wait.max.ms should always be "
     "less than or equal to replica.lag.time.max.ms (300) to prevent frequent changes in ISR"),
])
def test_from_props_invalid(props: dict[str, object], message: str) -> None:
    """KafkaConfigTest.testFromPropsInvalid: one line naming key, value and what is expected."""
    assert _error(props) == message


def test_a_follower_fetch_wait_up_to_the_lag_time_is_accepted() -> None:
    config = KafkaConfig({"replica.lag.time.max.ms": 300, "replica.fetch.wait.max.ms": 300})
    assert config["replica.fetch.wait.max.ms"] == config["replica.lag.time.max.ms"] == 300


def test_typed_values_defaults_and_node_id() -> None:
    config = KafkaConfig({"num.partitions": " 3 ", "broker.id": 2, "log.cleanup.policy": "compact, delete"})
    assert config["num.partitions"] == 3 and config["node.id"] == 2
    assert config["log.cleanup.policy"] == ["compact", "delete"]
    assert config["num.io.threads"] == 8 and config["message.max.bytes"] == 1048588
    # the coordinator's defaults are stated in coordinator.config and read through the table
    assert config["offsets.topic.num.partitions"] == 50 and config["group.max.size"] == INT_MAX
    assert config["log.retention.ms"] is None and config["log.retention.hours"] == 168


def test_node_id_and_broker_id_name_one_id() -> None:
    assert KafkaConfig({"node.id": 3}).broker_id == 3
    assert KafkaConfig({"broker.id": 4})["node.id"] == 4
    assert _error({"broker.id": 1, "node.id": 2}) == "broker.id=1 and node.id=2 must be equal when both are set"


PROPERTIES = """\
# a comment
! another comment

num.partitions = 4
auto.create.topics.enable:false
log.cleanup.policy   compact,\\
    delete
   default.replication.factor=1
listeners=
broker.rack=rack\\ 1
path=C:\\\\kafka
"""


def test_parse_properties_java_syntax() -> None:
    """java.util.Properties: comments, blank lines, '=', ':' or space separators with spaces around,
    continuation lines, escapes, empty values."""
    assert parse_properties(PROPERTIES) == {
        "num.partitions": "4",
        "auto.create.topics.enable": "false",
        "log.cleanup.policy": "compact,delete",
        "default.replication.factor": "1",
        "listeners": "",
        "broker.rack": "rack 1",
        "path": "C:\\kafka",
    }


def test_load_properties_missing_and_unreadable(tmp_path) -> None:
    missing = tmp_path / "nope.properties"
    with pytest.raises(ConfigException, match=f"^Config file {missing} not found$"):
        load_properties(missing)
    with pytest.raises(ConfigException, match="cannot be read"):
        load_properties(tmp_path)            # a directory
    good = tmp_path / "server.properties"
    good.write_text("num.partitions=2\n")
    assert KafkaConfig(load_properties(good))["num.partitions"] == 2


@given(st.integers(min_value=1, max_value=INT_MAX), st.sampled_from([" ", ""]))
def test_any_int_in_range_round_trips(value: int, pad: str) -> None:
    """Property: any INT in a key's range, written as Kafka writes it, parses back to itself."""
    assert KafkaConfig({"num.partitions": f"{pad}{value}{pad}"})["num.partitions"] == value


@given(st.one_of(st.integers(max_value=0), st.integers(min_value=INT_MAX + 1), st.integers(max_value=INT_MIN - 1)))
def test_any_out_of_range_int_is_refused_naming_the_key(value: int) -> None:
    """Property: any value outside num.partitions' range fails with one line naming key and value."""
    message = _error({"num.partitions": str(value)})
    assert message.startswith(f"Invalid value {value} for configuration num.partitions: ")
    assert "\n" not in message


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20))
def test_any_text_for_an_int_key_parses_or_is_refused_cleanly(text: str) -> None:
    """Property: arbitrary text for an INT key either parses to an int or raises ConfigException."""
    try:
        value = KafkaConfig({"num.io.threads": text})["num.io.threads"]
    except ConfigException as exc:
        assert "num.io.threads" in str(exc)
    else:
        assert isinstance(value, int) and value >= 1 and int(text.strip()) == value


def test_the_log_layers_keys_and_defaults() -> None:
    """KafkaConfig's table includes the broker keys the log layer defines
    (``broker.storage.log_config``, as Kafka's includes ``ServerLogConfigs``), and a log handed
    no broker config reads, for every topic config, what a default ``KafkaConfig`` gives."""
    broker = KafkaConfig()
    for key in (*SERVER_LOG_KEYS, *LOG_MANAGER_KEYS):
        assert KAFKA_CONFIG_DEF.keys[key.name] is key
        assert BROKER_DEFAULTS[key.name] == broker[key.name]
    for name in LOG_CONFIG_DEF.keys:
        assert topic_value(name, {}, BROKER_DEFAULTS) == topic_value(name, {}, broker), name
