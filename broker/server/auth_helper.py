"""AuthHelper: the authorization checks the API handlers make (Kafka's ``kafka.server.AuthHelper``).

Each handler asks what Kafka's ``KafkaApis`` asks, in the same order, and answers the same error
(``authorize``, ``filter_authorized``, ``deny`` for a request refused whole). Without an
authorizer (``authorizer.class.name`` unset) everything is allowed and the authorized-operations
fields list every supported operation, as Kafka's ``AuthHelper.authorizedOperations`` does.

Difference from Kafka on purpose: requests made in process (``processor_id`` -1: replica fetchers,
the transaction marker channel, ``EmbeddedCluster``'s own calls) are the brokers' own and are
not authorized; in Kafka the inter-broker principal is usually a super user, to the same effect.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from kafka_emu.broker.apis._common import respond_error
from kafka_emu.broker.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from kafka_emu.broker.security.authorizer import all_operations_bits

if TYPE_CHECKING:
    from kafka_emu.broker.network.request_channel import Request
    from kafka_emu.broker.security.authorizer import StandardAuthorizer
    from kafka_emu.broker.server.kafka_apis import KafkaApis

TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                                           ResourceType.TRANSACTIONAL_ID)
Op = AclOperation


def authorizer_for(apis: KafkaApis, request: Request) -> StandardAuthorizer | None:
    """The authorizer that judges ``request``; None when every check passes (no authorizer, or a
    request made in process). Produce and Fetch ask this first, so that without security they
    build no set of names to check (as ``filter_authorized`` does), which cost every produced batch
    about 1 µs (``bench replication``, 2026-11-28)."""
    authorizer = apis.authorizer
    return None if authorizer is None or request.processor_id < 0 else authorizer


def authorize(apis: KafkaApis, request: Request, operation: AclOperation, resource_type: ResourceType,
              name: str = CLUSTER_NAME) -> bool:
    authorizer = authorizer_for(apis, request)
    if authorizer is None:
        return True
    return authorizer.authorize(request.principal, request.client_host, operation, resource_type, name)


def filter_authorized(apis: KafkaApis, request: Request, operation: AclOperation, resource_type: ResourceType,
                      names: Iterable[str]) -> set[str]:
    """The names ``operation`` is allowed on."""
    return {n for n in set(names) if authorize(apis, request, operation, resource_type, n)}


def authorize_by_resource_type(apis: KafkaApis, request: Request, operation: AclOperation,
                               resource_type: ResourceType) -> bool:
    authorizer = authorizer_for(apis, request)
    if authorizer is None:
        return True
    return authorizer.authorize_by_resource_type(request.principal, request.client_host, operation, resource_type)


def deny(apis: KafkaApis, request: Request, operation: AclOperation, resource_type: ResourceType, name: str,
         error: int) -> bool:
    """Answer the request with ``error`` everywhere (Kafka's ``getErrorResponse``) and return
    True when ``operation`` is not allowed; False (nothing sent) when it is."""
    if authorize(apis, request, operation, resource_type, name):
        return False
    respond_error(apis, request, error)
    return True


def authorized_operations(apis: KafkaApis, request: Request, resource_type: ResourceType,
                          name: str = CLUSTER_NAME) -> int:
    """The authorized-operations bit field of a resource (Kafka's ``authorizedOperations``)."""
    authorizer = authorizer_for(apis, request)
    if authorizer is None:
        return all_operations_bits(resource_type)
    return authorizer.authorized_operations(request.principal, request.client_host, resource_type, name)
