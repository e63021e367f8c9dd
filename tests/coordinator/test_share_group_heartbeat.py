"""Ports of the share group cases of Kafka's ``GroupMetadataManagerTest`` (and
``SimpleAssignorTest``): joining, the simple assignor sharing partitions, epoch fencing, leaving,
session timeouts on a ``MockTimer``, per-group configs, describe, type conflicts, list and
delete."""
from __future__ import annotations

from typing import Any

import pytest

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.modern.share.share_group import ShareGroup
from kafka_emu.coordinator.group.results import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResult
from kafka_emu.coordinator.metadata_image import StaticMetadataImage

from consumer_harness import GROUP, ConsumerHarness
from coordinator_harness import Box

pytestmark = pytest.mark.timeout(30)
SESSION_MS = 45_000


class ShareHarness(ConsumerHarness):
    def share(self, member_id: str, member_epoch: int = 0, topics: tuple[str, ...] | None = ("foo",),
              group_id: str = GROUP, **fields: Any) -> ShareGroupHeartbeatResult:
        box = Box()
        self.coordinator.handle_share_group_heartbeat(ShareGroupHeartbeatRequest(
            group_id, member_id, member_epoch, subscribed_topic_names=topics, **fields), box)
        return box.value

    def share_group(self) -> ShareGroup:
        group = self.coordinator.group_manager.get_group(GROUP)
        assert isinstance(group, ShareGroup)
        return group


def harness(partitions: int = 3, **kw: Any) -> tuple[ShareHarness, Any]:
    image = StaticMetadataImage()
    foo = image.add_topic("foo", partitions)
    return ShareHarness(image, **kw).own(), foo


def assigned(r: ShareGroupHeartbeatResult, topic_id: Any) -> tuple[int, ...]:
    assert r.assignment is not None
    return tuple(sorted(r.assignment.get(topic_id, ())))


def test_share_group_heartbeat_request_validation() -> None:
    """testShareGroupHeartbeatRequestValidation."""
    h, _ = harness()
    assert h.share("", 0).error == Errors.INVALID_REQUEST
    assert h.share("m", 0, topics=None).error_message == "SubscribedTopicNames must be set in first request."
    assert h.share("m", -2).error_message == "MemberEpoch is invalid."
    assert h.share("m", 0, rack_id="").error_message == "RackId can't be empty."
    assert h.share("m", 0, group_id="").error_message == "GroupId can't be empty."


def test_member_joins_and_the_simple_assignor_shares_partitions() -> None:
    """testShareGroupMemberJoinsEmptyGroupWithAssignments / SimpleAssignorTest: one member gets
    every partition; with more members than partitions each partition is shared."""
    h, foo = harness(partitions=2)
    a = h.share("a")
    assert (a.error, a.member_epoch, assigned(a, foo)) == (Errors.NONE, 1, (0, 1))
    assert a.heartbeat_interval_ms == 5000
    b = h.share("b")
    c = h.share("c")
    assert b.member_epoch == 2 and c.member_epoch == 3
    h.share("a", 1, topics=None)
    h.share("b", 2, topics=None)
    group = h.share_group()
    owners = [tuple(sorted(group.members[m].assigned_partitions.get(foo, ()))) for m in "abc"]
    assert sorted(p for ps in owners for p in ps) in ([0, 0, 1], [0, 1, 1])
    assert all(len(ps) == 1 for ps in owners)
    assert all(m.member_epoch == 3 for m in group.members.values())
    assert group.state_name() == "Stable" and group.group_epoch == 3


def test_member_epoch_fencing_and_unknown_members() -> None:
    """testShareGroupMemberEpochValidation / testShareGroupUnknownMemberIdJoins."""
    h, _ = harness()
    h.share("a")
    assert h.share("a", 5, topics=None).error == Errors.FENCED_MEMBER_EPOCH
    assert h.share("zz", 1, topics=None).error == Errors.UNKNOWN_MEMBER_ID
    assert h.share("a", 1, topics=None).error == Errors.NONE
    assert h.share("a", 0).error == Errors.NONE   # a rejoin with epoch 0 is accepted


