"""Turning a workload spec into the task table the Spark executors run.

Every unit of concurrent client work (one producer instance, one standalone consumer, one group
member's lifetime, the admin schedule) becomes one row. Churn is resolved here, on the driver,
from the seed: which member leaves or crashes at which time is part of the plan, so a run can be
repeated and a member that will crash is known in advance (it must run in its own process to be
killed without a LeaveGroup).

Rows are dealt to ``slots`` (Spark partitions) by weight, heaviest first onto the lightest slot,
so both cores of a small machine get a similar share of the producing.
"""
from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass
from typing import Any

from kafka_emu.loadgen.spec import GroupSpec, WorkloadSpec

CONTROL_TOPIC = "_loadgen-done"
TASK_SCHEMA = "task_id string, kind string, slot int, start_s double, stop_s double, params string"


@dataclass(frozen=True)
class Task:
    task_id: str
    kind: str           # producer | consumer | member | share_member | admin
    start_s: float
    stop_s: float       # when the task is told to stop; members and consumers may end earlier (drained)
    params: dict[str, Any]
    weight: float = 1.0
    slot: int = 0

    def row(self) -> tuple[str, str, int, float, float, str]:
        return (self.task_id, self.kind, self.slot, self.start_s, self.stop_s, json.dumps(self.params))


@dataclass(frozen=True)
class MemberPlan:
    member: str
    start_s: float
    end_s: float | None     # None: stays until the group has consumed everything
    end: str                # "drain", "leave" or "crash"


def plan_members(group: GroupSpec, rng: random.Random) -> list[MemberPlan]:
    """Resolve a group's churn into member lifetimes (victims chosen with the seeded rng)."""
    members = [MemberPlan(f"{group.group_id}-m{i}", 0.0, None, "drain") for i in range(group.members)]
    for ev in group.churn:
        if ev.action == "join":
            base = len(members)
            members += [MemberPlan(f"{group.group_id}-m{base + i}", ev.at_s, None, "drain")
                        for i in range(ev.count)]
            continue
        live = [i for i, m in enumerate(members) if m.end_s is None and m.start_s <= ev.at_s]
        for i in rng.sample(live, min(ev.count, len(live))):
            members[i] = dataclasses.replace(members[i], end_s=ev.at_s, end=ev.action)
    return members


def build_tasks(spec: WorkloadSpec, slots: int, control_topic: str = CONTROL_TOPIC) -> list[Task]:
    """``control_topic`` is where each producer, once flushed, writes one "done" record: readers
    only start checking whether they have drained when every producer has written its own."""
    rng = random.Random(spec.seed)
    producer_count = sum(p.instances for p in spec.producers)
    done = {"control_topic": control_topic, "producers_expected": producer_count}
    horizon = spec.duration_s + spec.drain_s
    tasks: list[Task] = []
    for p in spec.producers:
        stop = p.stop_s if p.stop_s is not None else spec.duration_s
        pd = dataclasses.asdict(p)
        if p.serializer == "avro":
            pd["schema_registry_url"] = spec.schema_registry_url
        for i in range(p.instances):
            tasks.append(Task(f"producer:{p.name}:{i}", "producer", p.start_s, stop,
                              {**pd, "instance": i, "seed": rng.getrandbits(32), **done},
                              weight=1.0 + p.rate / 100.0 * max(1.0, p.size.mean / 1024)))
    for c in spec.consumers:
        tasks.append(Task(f"consumer:{c.name}", "consumer", c.start_s, horizon,
                          {**dataclasses.asdict(c), "produce_end_s": spec.duration_s, **done}, weight=2.0))
    for g in spec.groups:
        gd = dataclasses.asdict(g)
        for m in plan_members(g, rng):
            tasks.append(Task(f"member:{m.member}", "member", m.start_s,
                              m.end_s if m.end_s is not None else horizon,
                              {"group": gd, "member": m.member, "end": m.end, "produce_end_s": spec.duration_s, **done},
                              weight=1.5))
    for sg in spec.share_groups:
        sd = dataclasses.asdict(sg)
        for i in range(sg.members):
            member = f"{sg.group_id}-s{i}"
            tasks.append(Task(f"share:{member}", "share_member", 0.0, horizon,
                              {"share_group": sd, "member": member, "produce_end_s": spec.duration_s,
                               "seed": rng.getrandbits(32), **done}, weight=1.5))
    if spec.admin:
        actions = sorted((dataclasses.asdict(a) for a in spec.admin), key=lambda a: a["at_s"])
        tasks.append(Task("admin", "admin", actions[0]["at_s"], spec.duration_s, {"actions": actions}, weight=0.1))
    return assign_slots(tasks, slots)


def assign_slots(tasks: list[Task], slots: int) -> list[Task]:
    """Greedy balance by weight; the result is sorted by slot (Spark slices a list contiguously)."""
    load = [0.0] * max(1, slots)
    out: list[Task] = []
    for t in sorted(tasks, key=lambda t: (-t.weight, t.task_id)):
        slot = min(range(len(load)), key=lambda s: (load[s], s))
        load[slot] += t.weight
        out.append(dataclasses.replace(t, slot=slot))
    return sorted(out, key=lambda t: (t.slot, t.task_id))
