"""PartitionState and the controller's rules for changing it: replica placement, leader elections,
fencing and reassignments (KIP-455), each a function from one state to the next.

Kafka's controller keeps the same rules apart from the state it guards: ``PartitionRegistration``
(the state), ``PartitionChangeBuilder`` (elections, ISR changes), ``PartitionReassignmentReplicas``
(the replicas while a reassignment runs) and the replica placer, beside
``ReplicationControlManager`` (which holds the partitions). Here ``MetadataStore`` holds the
states, takes the locks and publishes what these functions return; nothing here locks, logs or
reads a broker: the callers pass the live (and registered) broker ids.

Epochs: every change bumps the partition epoch; a change of leader bumps the leader epoch as well
(``with_leader``), which is how a broker tells a newer state from an older one.

Replica placement (``place_replicas``): round robin over the live brokers, partition ``p`` of a
topic on ``live[(start + p + r) % n]`` for replica ``r``; ``start`` advances with each new topic,
and new partitions of a topic continue its stripe (``start`` = the position of partition 0's
first replica), so a topic grown with CreatePartitions is laid out as if created with the new
count.

Differences from Kafka on purpose: placement is this round robin, not the rack-aware
``StripedReplicaPlacer`` (racks are ignored); an unclean election happens only when asked for
(ElectLeaders UNCLEAN), never automatically.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Collection

from kafka_emu.common.errors import Errors

ELECTION_PREFERRED, ELECTION_UNCLEAN = 0, 1   # ElectLeadersRequest's ElectionType


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    topic_id: uuid.UUID
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()     # an ongoing reassignment (KIP-455): still catching up
    removing_replicas: tuple[int, ...] = ()   # an ongoing reassignment: leave when it completes
    offline_replicas: tuple[int, ...] = ()    # replicas whose log directory failed (until their broker restarts)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """The replicas once the ongoing reassignment (if any) completes."""
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def original_replicas(self) -> tuple[int, ...]:
        """The replicas before the ongoing reassignment (if any) began."""
        return tuple(r for r in self.replicas if r not in self.adding_replicas)


def place_replicas(live: list[int], start: int, first: int, count: int, rf: int) -> list[tuple[int, ...]]:
    """Replicas of partitions ``first .. first+count-1`` (see the module docstring)."""
    return [tuple(live[(start + p + r) % len(live)] for r in range(rf)) for p in range(first, first + count)]


def with_leader(st: PartitionState, leader: int, **changes: tuple[int, ...]) -> PartitionState:
    """``st`` led by ``leader`` (-1: offline), both epochs bumped, with ``changes`` (e.g. ``isr``)."""
    return replace(st, leader=leader, leader_epoch=st.leader_epoch + 1,
                   partition_epoch=st.partition_epoch + 1, **changes)


# --------------------------------------------------------------------------- brokers fenced, unfenced
def fence(st: PartitionState, broker_id: int, live: Collection[int]) -> PartitionState | None:
    """``st`` once ``broker_id`` is fenced (None: unchanged): it loses the leadership to another
    live ISR member, or the partition goes offline keeping its ISR (Kafka keeps the last member
    too); a follower leaves the ISR unless it is the last member."""
    if broker_id not in st.replicas:
        return None
    if st.leader == broker_id:
        candidates = [r for r in st.isr if r != broker_id and r in live]
        if candidates:
            return with_leader(st, candidates[0], isr=tuple(r for r in st.isr if r != broker_id))
        return with_leader(st, -1)
    if broker_id in st.isr and len(st.isr) > 1:
        return replace(st, isr=tuple(r for r in st.isr if r != broker_id), partition_epoch=st.partition_epoch + 1)
    return None


def unfence(st: PartitionState, broker_id: int) -> PartitionState | None:
    """``st`` once ``broker_id`` is back (None: unchanged): a replica of it whose directory had
    failed is no longer offline (the broker checked its directories again), and an offline
    partition whose ISR holds it elects it leader."""
    if broker_id in st.offline_replicas:
        st = replace(st, offline_replicas=tuple(r for r in st.offline_replicas if r != broker_id),
                     partition_epoch=st.partition_epoch + 1)
        return unfence(st, broker_id) or st
    if st.leader == -1 and broker_id in st.isr:
        return with_leader(st, broker_id)
    return None


def offline_replica(st: PartitionState, broker_id: int, live: Collection[int]) -> PartitionState | None:
    """``st`` once ``broker_id``'s replica is offline, its log directory failed (Kafka's
    ``ReplicationControlManager.handleDirectoriesOffline``): fenced as its broker would be
    (``fence``), and listed in ``offline_replicas``."""
    if broker_id not in st.replicas or broker_id in st.offline_replicas:
        return None
    fenced = fence(st, broker_id, live) or st
    return replace(fenced, offline_replicas=(*fenced.offline_replicas, broker_id),
                   partition_epoch=max(fenced.partition_epoch, st.partition_epoch + 1))


# --------------------------------------------------------------------------- ElectLeaders
def elect(st: PartitionState, election_type: int, live: Collection[int]) -> PartitionState | int:
    """The partition after an ElectLeaders election, or the error code when nothing changes
    (``MetadataStore.elect_leaders`` lists them)."""
    clean = [r for r in st.replicas if r in st.isr and r in live]
    if election_type == ELECTION_PREFERRED:
        preferred = st.replicas[0]
        if st.leader == preferred:
            return Errors.ELECTION_NOT_NEEDED
        if preferred not in clean:
            return Errors.PREFERRED_LEADER_NOT_AVAILABLE
        return with_leader(st, preferred)
    if st.leader >= 0:
        return Errors.ELECTION_NOT_NEEDED
    if clean:
        return with_leader(st, clean[0])
    unclean = [r for r in st.replicas if r in live and r not in st.offline_replicas]
    if not unclean:
        return Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
    return with_leader(st, unclean[0], isr=(unclean[0],))


# --------------------------------------------------------------------------- reassignment (KIP-455)
def start_reassignment(st: PartitionState, target: tuple[int, ...] | None, registered: Collection[int],
                       live: Collection[int], allow_rf_change: bool
                       ) -> tuple[int, str | None, PartitionState | None, set[int]]:
    """(error, message, the partition with the reassignment to ``target`` applied or None on
    error, brokers whose replica it drops); ``target`` None cancels the ongoing one."""
    original = st.original_replicas
    error = None
    if target is None:
        if not st.adding_replicas and not st.removing_replicas:
            error = Errors.NO_REASSIGNMENT_IN_PROGRESS, f"Partition {st.topic}-{st.partition} is not being reassigned."
        target = original
    elif not target:
        error = Errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
    elif len(set(target)) != len(target):
        error = (Errors.INVALID_REPLICA_ASSIGNMENT,
                 f"The manual partition assignment includes duplicate replicas {list(target)}.")
    elif any(r not in registered for r in target):
        error = (Errors.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes broker(s) "
                 f"{[r for r in target if r not in registered]} that are not registered.")
    elif not allow_rf_change and len(target) != len(original):
        error = (Errors.INVALID_REPLICATION_FACTOR,
                 f"The replication factor is changed from {len(original)} to {len(target)}")
    if error is not None:
        return error[0], error[1], None, set()
    replicas = tuple(target) + tuple(r for r in original if r not in target)
    adding = tuple(r for r in target if r not in original)
    removing = tuple(r for r in original if r not in target)
    gone = {r for r in st.replicas if r not in replicas}   # adding replicas of a replaced reassignment
    isr = tuple(r for r in st.isr if r in replicas)
    new = replace(st, replicas=replicas, isr=isr or st.isr, adding_replicas=adding,
                  removing_replicas=removing, partition_epoch=st.partition_epoch + 1)
    if new.leader not in replicas:
        new = _hand_over(new, isr, live)
    return Errors.NONE, None, new, gone


def complete_reassignment(st: PartitionState, live: Collection[int]) -> tuple[PartitionState, set[int]] | None:
    """The partition with its reassignment completed (and the brokers leaving it) if every
    target replica is in the ISR, else None."""
    if not st.adding_replicas and not st.removing_replicas:
        return None
    target = st.target_replicas
    if any(r not in st.isr for r in target):
        return None
    isr = tuple(r for r in st.isr if r in target)
    new = replace(st, replicas=target, isr=isr, adding_replicas=(), removing_replicas=(),
                  partition_epoch=st.partition_epoch + 1)
    if new.leader not in target:
        new = _hand_over(new, isr, live)
    return new, set(st.removing_replicas)


def _hand_over(st: PartitionState, isr: tuple[int, ...], live: Collection[int]) -> PartitionState:
    """A new leader from the live members of ``isr`` (-1 if none), with a leader-epoch bump
    (the caller bumped the partition epoch)."""
    candidates = [r for r in isr if r in live]
    return replace(st, leader=candidates[0] if candidates else -1, leader_epoch=st.leader_epoch + 1,
                   isr=isr or st.isr)
