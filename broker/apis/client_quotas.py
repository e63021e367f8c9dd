"""DescribeClientQuotas (key 48) and AlterClientQuotas (key 49): the cluster's client quotas.

Kafka's ``KafkaApis.handleDescribeClientQuotasRequest`` (answered from the metadata image:
``ClientQuotasImage.describe``) and ``ControllerApis.handleAlterClientQuotas``
(``ClientQuotaControlManager``): both are answered from the in-process controller
(``MetadataStore.alter_client_quotas``/``describe_client_quotas``, whose
``broker.server.client_quota_control`` states the rules). An altered quota reaches every
broker's quota managers before the answer is sent, and is kept with the controller state (with
``log.dirs``, across restarts). A filter Kafka refuses is answered with its error code and
message and no entries.

Authorization as Kafka's: DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster (else a
top-level CLUSTER_AUTHORIZATION_FAILED), AlterClientQuotas ALTER_CONFIGS on the cluster (else
every entry CLUSTER_AUTHORIZATION_FAILED, nothing altered).

Versions 0-1 (Kafka 4.0's; v1 is v0 made flexible).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.server.auth_helper import CLUSTER, Op, authorize
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors, KafkaError

if TYPE_CHECKING:
    from kafka_emu.broker.network.request_channel import Request
    from kafka_emu.broker.server.kafka_apis import KafkaApis


def handle_describe_client_quotas(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(ApiKeys.DESCRIBE_CLIENT_QUOTAS, request.api_version)
    entry_cls = item_cls(cls, "entries")
    entity_cls, value_cls = item_cls(entry_cls, "entity"), item_cls(entry_cls, "values")
    components = [(c.entity_type, int(c.match_type), c.match) for c in body.components]
    try:
        if not authorize(apis, request, Op.DESCRIBE_CONFIGS, CLUSTER):
            raise KafkaError(Errors.CLUSTER_AUTHORIZATION_FAILED, Errors.CLUSTER_AUTHORIZATION_FAILED.message)
        found = apis.metadata.describe_client_quotas(components, bool(body.strict))
    except KafkaError as exc:
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=exc.code,
                                     error_message=exc.message or None, entries=None))
        return
    entries = tuple(
        build(entry_cls,
              entity=tuple(build(entity_cls, entity_type=kind, entity_name=name) for kind, name in entity),
              values=tuple(build(value_cls, key=key, value=value) for key, value in sorted(values.items())))
        for entity, values in found)
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE, error_message=None,
                                 entries=entries))


def handle_alter_client_quotas(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(ApiKeys.ALTER_CLIENT_QUOTAS, request.api_version)
    entry_cls = item_cls(cls, "entries")
    entity_cls = item_cls(entry_cls, "entity")
    alterations = [([(e.entity_type, e.entity_name) for e in entry.entity],
                     [(op.key, None if op.remove else float(op.value)) for op in entry.ops])
                   for entry in body.entries]
    if authorize(apis, request, Op.ALTER_CONFIGS, CLUSTER):
        results = [(r.error, r.message, r.entity)
                   for r in apis.metadata.alter_client_quotas(alterations, bool(body.validate_only))]
    else:   # Kafka's AlterClientQuotasRequest.getErrorResponse: every entry, as it was asked
        denied = Errors.CLUSTER_AUTHORIZATION_FAILED
        results = [(denied, denied.message, entity) for entity, _ops in alterations]
    entries = tuple(
        build(entry_cls, error_code=error, error_message=message,
              entity=tuple(build(entity_cls, entity_type=kind, entity_name=name) for kind, name in entity))
        for error, message, entity in results)
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, entries=entries))


APIS = (ApiSpec(ApiKeys.DESCRIBE_CLIENT_QUOTAS, 0, 1, handle_describe_client_quotas),
        ApiSpec(ApiKeys.ALTER_CLIENT_QUOTAS, 0, 1, handle_alter_client_quotas))
