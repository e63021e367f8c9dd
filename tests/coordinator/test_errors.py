"""The one error table against Kafka's ``org.apache.kafka.common.protocol.Errors``.

Codes and names are Kafka's wire contract; the retriable flag is whether Kafka's exception for
the code extends ``RetriableException`` (what clients act on); the message is Kafka's default.
"""
from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kafka_emu.common import errors
from kafka_emu.common.errors import Errors

pytestmark = pytest.mark.timeout(10)


@pytest.mark.parametrize("code,name,retriable", [
    (-1, "UNKNOWN_SERVER_ERROR", False),
    (0, "NONE", False),
    (1, "OFFSET_OUT_OF_RANGE", False),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True),       # InvalidMetadataException
    (6, "NOT_LEADER_OR_FOLLOWER", True),
    (7, "REQUEST_TIMED_OUT", True),
    (15, "COORDINATOR_NOT_AVAILABLE", True),
    (16, "NOT_COORDINATOR", True),
    (19, "NOT_ENOUGH_REPLICAS", True),
    (22, "ILLEGAL_GENERATION", False),
    (25, "UNKNOWN_MEMBER_ID", False),
    (27, "REBALANCE_IN_PROGRESS", False),
    (35, "UNSUPPORTED_VERSION", False),
    (36, "TOPIC_ALREADY_EXISTS", False),
    (42, "INVALID_REQUEST", False),
    (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False),
    (74, "FENCED_LEADER_EPOCH", True),
    (79, "MEMBER_ID_REQUIRED", False),
    (82, "FENCED_INSTANCE_ID", False),
    (88, "UNSTABLE_OFFSET_COMMIT", True),
    (100, "UNKNOWN_TOPIC_ID", True),
])
def test_codes_names_and_retriable_flags_are_kafkas(code: int, name: str, retriable: bool) -> None:
    member = Errors[name]
    assert member == code and Errors(code) is member and member.retriable is retriable
    assert errors.name(code) == name


def test_default_messages_are_kafkas() -> None:
    assert Errors.NONE.message is None
    assert Errors.NOT_COORDINATOR.message == "This is not the correct coordinator."
    assert Errors.REBALANCE_IN_PROGRESS.message == "The group is rebalancing, so a rejoin is needed."
    assert Errors.UNSUPPORTED_VERSION.message == "The version of API is not supported."


def test_codes_are_plain_ints_on_the_wire_and_in_logs() -> None:
    assert isinstance(Errors.NOT_COORDINATOR, int) and str(Errors.NOT_COORDINATOR) == "16"
    assert errors.name(9999) == "UNKNOWN(9999)"


def test_every_code_the_wire_codec_knows_is_in_the_table() -> None:
    """The response adapter turns an ``Errors`` member into kio's enum by code, both ways."""
    assert {int(e) for e in ErrorCode} == {int(e) for e in Errors}
    assert all(Errors(int(e)).retriable == e.retriable for e in ErrorCode)
