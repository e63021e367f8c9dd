"""The workload spec: what load to drive, as plain data that is validated before anything starts.

A spec is a YAML document (or the equivalent built from command-line options, see
``loadgen.spec_cli``). Validation happens up front and reports every problem with its field
path (``producers[1].rate: must be > 0``) so a mistyped spec fails in milliseconds instead of
after a Spark session and a cluster have started.

Times (``at_s``, ``start_s``, ``stop_s``) are seconds from the common start of the load, which
the executors agree on once every task is running.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kafka_emu.loadgen.errors import SpecError

CLIENTS = ("confluent", "kafka-python")
GROUP_PROTOCOLS = ("classic", "consumer")   # a group's rebalance protocol (consumer: KIP-848)
# librdkafka refuses these with group.protocol=consumer: the broker holds them (group configs)
_CLASSIC_ONLY_SETTINGS = ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy",
                          "group.protocol.type")
SIZE_DISTS = ("fixed", "uniform", "normal", "lognormal")
KEY_MODES = ("none", "random", "sequential")
ACKS = {"0": 0, "1": 1, "all": -1, "-1": -1}
CHURN_ACTIONS = ("join", "leave", "crash")
BATCHING = ("latency", "throughput")
# How a producer makes its record values: "bytes", random bytes of the drawn size; "avro", an Avro
# record around those bytes through confluent-kafka's AvroSerializer and a schema registry
# (``producer_task.AVRO_SCHEMA``; subject ``<topic>-value``, registered on first use).
SERIALIZERS = ("bytes", "avro")
ADMIN_ACTIONS = ("create_topic", "delete_topic", "list_topics", "describe_groups", "describe_cluster",
                 "list_groups")


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int = 3
    replication_factor: int = 3


@dataclass(frozen=True)
class SizeSpec:
    """Message value size in bytes, drawn per message and clamped to [min, max]."""

    dist: str = "fixed"
    mean: float = 256.0
    sigma: float = 0.5      # normal: standard deviation in bytes; lognormal: sigma of log(size)
    min: int = 1
    max: int = 65536


@dataclass(frozen=True)
class KeySpec:
    mode: str = "random"
    cardinality: int = 1000


@dataclass(frozen=True)
class ProducerSpec:
    name: str
    topics: tuple[str, ...]
    rate: float = 100.0         # messages per second per instance
    instances: int = 1
    size: SizeSpec = SizeSpec()
    keys: KeySpec = KeySpec()
    acks: int = -1
    client: str = "confluent"
    start_s: float = 0.0
    stop_s: float | None = None  # None: the spec's duration
    batching: str = "latency"   # "throughput": the clients' batching settings (``producer_task.BATCHING``)
    config: dict[str, Any] = field(default_factory=dict)
    # > 0: a transactional producer committing a transaction every this many records (confluent, acks=all)
    transaction_records: int = 0
    serializer: str = "bytes"   # SERIALIZERS; avro needs client confluent and a schema registry


@dataclass(frozen=True)
class ConsumerSpec:
    """A standalone consumer: assigns every partition of its topics and reads them to the end."""

    name: str
    topics: tuple[str, ...]
    client: str = "confluent"
    start_s: float = 0.0
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChurnEvent:
    at_s: float
    action: str
    count: int = 1


@dataclass(frozen=True)
class GroupSpec:
    group_id: str
    topics: tuple[str, ...]
    members: int = 2
    client: str = "confluent"
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000
    churn: tuple[ChurnEvent, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)
    # "consumer": members use the consumer group protocol (KIP-848, confluent-kafka's
    # group.protocol=consumer); the session timeout and heartbeat interval then become the
    # group's configs on the broker (consumer.session.timeout.ms, consumer.heartbeat.interval.ms)
    group_protocol: str = "classic"


@dataclass(frozen=True)
class ShareGroupSpec:
    """A share group (KIP-932): ``members`` confluent-kafka ShareConsumers in explicit
    acknowledgement mode; each delivered record is RELEASEd with probability
    ``release_fraction`` (redelivered to someone), REJECTed with ``reject_fraction`` (archived,
    never delivered again) and ACCEPTed otherwise. Before the run the group's broker configs are
    set: ``share.auto.offset.reset=earliest`` (every record produced in the run is delivered) and
    ``share.delivery.count.limit`` (records released that many times are archived)."""

    group_id: str
    topics: tuple[str, ...]
    members: int = 3
    release_fraction: float = 0.0
    reject_fraction: float = 0.0
    delivery_count_limit: int = 5
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AdminAction:
    at_s: float
    action: str
    topic: str | None = None
    group: str | None = None
    partitions: int = 1
    replication_factor: int = 1


@dataclass(frozen=True)
class RampLimits:
    """A step crosses the limit when any of these is exceeded (None: not checked)."""

    p99_ms: float | None = 100.0           # produce delivery p99 over the step
    error_rate: float | None = 0.01        # failed / attempted produces
    lag_growth_s: float | None = 5.0       # a group's lag grew in this many consecutive seconds


@dataclass(frozen=True)
class RampSpec:
    """A saturation ramp: steps of offered produce rate (all producers together), each ``step_s``
    long, from ``start_rate`` by ``step_rate`` up to ``max_rate`` or the first step over a limit.
    Producers' ``rate`` fields become their shares of the step's rate."""

    start_rate: float
    step_rate: float
    max_rate: float
    step_s: float = 10.0
    consumers_step: int = 0                # members added to every group at each step
    limits: RampLimits = RampLimits()


@dataclass(frozen=True)
class WorkloadSpec:
    duration_s: float = 30.0
    drain_s: float = 20.0       # most time consumers get to catch up after producers stop
    seed: int = 1
    topics: tuple[TopicSpec, ...] = ()
    producers: tuple[ProducerSpec, ...] = ()
    consumers: tuple[ConsumerSpec, ...] = ()
    groups: tuple[GroupSpec, ...] = ()
    share_groups: tuple[ShareGroupSpec, ...] = ()
    admin: tuple[AdminAction, ...] = ()
    ramp: RampSpec | None = None
    # The registry of serializer: avro producers. None: the embedded cluster's own (started for
    # such a spec); an external cluster (--bootstrap-servers) needs it named.
    schema_registry_url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def avro_producers(self) -> tuple[str, ...]:
        """Names of the producers that serialize through a schema registry."""
        return tuple(p.name for p in self.producers if p.serializer == "avro")


class _Checker:
    """Collects every problem with its field path, so one run reports them all."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def fail(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    def mapping(self, value: Any, path: str, allowed: set[str]) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(path, f"must be a mapping, got {type(value).__name__}")
            return {}
        for key in value:
            if key not in allowed:
                self.fail(f"{path}.{key}" if path else str(key),
                          f"unknown field (expected one of: {', '.join(sorted(allowed))})")
        return value

    def seq(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, f"must be a list, got {type(value).__name__}")
            return []
        return value

    def number(self, d: dict[str, Any], key: str, path: str, default: float | None, *,
               minimum: float | None = None, exclusive: bool = False, integer: bool = False,
               optional: bool = False) -> Any:
        value = d.get(key, default)
        where = f"{path}.{key}" if path else key
        if value is None:
            if not optional:
                self.fail(where, "is required")
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            self.fail(where, f"must be a number, got {value!r}")
            return default
        if integer and int(value) != value:
            self.fail(where, f"must be an integer, got {value!r}")
            return default
        if minimum is not None and (value <= minimum if exclusive else value < minimum):
            self.fail(where, f"must be {'>' if exclusive else '>='} {minimum:g}, got {value!r}")
        return int(value) if integer else float(value)

    def choice(self, d: dict[str, Any], key: str, path: str, default: str, options: tuple[str, ...]) -> str:
        value = d.get(key, default)
        value = str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else value
        if value not in options:
            self.fail(f"{path}.{key}", f"must be one of {', '.join(options)}, got {value!r}")
            return default
        return value

    def name(self, d: dict[str, Any], key: str, path: str) -> str:
        value = d.get(key)
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{path}.{key}", "is required (a non-empty string)")
            return "?"
        return value

    def topics(self, d: dict[str, Any], path: str) -> tuple[str, ...]:
        value = d.get("topics", d.get("topic"))
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value or not all(isinstance(t, str) and t for t in value):
            self.fail(f"{path}.topics", "must name at least one topic")
            return ()
        return tuple(value)

    def config(self, d: dict[str, Any], path: str) -> dict[str, Any]:
        value = d.get("config") or {}
        if not isinstance(value, dict):
            self.fail(f"{path}.config", "must be a mapping of client properties")
            return {}
        return dict(value)


