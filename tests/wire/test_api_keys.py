"""The API-key table (``kafka_emu.common.api_keys``) against kio's index, which is generated from
Kafka 4's message schemas, and the served APIs' names taken from it."""
from __future__ import annotations

import pickle

import pytest
from kio.index import load_request_schema
from kio.schema.index import api_key_map, schema_name_map

from kafka_emu.broker.apis import APIS, api_name
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.common.api_keys import ApiKeys

# ZooKeeper-era inter-broker APIs: the keys stay assigned in Kafka 4's ApiKeys, the schemas
# define no version any more, so kio has no class for them
NO_VERSION_LEFT = {ApiKeys.LEADER_AND_ISR, ApiKeys.STOP_REPLICA, ApiKeys.UPDATE_METADATA,
                   ApiKeys.CONTROLLED_SHUTDOWN}


def test_every_key_kio_knows_has_kafkas_constant_and_name() -> None:
    for key, schema in api_key_map.items():
        member = ApiKeys(key)
        assert member._name_ == schema.upper()
        request_cls = load_request_schema(key, min(schema_name_map[schema]))
        assert request_cls.__name__ == member.name + "Request"


def test_the_table_is_kios_keys_and_the_four_retired_ones() -> None:
    assert set(ApiKeys) - set(api_key_map) == NO_VERSION_LEFT
    assert [int(k) for k in ApiKeys] == list(range(len(ApiKeys)))   # Kafka's order, no gaps


def test_members_are_ints_with_kafkas_names() -> None:
    assert ApiKeys.CONSUMER_GROUP_HEARTBEAT == 68 and ApiKeys.CONSUMER_GROUP_HEARTBEAT.name == "ConsumerGroupHeartbeat"
    assert ApiKeys["FETCH"] is ApiKeys(1) is pickle.loads(pickle.dumps(ApiKeys.FETCH))
    assert f"{ApiKeys.PRODUCE}" == "0"


def test_served_apis_take_key_and_name_from_the_table() -> None:
    for key, spec in APIS.items():
        assert type(key) is int and type(spec.api_key) is int   # as a decoded header's key is
        assert spec.name == ApiKeys(key).name == api_name(key)
    assert api_name(ApiKeys.STREAMS_GROUP_HEARTBEAT) == "Unknown(88)"   # known, not served


def test_a_spec_for_a_key_kafka_does_not_define_is_refused() -> None:
    with pytest.raises(ValueError):
        ApiSpec(93, 0, 0, lambda apis, request: None)
