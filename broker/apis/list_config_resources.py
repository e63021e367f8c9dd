"""ListConfigResources (key 74; ListClientMetricsResources before Kafka 4.1, KIP-1142).

Kafka's ``KafkaApis.handleListConfigResources``: v0 lists the CLIENT_METRICS resources; v1 lists
the resources of the requested types (none requested: every supported type), GROUP first, then
CLIENT_METRICS, BROKER_LOGGER (one per live broker), BROKER (likewise) and TOPIC (every topic,
internal ones included). A requested type outside the version's supported ones (TOPIC, BROKER,
BROKER_LOGGER, CLIENT_METRICS, GROUP; v0: CLIENT_METRICS) is answered UNSUPPORTED_VERSION with
no resources. The principal needs DESCRIBE_CONFIGS on the cluster (else
CLUSTER_AUTHORIZATION_FAILED).

GROUP and CLIENT_METRICS list the resources that have configs (``MetadataStore``'s
``group_config_resources`` and ``client_metrics_resources``), as Kafka's group config manager and
client metrics manager do.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.server.auth_helper import CLUSTER, Op, authorize
from kafka_emu.broker.server.metadata_store import ConfigResourceType
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

V0_TYPES = (ConfigResourceType.CLIENT_METRICS,)
V1_TYPES = (ConfigResourceType.TOPIC, ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER,
            ConfigResourceType.CLIENT_METRICS, ConfigResourceType.GROUP)


def handle_list_config_resources(apis: KafkaApis, request: Request) -> None:
    cls = response_schema(ApiKeys.LIST_CONFIG_RESOURCES, request.api_version)
    res_cls = item_cls(cls, "config_resources")
    supported = {int(t) for t in (V0_TYPES if request.api_version == 0 else V1_TYPES)}
    wanted = {int(t) for t in getattr(request.body, "resource_types", ())} or supported
    if not authorize(apis, request, Op.DESCRIBE_CONFIGS, CLUSTER):
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.CLUSTER_AUTHORIZATION_FAILED,
                                     config_resources=()))
        return
    if not wanted <= supported:
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.UNSUPPORTED_VERSION,
                                     config_resources=()))
        return
    md = apis.metadata
    brokers = [str(b) for b in md.live_broker_ids()]
    found: list[tuple[ConfigResourceType, str]] = []
    if ConfigResourceType.GROUP in wanted:
        found += [(ConfigResourceType.GROUP, group_id) for group_id in md.group_config_resources()]
    if ConfigResourceType.CLIENT_METRICS in wanted:
        found += [(ConfigResourceType.CLIENT_METRICS, name) for name in md.client_metrics_resources()]
    if ConfigResourceType.BROKER_LOGGER in wanted:
        found += [(ConfigResourceType.BROKER_LOGGER, b) for b in brokers]
    if ConfigResourceType.BROKER in wanted:
        found += [(ConfigResourceType.BROKER, b) for b in brokers]
    if ConfigResourceType.TOPIC in wanted:
        found += [(ConfigResourceType.TOPIC, name) for name in sorted(md.topics)]
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE, config_resources=tuple(
        build(res_cls, resource_name=name, resource_type=int(rtype)) for rtype, name in found)))


APIS = (ApiSpec(ApiKeys.LIST_CONFIG_RESOURCES, 0, 1, handle_list_config_resources),)
