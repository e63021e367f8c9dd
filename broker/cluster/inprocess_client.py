"""InProcessClient: send kio request entities straight into a broker's request channel.

Used by tests, benchmarks and the embedded cluster's helpers; it goes through the same path as
a network request (channel → handler → KafkaApis), minus the sockets. ``send`` blocks for the
answer; ``send_async`` calls back from the thread that answers (a handler or a timer thread).
"""
from __future__ import annotations

import itertools
import threading
from datetime import timedelta
from typing import Any, Callable

from kio.index import load_request_schema

from kafka_emu.broker.apis import api_name
from kafka_emu.broker.network.request_channel import Request, RequestChannel, Response
from kafka_emu.common.api_keys import ApiKeys

_correlation = itertools.count(1)


class BrokerUnavailable(Exception):
    pass


def send_async(channel: RequestChannel, api_key: int, api_version: int, body: Any,
               callback: Callable[[Response], None], client_id: str = "in-process") -> bool:
    # the key as a decoded header has it: a plain int, whatever the caller passed
    req = Request(api_key=int(api_key), api_version=api_version, correlation_id=next(_correlation),
                  client_id=client_id, body=body, respond=callback, api_name=api_name(api_key))
    return channel.send_request(req, timeout_s=5.0)


def send(channel: RequestChannel | None, api_key: int, api_version: int, body: Any, timeout_s: float = 30.0,
         client_id: str = "in-process") -> Response:
    if channel is None:
        raise BrokerUnavailable("no request channel")
    done = threading.Event()
    box: list[Response] = []

    def cb(resp: Response) -> None:
        box.append(resp)
        done.set()

    if not send_async(channel, api_key, api_version, body, cb, client_id):
        raise BrokerUnavailable("request channel closed")
    if not done.wait(timeout_s):
        raise TimeoutError(f"no response to api {api_key} within {timeout_s}s")
    return box[0]


def produce_request(topic: str, partition: int, records: bytes, acks: int = -1, timeout_ms: int = 30000,
                    version: int = 9) -> Any:
    cls = load_request_schema(ApiKeys.PRODUCE, version)
    mod = __import__(cls.__module__, fromlist=["TopicProduceData"])
    return cls(transactional_id=None, acks=acks, timeout=timedelta(milliseconds=timeout_ms),
               topic_data=(mod.TopicProduceData(name=topic, partition_data=(
                   mod.PartitionProduceData(index=partition, records=records),)),))


def fetch_request(topic: str, partition: int, offset: int, max_wait_ms: int = 0, min_bytes: int = 1,
                  max_bytes: int = 1 << 20, isolation_level: int = 0, replica_id: int = -1,
                  current_leader_epoch: int = -1, version: int = 12) -> Any:
    cls = load_request_schema(ApiKeys.FETCH, version)
    mod = __import__(cls.__module__, fromlist=["FetchTopic"])
    part = mod.FetchPartition(partition=partition, current_leader_epoch=current_leader_epoch,
                              fetch_offset=offset, log_start_offset=-1, partition_max_bytes=max_bytes)
    return cls(replica_id=replica_id, max_wait=timedelta(milliseconds=max_wait_ms), min_bytes=min_bytes,
               max_bytes=max_bytes, isolation_level=isolation_level, session_id=0, session_epoch=-1,
               topics=(mod.FetchTopic(topic=topic, partitions=(part,)),), forgotten_topics_data=(), rack_id="")
