"""The StandardAuthorizer and ACL filters, ported from Kafka's StandardAuthorizerTest and
AclControlManagerTest (validateNewAcl, filters), and ResourcePatternFilterTest's MATCH cases."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafka_emu.broker.apis.acls import validate_new_acl
from kafka_emu.broker.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafka_emu.broker.security.auth import KafkaPrincipal
from kafka_emu.broker.security.authorizer import StandardAuthorizer, parse_super_users

pytestmark = pytest.mark.timeout(30)

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation
ALICE, BOB = KafkaPrincipal("User", "alice"), KafkaPrincipal("User", "bob")


def acl(name: str, op: AclOperation, perm: AclPermissionType = ALLOW, principal: str = "User:alice",
        pattern: PatternType = LITERAL, host: str = "*", rtype: ResourceType = TOPIC) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def authorizer(*acls: AclBinding, super_users: str = "", allow_everyone: bool = False) -> StandardAuthorizer:
    return StandardAuthorizer(SimpleNamespace(acls=tuple(acls)), parse_super_users(super_users),  # type: ignore[arg-type]
                              allow_everyone)


def test_simple_authorizations() -> None:
    """StandardAuthorizerTest.testSimpleAuthorizations: literal and prefixed ACLs, DENY wins."""
    a = authorizer(acl("foo", Op.READ, pattern=PREFIXED), acl("foobar", Op.READ, DENY),
                   acl("bar", Op.ALL), acl("baz", Op.WRITE, principal="User:*"))
    assert a.authorize(ALICE, "1.2.3.4", Op.READ, TOPIC, "foo")
    assert a.authorize(ALICE, "1.2.3.4", Op.READ, TOPIC, "foobaz")
    assert not a.authorize(ALICE, "1.2.3.4", Op.READ, TOPIC, "foobar")       # DENY wins
    assert not a.authorize(ALICE, "1.2.3.4", Op.WRITE, TOPIC, "foo")
    assert a.authorize(ALICE, "1.2.3.4", Op.DELETE, TOPIC, "bar")             # ALL
    assert a.authorize(BOB, "1.2.3.4", Op.WRITE, TOPIC, "baz")                # User:*
    assert not a.authorize(BOB, "1.2.3.4", Op.READ, TOPIC, "foo")
    assert not a.authorize(ALICE, "1.2.3.4", Op.READ, GROUP, "foo")           # another resource type


def test_implied_operations_only_from_allow() -> None:
    """StandardAuthorizerTest.testDenyPrecedenceWithOperationAll / findResult: READ, WRITE,
    DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS, for ALLOW only."""
    a = authorizer(acl("t", Op.WRITE), acl("c", Op.ALTER_CONFIGS), acl("d", Op.READ, DENY))
    assert a.authorize(ALICE, "h", Op.DESCRIBE, TOPIC, "t")
    assert a.authorize(ALICE, "h", Op.DESCRIBE_CONFIGS, TOPIC, "c")
    assert not a.authorize(ALICE, "h", Op.DESCRIBE_CONFIGS, TOPIC, "t")
    assert not a.authorize(ALICE, "h", Op.DESCRIBE, TOPIC, "d")   # no ALLOW; a DENY READ does not deny DESCRIBE...
    a = authorizer(acl("d", Op.DESCRIBE), acl("d", Op.READ, DENY))
    assert a.authorize(ALICE, "h", Op.DESCRIBE, TOPIC, "d")       # ...as the allowed DESCRIBE shows


def test_hosts_wildcard_resource_and_deny_all() -> None:
    """StandardAuthorizerTest.testHostAddressAclValidation, testWildcardResource, testDenyAll."""
    a = authorizer(acl("t", Op.READ, host="192.168.0.1"), acl("*", Op.WRITE), acl("x", Op.ALL, DENY, "User:*"))
    assert a.authorize(ALICE, "192.168.0.1", Op.READ, TOPIC, "t")
    assert not a.authorize(ALICE, "192.168.0.2", Op.READ, TOPIC, "t")
    assert a.authorize(ALICE, "h", Op.WRITE, TOPIC, "anything")
    assert not a.authorize(ALICE, "h", Op.WRITE, TOPIC, "x")


def test_no_acl_rule_and_super_users() -> None:
    """StandardAuthorizerTest.testAllowEveryoneIfNoAclFound and testSuperUsers: a resource without
    any ACL follows allow.everyone.if.no.acl.found; one with ACLs for others is denied."""
    for allow_everyone in (False, True):
        a = authorizer(acl("owned", Op.READ, principal="User:bob"), allow_everyone=allow_everyone)
        assert a.authorize(ALICE, "h", Op.READ, TOPIC, "free") is allow_everyone
        assert not a.authorize(ALICE, "h", Op.READ, TOPIC, "owned")
    a = authorizer(acl("t", Op.ALL, DENY, "User:*"), super_users="User:alice;User:admin")
    assert a.authorize(ALICE, "h", Op.WRITE, TOPIC, "t") and a.authorize(ALICE, "h", Op.ALTER, CLUSTER, "kafka-cluster")
    assert not a.authorize(BOB, "h", Op.WRITE, TOPIC, "t")


def test_authorize_by_resource_type() -> None:
    """AuthorizerTest.testAuthorizeByResourceType* (the default implementation's cases)."""
    assert not authorizer().authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)
    assert authorizer(allow_everyone=True).authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)
    assert authorizer(acl("t", Op.WRITE)).authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)
    assert not authorizer(acl("t", Op.WRITE), acl("t", Op.WRITE, DENY)).authorize_by_resource_type(
        ALICE, "h", Op.WRITE, TOPIC)
    assert not authorizer(acl("tp", Op.WRITE, pattern=PREFIXED), acl("t", Op.WRITE, DENY, pattern=PREFIXED)
                          ).authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)
    assert not authorizer(acl("t", Op.WRITE), acl("*", Op.WRITE, DENY)).authorize_by_resource_type(
        ALICE, "h", Op.WRITE, TOPIC)
    assert authorizer(super_users="User:alice").authorize_by_resource_type(ALICE, "h", Op.WRITE, TOPIC)


