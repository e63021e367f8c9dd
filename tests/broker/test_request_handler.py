"""KafkaRequestHandler drains the action queue when the channel is empty, and at least every
``ACTION_BATCH_REQUESTS`` requests under load (the deliberate difference from Kafka)."""
from __future__ import annotations

import threading

import pytest

from kafka_emu.broker.server.action_queue import ActionQueue
from kafka_emu.broker.server.config import KafkaConfig
from kafka_emu.broker.server.kafka_apis import KafkaApis
from kafka_emu.broker.network.request_channel import Request, RequestChannel
from kafka_emu.broker.server.request_handler import ACTION_BATCH_REQUESTS, KafkaRequestHandlerPool
from kafka_emu.timer.time import Time

pytestmark = pytest.mark.timeout(20)

API = 18   # any key: this KafkaApis has only the handler registered below


def _run(requests: int, io_threads: int = 1) -> tuple[list[int], list[int], int]:
    """Queue ``requests`` requests before the handlers start; each adds one action. Returns, per
    action, how many requests had been handled when it ran, and per request the same count."""
    channel = RequestChannel(queue_size=requests + 10)
    actions = ActionQueue()
    handled = [0]
    lock = threading.Lock()
    ran_at: list[int] = []
    answered: list[int] = []
    all_done = threading.Event()

    def handler(apis: KafkaApis, request: Request) -> None:
        with lock:
            handled[0] += 1
            n = handled[0]

        def action(n: int = n) -> None:
            with lock:
                ran_at.append(handled[0])
                if len(ran_at) == requests:
                    all_done.set()
        actions.add(action)
        apis.request_channel.send_response(request, None)

    # the one handler registered below touches nothing but the channel
    apis = KafkaApis(KafkaConfig({"broker.id": 0}), channel, None, None, Time.SYSTEM, apis={})  # type: ignore[arg-type]
    apis.register(API, handler)
    for i in range(requests):
        channel.send_request(Request(API, 0, i, "t", None, respond=lambda r: answered.append(r.request.correlation_id),
                                     api_name="Test"))
    pool = KafkaRequestHandlerPool(0, channel, apis, actions, io_threads)
    pool.start()
    try:
        assert all_done.wait(10), "an action was never run"
    finally:
        pool.shutdown()
    return ran_at, answered, len(actions)


def test_actions_wait_at_most_a_batch_of_requests_under_load() -> None:
    ran_at, answered, left = _run(100)
    assert len(answered) == 100 and left == 0
    # each action ran no later than ACTION_BATCH_REQUESTS requests after the one that added it
    for i, handled_then in enumerate(sorted(ran_at)):
        assert handled_then - (i + 1) < ACTION_BATCH_REQUESTS
    # and they did run in batches, not after every request
    assert len(set(ran_at)) < 100


def test_actions_run_when_the_channel_empties() -> None:
    ran_at, answered, left = _run(3)
    assert sorted(ran_at) == [3, 3, 3] and left == 0 and len(answered) == 3