def test_leave_and_session_timeout() -> None:
    """testShareGroupLeavingMemberBumpsGroupEpoch / testShareGroupSessionTimeoutExpiration."""
    h, foo = harness()
    h.share("a")
    h.share("b")
    left = h.share("a", -1, topics=None)
    assert (left.error, left.member_epoch) == (Errors.NONE, -1)
    assert set(h.share_group().members) == {"b"}
    h.advance(SESSION_MS + 1)
    group = h.share_group()
    assert group.members == {} and group.state_name() == "Empty"
    assert h.share("b", 3, topics=None).error == Errors.UNKNOWN_MEMBER_ID


def test_group_configs_apply_to_the_next_heartbeat() -> None:
    """testShareGroupDynamicConfigs: share.heartbeat.interval.ms and share.session.timeout.ms."""
    h, _ = harness(group_config={GROUP: {"share.heartbeat.interval.ms": 6000, "share.session.timeout.ms": 50000}})
    assert h.share("a").heartbeat_interval_ms == 6000
    h.advance(SESSION_MS + 1)
    assert "a" in h.share_group().members
    h.advance(5000)
    assert "a" not in h.share_group().members


def test_group_of_another_type_and_describe() -> None:
    """testShareGroupHeartbeatOnConsumerGroup / testShareGroupDescribe."""
    h, foo = harness()
    r = h.heartbeat(member_id="c1", member_epoch=0, subscribed_topic_names=("foo",))
    assert r.error == Errors.NONE
    clash = h.share("s1")
    assert (clash.error, clash.error_message) == (Errors.GROUP_ID_NOT_FOUND, f"Group {GROUP} is not a share group.")
    (d,) = h.coordinator.handle_share_group_describe([GROUP])
    assert (d.error, d.error_message) == (Errors.GROUP_ID_NOT_FOUND, f"Group {GROUP} is not a share group.")
    (missing,) = h.coordinator.handle_share_group_describe(["nope"])
    assert missing.error == Errors.GROUP_ID_NOT_FOUND


def test_describe_list_and_delete() -> None:
    """testShareGroupDescribe / testListGroups with the share type / testDeleteGroups of a share group."""
    h, foo = harness()
    h.share("a", client_id="cid", client_host="/127.0.0.1")
    (d,) = h.coordinator.handle_share_group_describe([GROUP])
    assert (d.error, d.state, d.group_epoch, d.assignment_epoch, d.assignor_name) == (Errors.NONE, "Stable", 1, 1,
                                                                                        "simple")
    (m,) = d.members
    assert (m.member_id, m.client_id, m.subscribed_topic_names) == ("a", "cid", ("foo",))
    assert m.assignment == [(foo, "foo", (0, 1, 2))]
    error, groups = h.coordinator.handle_list_groups(types=["share"])
    assert error == Errors.NONE and [(g.group_id, g.group_type, g.protocol_type) for g in groups] == [
        (GROUP, "share", "share")]
    assert h.coordinator.handle_delete_groups([GROUP]) == {GROUP: Errors.NON_EMPTY_GROUP}
    h.share("a", 1, topics=None)
    h.share("a", -1, topics=None)
    assert h.coordinator.handle_delete_groups([GROUP]) == {GROUP: Errors.NONE}
    assert h.coordinator.group_manager.get_group(GROUP) is None


def test_subscribed_topic_growing_bumps_the_epoch() -> None:
    """testShareGroupMetadataRefresh: a subscribed topic gaining partitions gives the member
    the new ones at its next heartbeat."""
    h, foo = harness(partitions=1)
    assert assigned(h.share("a"), foo) == (0,)
    h.image.grow("foo", 3)
    r = h.share("a", 1, topics=None)
    assert r.member_epoch == 2 and assigned(r, foo) == (0, 1, 2)