def _parse_size(c: _Checker, raw: Any, path: str) -> SizeSpec:
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        raw = {"dist": "fixed", "mean": raw}
    d = c.mapping(raw, path, {"dist", "mean", "sigma", "min", "max"})
    size = SizeSpec(
        dist=c.choice(d, "dist", path, "fixed", SIZE_DISTS),
        mean=c.number(d, "mean", path, 256.0, minimum=0),
        sigma=c.number(d, "sigma", path, 0.5, minimum=0),
        min=c.number(d, "min", path, 1, minimum=0, integer=True),
        max=c.number(d, "max", path, 65536, minimum=1, integer=True),
    )
    if size.min > size.max:
        c.fail(path, f"min ({size.min}) is greater than max ({size.max})")
    if size.max > 1_000_000:
        c.fail(f"{path}.max", "must be <= 1000000 (the broker's default message.max.bytes)")
    return size


def _parse_producer(c: _Checker, raw: Any, path: str, duration: float) -> ProducerSpec:
    d = c.mapping(raw, path, {"name", "topics", "topic", "rate", "instances", "size", "keys", "acks",
                              "client", "start_s", "stop_s", "batching", "config", "transaction_records",
                              "serializer"})
    keys_raw = d.get("keys", {})
    if isinstance(keys_raw, str):
        keys_raw = {"mode": keys_raw}
    kd = c.mapping(keys_raw, f"{path}.keys", {"mode", "cardinality"})
    acks_raw = str(d.get("acks", "all")).lower()
    if acks_raw not in ACKS:
        c.fail(f"{path}.acks", f"must be 0, 1 or all, got {d.get('acks')!r}")
    p = ProducerSpec(
        name=c.name(d, "name", path),
        topics=c.topics(d, path),
        rate=c.number(d, "rate", path, 100.0, minimum=0, exclusive=True),
        instances=c.number(d, "instances", path, 1, minimum=1, integer=True),
        size=_parse_size(c, d.get("size", {}), f"{path}.size"),
        keys=KeySpec(mode=c.choice(kd, "mode", f"{path}.keys", "random", KEY_MODES),
                     cardinality=c.number(kd, "cardinality", f"{path}.keys", 1000, minimum=1, integer=True)),
        acks=ACKS.get(acks_raw, -1),
        client=c.choice(d, "client", path, "confluent", CLIENTS),
        start_s=c.number(d, "start_s", path, 0.0, minimum=0),
        stop_s=c.number(d, "stop_s", path, None, minimum=0, optional=True),
        batching=c.choice(d, "batching", path, "latency", BATCHING),
        config=c.config(d, path),
        transaction_records=c.number(d, "transaction_records", path, 0, minimum=0, integer=True),
        serializer=c.choice(d, "serializer", path, "bytes", SERIALIZERS),
    )
    if p.transaction_records and (p.client != "confluent" or p.acks != -1):
        c.fail(f"{path}.transaction_records", "a transactional producer needs client: confluent and acks: all")
    if p.serializer == "avro" and p.client != "confluent":
        c.fail(f"{path}.serializer", "avro needs client: confluent (confluent-kafka's AvroSerializer)")
    stop = p.stop_s if p.stop_s is not None else duration
    if stop <= p.start_s:
        c.fail(path, f"stops ({stop:g} s) before it starts ({p.start_s:g} s)")
    if stop > duration:
        c.fail(f"{path}.stop_s", f"is after the end of the load (duration_s={duration:g})")
    if p.rate * p.instances > 200_000:
        c.fail(f"{path}.rate", "rate x instances above 200000 messages/s is beyond what one load run can pace")
    return p


