"""ACL vocabulary (Kafka's ``org.apache.kafka.common.acl`` and ``resource``): resource types,
pattern types, operations, permission types with their wire codes, an ACL binding and the
filter that matches bindings (DescribeAcls, DeleteAcls).

A binding is (resource type, name, pattern LITERAL or PREFIXED) + (principal, host, operation,
ALLOW or DENY). A filter's ``None`` fields (and ANY for the enums) match everything; its
pattern type MATCH matches what would apply to the named resource: LITERAL bindings of that name
or of ``*`` and PREFIXED bindings whose name begins it (Kafka's ``ResourcePatternFilter``).
Immutable values.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def to_json(self) -> list[object]:
        return [int(self.resource_type), self.resource_name, int(self.pattern_type), self.principal, self.host,
                int(self.operation), int(self.permission_type)]

    @staticmethod
    def from_json(item: list[object]) -> "AclBinding":
        rt, name, pt, principal, host, op, perm = item
        return AclBinding(ResourceType(rt), str(name), PatternType(pt), str(principal), str(host),
                          AclOperation(op), AclPermissionType(perm))


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def find_indefinite_field(self) -> str | None:
        """Why this filter cannot name one binding (CreateAcls needs a definite one), else None."""
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            return f"Resource type is {self.resource_type.name}."
        if self.resource_name is None:
            return "Resource name is NULL."
        if self.pattern_type in (PatternType.ANY, PatternType.MATCH, PatternType.UNKNOWN):
            return f"Resource pattern type is {self.pattern_type.name}."
        if self.principal is None:
            return "Principal is NULL."
        if self.host is None:
            return "Host is NULL."
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            return f"Operation is {self.operation.name}."
        if self.permission_type in (AclPermissionType.ANY, AclPermissionType.UNKNOWN):
            return f"Permission type is {self.permission_type.name}."
        return None

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission_type == AclPermissionType.ANY or self.permission_type == acl.permission_type

    def _pattern_matches(self, acl: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is None:
                return True
            if acl.pattern_type == PatternType.LITERAL:
                return acl.resource_name in (self.resource_name, WILDCARD)
            return acl.pattern_type == PatternType.PREFIXED and self.resource_name.startswith(acl.resource_name)
        if self.pattern_type != PatternType.ANY and self.pattern_type != acl.pattern_type:
            return False
        return self.resource_name is None or self.resource_name == acl.resource_name
