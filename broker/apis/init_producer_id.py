"""InitProducerId: producer ids for idempotent producers.

Ids are unique across the in-process cluster (``MetadataStore.next_producer_id``, the
emulator's controller; Kafka hands out blocks of ids from the controller the same way).
KIP-360: a request carrying the producer's current id and epoch (v3+) bumps the epoch of the
same id, which resets sequence numbers on every partition (the log accepts sequence 0 at a
newer epoch); at epoch 32767 a fresh id is issued.

Differences on purpose: transactions are not emulated. A request with a ``transactional_id``
gets COORDINATOR_NOT_AVAILABLE, what Kafka answers while no transaction coordinator is
available; transactional clients surface it after their own timeout.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.protocol.adapter import build, response_schema
from kafka_emu.coordinator.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.kafka_apis import KafkaApis
    from kafka_emu.broker.request_channel import Request

API_KEY = 22
MAX_EPOCH = 32767


def handle_init_producer_id(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(API_KEY, request.api_version)
    if getattr(body, "transactional_id", None):
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE,
                                     error_code=Errors.COORDINATOR_NOT_AVAILABLE,
                                     producer_id=-1, producer_epoch=-1))
        return
    pid = int(getattr(body, "producer_id", -1))
    epoch = int(getattr(body, "producer_epoch", -1))
    if pid >= 0 and epoch >= 0 and epoch < MAX_EPOCH:
        new_pid, new_epoch = pid, epoch + 1
    else:
        new_pid, new_epoch = apis.metadata.next_producer_id(), 0
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE,
                                 producer_id=new_pid, producer_epoch=new_epoch))


APIS = (ApiSpec(API_KEY, "InitProducerId", 0, 5, handle_init_producer_id),)   # v6 is KIP-939 two-phase commit