def _parse_group(c: _Checker, raw: Any, path: str, duration: float) -> GroupSpec:
    d = c.mapping(raw, path, {"group_id", "topics", "topic", "members", "client", "session_timeout_ms",
                              "heartbeat_interval_ms", "churn", "config", "group_protocol"})
    churn: list[ChurnEvent] = []
    for i, ev in enumerate(c.seq(d.get("churn"), f"{path}.churn")):
        ep = f"{path}.churn[{i}]"
        ed = c.mapping(ev, ep, {"at_s", "action", "count"})
        event = ChurnEvent(at_s=c.number(ed, "at_s", ep, None, minimum=0),
                           action=c.choice(ed, "action", ep, "join", CHURN_ACTIONS),
                           count=c.number(ed, "count", ep, 1, minimum=1, integer=True))
        if event.at_s is not None and event.at_s >= duration:
            c.fail(f"{ep}.at_s", f"must be before the end of the load (duration_s={duration:g})")
        churn.append(event)
    g = GroupSpec(
        group_id=c.name(d, "group_id", path),
        topics=c.topics(d, path),
        members=c.number(d, "members", path, 2, minimum=1, integer=True),
        client=c.choice(d, "client", path, "confluent", CLIENTS),
        session_timeout_ms=c.number(d, "session_timeout_ms", path, 6000, minimum=1000, integer=True),
        heartbeat_interval_ms=c.number(d, "heartbeat_interval_ms", path, 1000, minimum=100, integer=True),
        churn=tuple(sorted(churn, key=lambda e: e.at_s or 0.0)),
        config=c.config(d, path),
        group_protocol=c.choice(d, "group_protocol", path, "classic", GROUP_PROTOCOLS),
    )
    if g.group_protocol == "consumer":
        if g.client != "confluent":
            c.fail(f"{path}.group_protocol", "consumer needs client confluent (kafka-python has only the classic "
                                             "protocol)")
        refused = [k for k in _CLASSIC_ONLY_SETTINGS if k in g.config]
        if refused:
            c.fail(f"{path}.config", f"{', '.join(refused)} cannot be set with group_protocol consumer (the broker "
                                     "holds them: use session_timeout_ms and heartbeat_interval_ms)")
    if g.heartbeat_interval_ms >= g.session_timeout_ms:
        c.fail(f"{path}.heartbeat_interval_ms", "must be lower than session_timeout_ms")
    live = g.members
    for i, ev in enumerate(g.churn):
        live += ev.count if ev.action == "join" else -ev.count
        if live < 0:
            c.fail(f"{path}.churn[{i}]", f"{ev.action} of {ev.count} member(s) but fewer are live then")
            break
    else:
        if live < 1:
            c.fail(f"{path}.churn", "leaves no live member at the end: nobody would consume what remains")
    return g


