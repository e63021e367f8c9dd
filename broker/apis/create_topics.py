"""CreateTopics (key 19): create topics through the in-process controller (``AdminClient.create_topics``).

Manual replica ``assignments`` are honoured and validated as Kafka's controller does
(``ReplicationControlManager.createTopic``, ``MetadataStore.create_topic``): INVALID_REQUEST unless
``num_partitions`` and ``replication_factor`` are -1; INVALID_REPLICA_ASSIGNMENT for an empty
replica list, an unregistered broker, a broker named twice, a partition whose replica count
differs from the first one's, a partition assigned twice, partition indexes that are not
0..n-1, or a partition whose replicas are all fenced. The leader is the first live replica.
``validate_only`` answers the same without creating anything.

Differences from Kafka on purpose:
* Any broker accepts CreateTopics (Kafka forwards it to the controller); the in-process controller
  applies it synchronously, so ``timeout`` never expires and the topic's leaders exist when the
  response is sent.
* Without manual assignments, placement is the controller's round robin, not Kafka's rack-aware
  striping.
* Topic configs the emulator does not implement are accepted with a warning (refused with
  INVALID_CONFIG under ``emulator.strict.config=true``), see ``broker.storage.log_config``.

Controller mutation quota (KIP-599): each valid topic's partitions are taken from the client's
``controller_mutation_rate`` quota; from v6 a topic the exhausted quota refuses gets
THROTTLING_QUOTA_EXCEEDED, and the response is throttled by that quota or the request quota.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_emu.broker.apis._common import ZERO_THROTTLE, controller_mutation_quota, topic_name_error
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import CLUSTER, TOPIC, Op, authorize, filter_authorized
from kafka_emu.broker.server.config import STRICT_CONFIG, ConfigException
from kafka_emu.broker.storage.log_config import validate_topic_configs
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.server.quota.controller_mutation_quota_manager import ControllerMutationQuota
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors, KafkaError

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

STRICT_SINCE_VERSION = 6   # KIP-599: THROTTLING_QUOTA_EXCEEDED from v6, a permissive quota before


def _create_one(apis: KafkaApis, t: Any, validate_only: bool,
                mutation_quota: ControllerMutationQuota) -> tuple[int, str | None, int, int]:
    """(error, message, partitions, replication factor) for one CreatableTopic; its partitions
    count against the controller mutation quota once it is valid (validate_only included, as
    Kafka's ``ReplicationControlManager.createTopic`` does)."""
    md = apis.metadata
    name = t.name
    err = topic_name_error(name)
    if err:
        return err, f"illegal topic name {name!r}", -1, -1
    if md.topic(name) is not None:
        return Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.", -1, -1
    manual = [(int(a.partition_index), tuple(int(b) for b in a.broker_ids)) for a in (t.assignments or ())]
    partitions = int(t.num_partitions)
    rf = int(t.replication_factor)
    if manual and rf != -1:
        return (Errors.INVALID_REQUEST,
                "A manual partition assignment was specified, but replication factor was not set to -1.", -1, -1)
    if manual and partitions != -1:
        return (Errors.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions was not set to -1.", -1, -1)
    if partitions == -1:
        partitions = apis.config["num.partitions"]
    if rf == -1:
        rf = apis.config["default.replication.factor"]
    if not manual:
        if partitions <= 0:
            return Errors.INVALID_PARTITIONS, "Number of partitions must be larger than 0.", -1, -1
        live = len(md.live_broker_ids())
        if rf <= 0 or rf > live:
            return (Errors.INVALID_REPLICATION_FACTOR,
                    f"Replication factor: {rf} larger than available brokers: {live}.", -1, -1)
    try:
        configs = validate_topic_configs(name, {c.name: c.value for c in (getattr(t, "configs", ()) or ())},
                                         bool(apis.config[STRICT_CONFIG]))
    except ConfigException as exc:
        return Errors.INVALID_CONFIG, str(exc), -1, -1
    try:
        if manual:   # the assignment validated before its partitions are taken from the quota
            partitions = len(md.create_topic(name, -1, -1, manual=manual, validate_only=True).partitions)
        mutation_quota.record(partitions)
    except KafkaError as exc:
        return exc.code, exc.message or None, -1, -1
    except ValueError as exc:   # created meanwhile
        return Errors.TOPIC_ALREADY_EXISTS, str(exc), -1, -1
    if validate_only and not manual:
        return Errors.NONE, None, partitions, rf
    try:
        info = md.create_topic(name, partitions, rf, configs=configs, manual=manual or None,
                               validate_only=validate_only)
    except KafkaError as exc:
        return exc.code, exc.message or None, -1, -1
    except ValueError as exc:
        if md.topic(name) is not None:
            return Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.", -1, -1
        return Errors.INVALID_REQUEST, str(exc), -1, -1
    return Errors.NONE, None, len(info.partitions), len(info.partitions[0].replicas)


def handle_create_topics(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(ApiKeys.CREATE_TOPICS, request.api_version)
    topic_cls = item_cls(cls, "topics")
    validate_only = bool(getattr(body, "validate_only", False))
    mutation_quota = controller_mutation_quota(apis, request, STRICT_SINCE_VERSION)
    seen: set[str] = set()
    dupes = {t.name for t in body.topics if t.name in seen or seen.add(t.name)}  # type: ignore[func-returns-value]
    results = []
    # Kafka's handleCreateTopicsRequest: CREATE on the cluster, else on each topic
    creatable = {t.name for t in body.topics} if authorize(apis, request, Op.CREATE, CLUSTER) else \
        filter_authorized(apis, request, Op.CREATE, TOPIC, (t.name for t in body.topics))
    for t in body.topics:
        if t.name in dupes:
            err, msg, parts, rf = Errors.INVALID_REQUEST, "Duplicate topic name.", -1, -1
        elif t.name not in creatable:
            err, msg, parts, rf = Errors.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.", -1, -1
        else:
            err, msg, parts, rf = _create_one(apis, t, validate_only, mutation_quota)
        info = apis.metadata.topic(t.name) if err == 0 else None
        results.append(build(topic_cls, name=t.name, topic_id=info.topic_id if info else None,
                             error_code=err, error_message=msg, num_partitions=parts,
                             replication_factor=rf, configs=None if err else ()))
    apis.request_helper.send_response_maybe_throttle_with_controller_quota(
        mutation_quota, request, build(cls, throttle_time=ZERO_THROTTLE, topics=tuple(results)))


APIS = (ApiSpec(ApiKeys.CREATE_TOPICS, 0, 7, handle_create_topics),)
