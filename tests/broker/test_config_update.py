"""Config changes reach a live partition at once (Kafka's ``LogManager.updateTopicConfig`` and
``DynamicLogConfig.reconfigure`` followed by ``Partition`` reading ``leaderLog.config``): a lower
``min.insync.replicas`` unfreezes the HW and completes the fetch waiting on it, a higher one
refuses the next acks=all produce, a smaller ``max.message.bytes`` the next large batch."""
from __future__ import annotations

import pytest

from broker_harness import TOPIC, TP, Harness
from kafka_emu.broker.server.config import KafkaConfig
from kafka_emu.common.errors import Errors

pytestmark = pytest.mark.timeout(30)


def _set_topic_configs(h: Harness, configs: dict) -> None:
    h.metadata.alter_topic_configs(TOPIC, lambda _current: dict(configs))
    h.rm.update_log_configs(topic=TOPIC)


def test_min_insync_replicas_change_applies_at_once() -> None:
    h = Harness(min_isr=2, lag_ms=100)
    assert h.produce(1, acks=1)[TP].error == Errors.NONE
    h.time.advance(101)
    h.rm.maybe_shrink_isr()
    assert h.partition.isr == (0,) and h.partition.log.high_watermark == 0   # frozen under min ISR 2
    waiting = h.consumer_fetch(0, max_wait_ms=5000)
    assert waiting == []
    _set_topic_configs(h, {"min.insync.replicas": 1})
    assert h.partition.log.high_watermark == 1
    assert waiting and waiting[0][1].error == Errors.NONE and waiting[0][1].records
    assert h.produce(1)[TP].error == Errors.NONE
    _set_topic_configs(h, {})        # back to the broker's value, then the broker's changes dynamically
    h.rm.update_log_configs(config=KafkaConfig({"broker.id": 0, "min.insync.replicas": 3}))
    assert h.produce(1)[TP].error == Errors.NOT_ENOUGH_REPLICAS
    assert h.produce(1, acks=1)[TP].error == Errors.NONE


def test_max_message_bytes_change_applies_to_the_next_batch() -> None:
    h = Harness(replicas=(0,))
    assert h.produce(1, acks=1)[TP].error == Errors.NONE
    _set_topic_configs(h, {"max.message.bytes": 10})
    assert h.produce(1, acks=1)[TP].error == Errors.MESSAGE_TOO_LARGE
