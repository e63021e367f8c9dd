"""CreateAcls, DescribeAcls and DeleteAcls (Kafka's ``AclApis`` with the controller's
``AclControlManager``): the ACLs the ``StandardAuthorizer`` reads, kept in the cluster metadata.

Authorization: ALTER on the cluster to create or delete, DESCRIBE to describe
(CLUSTER_AUTHORIZATION_FAILED). A new ACL must be definite (resource type, LITERAL or PREFIXED
pattern, a non-empty name, ``type:name`` principal, a host, an operation other than ANY, ALLOW or
DENY), else INVALID_REQUEST with Kafka's message; creating an ACL that exists changes nothing.
A filter's null fields and ANY values match everything, MATCH matches what applies to the named
resource (``broker.security.acl.AclBindingFilter``). Without an authorizer the three answer
SECURITY_DISABLED, as Kafka does.

Difference from Kafka: v0 (Kafka 3.9's, no pattern type) is not served, kio has no schema for it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond, respond_error
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafka_emu.broker.server.auth_helper import CLUSTER, Op, authorize
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.network.request_channel import Request
    from kafka_emu.broker.server.kafka_apis import KafkaApis



def _enum(kind: type, value: int) -> Any:
    try:
        return kind(int(value))
    except ValueError:
        return kind(0)   # UNKNOWN


def _filter(item: Any) -> AclBindingFilter:
    return AclBindingFilter(_enum(ResourceType, item.resource_type_filter), item.resource_name_filter,
                            _enum(PatternType, item.pattern_type_filter), item.principal_filter, item.host_filter,
                            _enum(AclOperation, item.operation), _enum(AclPermissionType, item.permission_type))


def _filter_error(f: AclBindingFilter) -> str | None:
    """Kafka's check that a filter names no UNKNOWN value."""
    if PatternType.UNKNOWN in (f.pattern_type,) or f.resource_type == ResourceType.UNKNOWN or \
            f.operation == AclOperation.UNKNOWN or f.permission_type == AclPermissionType.UNKNOWN:
        return "Filter contains UNKNOWN elements"
    return None


def validate_new_acl(acl: AclBinding) -> str | None:
    """Kafka's ``AclControlManager.validateNewAcl``: the message of INVALID_REQUEST, None if valid."""
    if acl.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {acl.permission_type.name}"
    if not acl.resource_name:
        return "Resource name should not be empty"
    if ":" not in acl.principal:
        return (f"Could not parse principal from `{acl.principal}` (no colon is present separating the "
                f"principal type from the principal name)")
    return None


def _disabled(apis: KafkaApis, request: Request) -> bool:
    if apis.authorizer is None:
        respond_error(apis, request, Errors.SECURITY_DISABLED)
        return True
    return False


def handle_create_acls(apis: KafkaApis, request: Request) -> None:
    if _disabled(apis, request):
        return
    cls = response_schema(ApiKeys.CREATE_ACLS, request.api_version)
    result_cls = item_cls(cls, "results")
    creations = list(request.body.creations)
    if not authorize(apis, request, Op.ALTER, CLUSTER):
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, results=tuple(
            build(result_cls, error_code=Errors.CLUSTER_AUTHORIZATION_FAILED, error_message=None) for _ in creations)))
        return
    outcomes: list[tuple[int, str | None]] = []
    new: list[AclBinding] = []
    for c in creations:
        acl = AclBinding(_enum(ResourceType, c.resource_type), c.resource_name,
                         _enum(PatternType, c.resource_pattern_type), c.principal, c.host,
                         _enum(AclOperation, c.operation), _enum(AclPermissionType, c.permission_type))
        problem = validate_new_acl(acl)
        outcomes.append((Errors.INVALID_REQUEST, problem) if problem else (Errors.NONE, None))
        if problem is None:
            new.append(acl)
    if new:
        apis.metadata.alter_acls(lambda current: current + tuple(a for a in dict.fromkeys(new) if a not in current))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, results=tuple(
        build(result_cls, error_code=code, error_message=message) for code, message in outcomes)))


def handle_describe_acls(apis: KafkaApis, request: Request) -> None:
    if _disabled(apis, request):
        return
    cls = response_schema(ApiKeys.DESCRIBE_ACLS, request.api_version)
    if not authorize(apis, request, Op.DESCRIBE, CLUSTER):
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.CLUSTER_AUTHORIZATION_FAILED,
                                     error_message=None, resources=()))
        return
    f = _filter(request.body)
    problem = _filter_error(f)
    if problem:
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.INVALID_REQUEST,
                                     error_message=problem, resources=()))
        return
    resource_cls = item_cls(cls, "resources")
    acl_cls = item_cls(resource_cls, "acls")
    grouped: dict[tuple[int, str, int], list[AclBinding]] = {}
    for acl in apis.metadata.acls:
        if f.matches(acl):
            grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(acl)
    resources = tuple(build(resource_cls, resource_type=rt, resource_name=name, pattern_type=pt, acls=tuple(
        build(acl_cls, principal=a.principal, host=a.host, operation=a.operation, permission_type=a.permission_type)
        for a in acls)) for (rt, name, pt), acls in grouped.items())
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE, error_message=None,
                                 resources=resources))


def handle_delete_acls(apis: KafkaApis, request: Request) -> None:
    if _disabled(apis, request):
        return
    cls = response_schema(ApiKeys.DELETE_ACLS, request.api_version)
    result_cls = item_cls(cls, "filter_results")
    match_cls = item_cls(result_cls, "matching_acls")
    filters = [_filter(f) for f in request.body.filters]
    if not authorize(apis, request, Op.ALTER, CLUSTER):
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, filter_results=tuple(
            build(result_cls, error_code=Errors.CLUSTER_AUTHORIZATION_FAILED, error_message=None, matching_acls=())
            for _ in filters)))
        return
    deleted: list[list[AclBinding]] = []

    def remove(current: tuple[AclBinding, ...]) -> tuple[AclBinding, ...]:
        deleted.clear()
        for f in filters:
            deleted.append([] if _filter_error(f) else [a for a in current if f.matches(a)])
        gone = {a for matched in deleted for a in matched}
        return tuple(a for a in current if a not in gone)

    apis.metadata.alter_acls(remove)
    results = []
    for f, matched in zip(filters, deleted):
        problem = _filter_error(f)
        results.append(build(result_cls, error_code=Errors.INVALID_REQUEST if problem else Errors.NONE,
                             error_message=problem, matching_acls=tuple(build(
                                 match_cls, error_code=Errors.NONE, error_message=None, resource_type=a.resource_type,
                                 resource_name=a.resource_name, pattern_type=a.pattern_type, principal=a.principal,
                                 host=a.host, operation=a.operation, permission_type=a.permission_type)
                                 for a in matched)))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, filter_results=tuple(results)))


APIS = (ApiSpec(ApiKeys.DESCRIBE_ACLS, 1, 3, handle_describe_acls),
        ApiSpec(ApiKeys.CREATE_ACLS, 1, 3, handle_create_acls),
        ApiSpec(ApiKeys.DELETE_ACLS, 1, 3, handle_delete_acls))