def test_authorized_operations() -> None:
    a = authorizer(acl("t", Op.READ), acl("t", Op.ALTER_CONFIGS))
    ops = a.authorized_operations(ALICE, "h", TOPIC, "t")
    assert ops == (1 << Op.READ) | (1 << Op.DESCRIBE) | (1 << Op.ALTER_CONFIGS) | (1 << Op.DESCRIBE_CONFIGS)


@pytest.mark.parametrize("binding, message", [
    (acl("t", Op.READ, pattern=PatternType.MATCH), "Invalid patternType MATCH"),
    (acl("t", Op.ANY), "Invalid operation ANY"),
    (acl("t", Op.READ, AclPermissionType.ANY), "Invalid permissionType ANY"),
    (acl("", Op.READ), "Resource name should not be empty"),
    (acl("t", Op.READ, principal="alice"), "Could not parse principal from `alice`"),
    (acl("t", Op.READ, rtype=ResourceType.ANY), "Invalid resourceType ANY"),
])
def test_validate_new_acl(binding: AclBinding, message: str) -> None:
    """AclControlManagerTest.testValidateNewAcl."""
    assert validate_new_acl(binding).startswith(message)


def test_filters_match_any_and_match() -> None:
    """ResourcePatternFilterTest / AclBindingFilterTest: ANY matches every pattern of the name,
    MATCH what applies to the named resource (literal, wildcard, prefixes of it)."""
    acls = [acl("foo", Op.READ), acl("fo", Op.READ, pattern=PREFIXED), acl("*", Op.READ), acl("foobar", Op.READ),
            acl("foo", Op.READ, pattern=PREFIXED)]

    def names(f: AclBindingFilter) -> list[tuple[str, int]]:
        return [(a.resource_name, int(a.pattern_type)) for a in acls if f.matches(a)]

    base = dict(resource_type=TOPIC, principal=None, host=None, operation=Op.ANY, permission_type=AclPermissionType.ANY)
    assert names(AclBindingFilter(resource_name="foo", pattern_type=PatternType.ANY, **base)) == [("foo", 3), ("foo", 4)]
    assert names(AclBindingFilter(resource_name="foo", pattern_type=PatternType.MATCH, **base)) == \
        [("foo", 3), ("fo", 4), ("*", 3), ("foo", 4)]
    assert names(AclBindingFilter(resource_name=None, pattern_type=PREFIXED, **base)) == [("fo", 4), ("foo", 4)]
    assert len(names(AclBindingFilter(resource_name=None, pattern_type=PatternType.ANY, **base))) == 5


def test_acls_and_scram_credentials_survive_a_restart(tmp_path) -> None:
    """ACLs and SCRAM credentials are cluster metadata (Kafka's AclControlManager and
    ScramControlManager records): with log.dirs a restarted cluster has them back."""
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
    from kafka_emu.broker.security.scram import ScramMechanism

    config = {"log.dirs": str(tmp_path), "offsets.topic.replication.factor": 1}
    binding = acl("orders", Op.WRITE, pattern=PREFIXED)
    with EmbeddedCluster(brokers=1, security="SASL_PLAINTEXT", config=config) as cluster:
        cluster.metadata.alter_acls(lambda current: current + (binding,))
        cluster.metadata.alter_scram_credentials(lambda current: {
            **current, ("dave", ScramMechanism.SCRAM_SHA_512): current[("alice", ScramMechanism.SCRAM_SHA_512)]})
        alice = cluster.metadata.scram_credential("alice", ScramMechanism.SCRAM_SHA_256)
    with EmbeddedCluster(brokers=1, security="SASL_PLAINTEXT", config=config) as cluster:
        assert cluster.metadata.acls == (binding,)
        assert cluster.metadata.scram_credential("dave", ScramMechanism.SCRAM_SHA_512) is not None
        assert cluster.metadata.scram_credential("alice", ScramMechanism.SCRAM_SHA_256) == alice   # kept, not regenerated
