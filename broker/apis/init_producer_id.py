"""InitProducerId (key 22): producer ids for idempotent producers.

Ids are unique across the in-process cluster (one allocator per ``MetadataStore``, the
emulator's controller; Kafka hands out blocks of ids from the controller the same way).
KIP-360: a request carrying the producer's current id and epoch (v3+) bumps the epoch of the
same id, which resets sequence numbers on every partition (the log accepts sequence 0 at a
newer epoch); at epoch 32767 a fresh id is issued.

Differences on purpose: transactions are not emulated. A request with a ``transactional_id``
gets COORDINATOR_NOT_AVAILABLE, what Kafka answers while no transaction coordinator is
available; transactional clients surface it after their own timeout.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any

from kafka_emu.broker.protocol.codec import response_schema
from kio.schema.errors import ErrorCode

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.protocol.adapter import build

API_KEY = 22
FIRST_PRODUCER_ID = 1000
MAX_EPOCH = 32767

_allocators_lock = threading.Lock()    # guards _allocators
_allocators: "weakref.WeakKeyDictionary[Any, itertools.count[int]]" = weakref.WeakKeyDictionary()


def next_producer_id(metadata: Any) -> int:
    """A cluster-wide unique producer id (``itertools.count`` is atomic under the GIL)."""
    with _allocators_lock:
        counter = _allocators.get(metadata)
        if counter is None:
            counter = _allocators[metadata] = itertools.count(FIRST_PRODUCER_ID)
    return next(counter)


def handle_init_producer_id(apis: Any, request: Any) -> None:
    body = request.body
    cls = response_schema(API_KEY, request.api_version)
    if getattr(body, "transactional_id", None):
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE,
                                     error_code=ErrorCode.coordinator_not_available,
                                     producer_id=-1, producer_epoch=-1))
        return
    pid = int(getattr(body, "producer_id", -1))
    epoch = int(getattr(body, "producer_epoch", -1))
    if pid >= 0 and epoch >= 0 and epoch < MAX_EPOCH:
        new_pid, new_epoch = pid, epoch + 1
    else:
        new_pid, new_epoch = next_producer_id(apis.metadata), 0
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=ErrorCode.none,
                                 producer_id=new_pid, producer_epoch=new_epoch))


def register(apis: Any) -> None:
    apis.register(API_KEY, handle_init_producer_id)