def _parse_admin(c: _Checker, raw: Any, path: str, duration: float) -> AdminAction:
    d = c.mapping(raw, path, {"at_s", "action", "topic", "group", "partitions", "replication_factor"})
    a = AdminAction(
        at_s=c.number(d, "at_s", path, None, minimum=0),
        action=c.choice(d, "action", path, "list_topics", ADMIN_ACTIONS),
        topic=d.get("topic"),
        group=d.get("group"),
        partitions=c.number(d, "partitions", path, 1, minimum=1, integer=True),
        replication_factor=c.number(d, "replication_factor", path, 1, minimum=1, integer=True),
    )
    if a.action in ("create_topic", "delete_topic") and not (isinstance(a.topic, str) and a.topic):
        c.fail(f"{path}.topic", f"is required for {a.action}")
    if a.action == "describe_groups" and not (isinstance(a.group, str) and a.group):
        c.fail(f"{path}.group", "is required for describe_groups")
    if a.at_s is not None and a.at_s >= duration:
        c.fail(f"{path}.at_s", f"must be before the end of the load (duration_s={duration:g})")
    return a


def _parse_ramp(c: _Checker, raw: Any) -> RampSpec | None:
    if raw is None:
        return None
    d = c.mapping(raw, "ramp", {"start_rate", "step_rate", "max_rate", "step_s", "consumers_step", "limits"})
    ld = c.mapping(d.get("limits", {}), "ramp.limits", {"p99_ms", "error_rate", "lag_growth_s"})

    def limit(key: str, default: float, minimum: float, exclusive: bool = False) -> float | None:
        if key in ld and ld[key] is None:
            return None   # explicitly switched off
        return c.number(ld, key, "ramp.limits", default, minimum=minimum, exclusive=exclusive)

    limits = RampLimits(p99_ms=limit("p99_ms", 100.0, 0, exclusive=True), error_rate=limit("error_rate", 0.01, 0),
                        lag_growth_s=limit("lag_growth_s", 5.0, 1))
    ramp = RampSpec(start_rate=c.number(d, "start_rate", "ramp", None, minimum=0, exclusive=True),
                    step_rate=c.number(d, "step_rate", "ramp", None, minimum=0, exclusive=True),
                    max_rate=c.number(d, "max_rate", "ramp", None, minimum=0, exclusive=True),
                    step_s=c.number(d, "step_s", "ramp", 10.0, minimum=2),
                    consumers_step=c.number(d, "consumers_step", "ramp", 0, minimum=0, integer=True),
                    limits=limits)
    if ramp.start_rate and ramp.max_rate and ramp.max_rate < ramp.start_rate:
        c.fail("ramp.max_rate", f"is below start_rate ({ramp.start_rate:g})")
    if ramp.max_rate and ramp.max_rate > 200_000:
        c.fail("ramp.max_rate", "above 200000 messages/s is beyond what one load run can pace")
    if ramp.limits == RampLimits(None, None, None):
        c.fail("ramp.limits", "names no limit: the ramp would only stop at max_rate")
    return ramp


