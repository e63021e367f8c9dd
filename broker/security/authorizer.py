"""StandardAuthorizer: Kafka's KRaft authorizer (``org.apache.kafka.metadata.authorizer.
StandardAuthorizer`` with ``StandardAuthorizerData``), over the ACLs kept in the cluster metadata.

A request's (principal, host, operation, resource) is allowed when the principal is one of
``super.users``, or when an ALLOW ACL matches and no DENY ACL does (DENY wins). An ACL matches
when its resource type is the resource's and its pattern covers the name (LITERAL: the name or
``*``; PREFIXED: a prefix of the name), its principal is the request's or ``User:*``, its host
the client's address or ``*``, and its operation the one asked, ALL, or, for ALLOW ACLs only,
one that implies it (READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
DESCRIBE_CONFIGS). A resource with no ACL at all follows ``allow.everyone.if.no.acl.found``;
one with ACLs, none of them matching, is denied.

``authorize_by_resource_type`` is Kafka's ``Authorizer.authorizeByResourceType`` (used by
InitProducerId without a transactional id: WRITE on any topic): allowed if the principal would
be allowed on some resource of the type (an ALLOW ACL not cancelled by a DENY covering it, or
the no-ACL default, super users).

``authorized_operations`` fills the authorized-operations fields (Metadata, DescribeCluster,
DescribeGroups): the bit ``1 << op`` of each supported operation allowed.

Locking: none; the ACLs are an immutable tuple the metadata store swaps on change, read once per
call.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from kafka_emu.broker.security.acl import (
    WILDCARD,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafka_emu.broker.security.auth import WILDCARD_PRINCIPAL, KafkaPrincipal

if TYPE_CHECKING:
    from kafka_emu.broker.server.metadata_store import MetadataStore

_IMPLIES_DESCRIBE = frozenset((AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                               AclOperation.ALTER))
_IMPLIES_DESCRIBE_CONFIGS = frozenset((AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS))
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
                         AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
                         AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.DESCRIBE_CONFIGS,
                         AclOperation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                           AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE, AclOperation.TWO_PHASE_COMMIT),
}


def parse_super_users(value: str | None) -> frozenset[str]:
    """``super.users``: principals separated by ';' (Kafka's ``StandardAuthorizer.getConfiguredSuperUsers``)."""
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


def all_operations_bits(resource_type: ResourceType) -> int:
    """The authorized-operations field of a broker without an authorizer: every supported operation."""
    return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type])


def _op_matches(acl: AclBinding, operation: AclOperation) -> bool:
    if acl.operation == AclOperation.ALL or acl.operation == operation:
        return True
    if acl.permission_type != AclPermissionType.ALLOW:
        return False
    if operation == AclOperation.DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    return operation == AclOperation.DESCRIBE_CONFIGS and acl.operation in _IMPLIES_DESCRIBE_CONFIGS


def _resource_matches(acl: AclBinding, resource_type: ResourceType, name: str) -> bool:
    if acl.resource_type != resource_type:
        return False
    if acl.pattern_type == PatternType.LITERAL:
        return acl.resource_name == name or acl.resource_name == WILDCARD
    return acl.pattern_type == PatternType.PREFIXED and name.startswith(acl.resource_name)


class StandardAuthorizer:
    def __init__(self, metadata: MetadataStore, super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.metadata = metadata
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found

    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        return str(principal) in self.super_users

    def authorize(self, principal: KafkaPrincipal, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        if self.is_super_user(principal):
            return True
        principals = (str(principal), str(WILDCARD_PRINCIPAL))
        has_resource_acls = allowed = False
        for acl in self.metadata.acls:
            if not _resource_matches(acl, resource_type, name):
                continue
            has_resource_acls = True
            if acl.principal not in principals or (acl.host != WILDCARD and acl.host != host):
                continue
            if not _op_matches(acl, operation):
                continue
            if acl.permission_type == AclPermissionType.DENY:
                return False
            allowed = True
        return allowed or (not has_resource_acls and self.allow_everyone_if_no_acl_found)

    def authorize_by_resource_type(self, principal: KafkaPrincipal, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        if self.authorize(principal, host, operation, resource_type, "\0kafka-emu-no-such-resource"):
            return True
        principals = (str(principal), str(WILDCARD_PRINCIPAL))
        acls = [a for a in self.metadata.acls if a.resource_type == resource_type and a.principal in principals
                and (a.host == WILDCARD or a.host == host) and _op_matches(a, operation)]
        denies = [a for a in acls if a.permission_type == AclPermissionType.DENY]
        if any(d.resource_name == WILDCARD and d.pattern_type == PatternType.LITERAL for d in denies):
            return False
        for allow in acls:
            if allow.permission_type != AclPermissionType.ALLOW:
                continue
            covered = any((d.pattern_type == PatternType.PREFIXED and allow.resource_name.startswith(d.resource_name))
                          or (d.pattern_type == PatternType.LITERAL and allow.pattern_type == PatternType.LITERAL
                              and d.resource_name == allow.resource_name) for d in denies)
            if not covered:
                return True
        return False

    def authorized_operations(self, principal: KafkaPrincipal, host: str, resource_type: ResourceType,
                              name: str) -> int:
        return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type]
                   if self.authorize(principal, host, op, resource_type, name))