def _parse_share_group(c: _Checker, raw: Any, path: str) -> ShareGroupSpec:
    d = c.mapping(raw, path, {"group_id", "topics", "topic", "members", "release_fraction", "reject_fraction",
                              "delivery_count_limit", "config"})
    g = ShareGroupSpec(
        group_id=c.name(d, "group_id", path),
        topics=c.topics(d, path),
        members=c.number(d, "members", path, 3, minimum=1, integer=True),
        release_fraction=c.number(d, "release_fraction", path, 0.0, minimum=0),
        reject_fraction=c.number(d, "reject_fraction", path, 0.0, minimum=0),
        delivery_count_limit=c.number(d, "delivery_count_limit", path, 5, minimum=2, integer=True),
        config=c.config(d, path),
    )
    if g.release_fraction is not None and g.reject_fraction is not None \
            and g.release_fraction + g.reject_fraction >= 1:
        c.fail(path, "release_fraction + reject_fraction must be below 1 (some records must be accepted)")
    if g.delivery_count_limit is not None and g.delivery_count_limit > 10:
        c.fail(f"{path}.delivery_count_limit", "must be at most 10 (group.share.max.delivery.count.limit)")
    return g


def parse_spec(raw: Any) -> WorkloadSpec:
    """Validate a decoded YAML/JSON document; raise SpecError listing every problem."""
    c = _Checker()
    d = c.mapping(raw, "", {"duration_s", "drain_s", "seed", "topics", "producers", "consumers", "groups",
                            "share_groups", "admin", "ramp", "schema_registry_url"})
    if raw is not None and not isinstance(raw, dict):
        raise SpecError("workload spec: the document must be a mapping")
    duration = c.number(d, "duration_s", "", 30.0, minimum=0, exclusive=True)
    drain = c.number(d, "drain_s", "", 20.0, minimum=0)
    seed = c.number(d, "seed", "", 1, integer=True)
    topics: list[TopicSpec] = []
    for i, t in enumerate(c.seq(d.get("topics"), "topics")):
        p = f"topics[{i}]"
        td = c.mapping(t, p, {"name", "partitions", "replication_factor"})
        topics.append(TopicSpec(name=c.name(td, "name", p),
                                partitions=c.number(td, "partitions", p, 3, minimum=1, integer=True),
                                replication_factor=c.number(td, "replication_factor", p, 3, minimum=1,
                                                            integer=True)))
    producers = [_parse_producer(c, p, f"producers[{i}]", duration)
                 for i, p in enumerate(c.seq(d.get("producers"), "producers"))]
    consumers = []
    for i, raw_c in enumerate(c.seq(d.get("consumers"), "consumers")):
        p = f"consumers[{i}]"
        cd = c.mapping(raw_c, p, {"name", "topics", "topic", "client", "start_s", "config"})
        consumers.append(ConsumerSpec(name=c.name(cd, "name", p), topics=c.topics(cd, p),
                                      client=c.choice(cd, "client", p, "confluent", CLIENTS),
                                      start_s=c.number(cd, "start_s", p, 0.0, minimum=0),
                                      config=c.config(cd, p)))
    groups = [_parse_group(c, g, f"groups[{i}]", duration) for i, g in enumerate(c.seq(d.get("groups"), "groups"))]
    share_groups = [_parse_share_group(c, g, f"share_groups[{i}]")
                    for i, g in enumerate(c.seq(d.get("share_groups"), "share_groups"))]
    admin = [_parse_admin(c, a, f"admin[{i}]", duration) for i, a in enumerate(c.seq(d.get("admin"), "admin"))]

    declared = {t.name for t in topics}
    if len(declared) != len(topics):
        c.fail("topics", "names must be unique")
    for kind, items in (("producers", producers), ("consumers", consumers)):
        names = [x.name for x in items]
        if len(set(names)) != len(names):
            c.fail(kind, "names must be unique")
    all_groups = [g.group_id for g in groups] + [g.group_id for g in share_groups]
    if len(set(all_groups)) != len(all_groups):
        c.fail("groups", "group ids must be unique (across groups and share_groups)")
    for kind, items in (("producers", producers), ("consumers", consumers), ("groups", groups),
                        ("share_groups", share_groups)):
        for i, item in enumerate(items):
            for t in item.topics:
                if t not in declared:
                    c.fail(f"{kind}[{i}].topics", f"topic {t!r} is not declared under topics")
    if not producers and not consumers and not groups and not share_groups and not admin:
        c.fail("", "the spec drives no load: add producers, consumers, groups, share_groups or admin actions")
    registry_url = d.get("schema_registry_url")
    if registry_url is not None and not (isinstance(registry_url, str)
                                         and registry_url.startswith(("http://", "https://"))):
        c.fail("schema_registry_url", f"must be an http:// or https:// URL, got {registry_url!r}")
    ramp = _parse_ramp(c, d.get("ramp"))
    if ramp is not None:
        if not producers:
            c.fail("ramp", "needs at least one producer (the ramp steps their rate)")
        if admin or any(g.churn for g in groups) or any(p.start_s or p.stop_s is not None for p in producers):
            c.fail("ramp", "a ramp runs every producer for every whole step: churn, admin actions and producer "
                           "start_s/stop_s are not supported in a ramp workload")
    if c.problems:
        raise SpecError("invalid workload spec: " + "; ".join(p.lstrip(": ") for p in c.problems))
    return WorkloadSpec(duration_s=duration, drain_s=drain, seed=seed, topics=tuple(topics),
                        producers=tuple(producers), consumers=tuple(consumers), groups=tuple(groups),
                        share_groups=tuple(share_groups), admin=tuple(admin), ramp=ramp,
                        schema_registry_url=registry_url)


def load_spec(path: str | Path) -> WorkloadSpec:
    """Read and validate a YAML spec file."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise SpecError(f"cannot read workload spec {path}: {exc.strerror or exc}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise SpecError(f"workload spec {path} is not valid YAML{where}") from None
    return parse_spec(raw)
