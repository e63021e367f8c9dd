"""A workload spec from command-line options, for runs that need no YAML file.

The options describe the common shape (one topic, N producers, one consumer group with churn);
the result goes through the same validation as a YAML spec.
"""
from __future__ import annotations

import argparse
from typing import Any

from kafka_emu.loadgen.errors import SpecError

DEFAULT_DURATION_S = 30.0   # seconds of producing when neither --spec nor --duration says


def add_options(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import non_negative_int, positive_float, positive_int

    g = parser.add_argument_group("workload (when no --spec is given)")
    g.add_argument("--topic", default="load", help="topic to produce to and consume from")
    g.add_argument("--partitions", type=positive_int, default=6, help="partitions of the topic")
    g.add_argument("--replication-factor", type=positive_int, default=3, help="replication factor of the topic")
    g.add_argument("--producers", type=positive_int, default=2, help="producer instances")
    g.add_argument("--rate", type=positive_float, default=300.0, help="messages/s per producer instance")
    g.add_argument("--size", type=positive_int, default=512, help="mean message size in bytes (lognormal)")
    g.add_argument("--acks", default="all", choices=["0", "1", "all"], help="producer acks")
    g.add_argument("--client", default="confluent", choices=["confluent", "kafka-python"],
                   help="Kafka client library of the producers and consumers")
    g.add_argument("--batching", default="latency", choices=["latency", "throughput"],
                   help="producer batching: small prompt batches, or the clients' throughput settings")
    g.add_argument("--group-members", type=non_negative_int, default=3,
                   help="members of the consumer group (0: none)")
    g.add_argument("--churn", default="",
                   help="group churn events, e.g. 'join@10,leave@15,crash@20' (action@seconds[xcount]; "
                        "default: none)")


def parse_churn(text: str) -> list[dict[str, Any]]:
    events = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        try:
            action, rest = item.split("@", 1)
            at, _, count = rest.partition("x")
            events.append({"action": action.strip(), "at_s": float(at), "count": int(count or 1)})
        except ValueError:
            raise SpecError(f"invalid --churn item {item!r}: expected action@seconds or action@secondsxcount") from None
    return events


def add_ramp_options(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import fraction, non_negative_float, non_negative_int, positive_float

    g = parser.add_argument_group("saturation ramp (with or without --spec; overrides the spec's ramp)")
    g.add_argument("--ramp", default=None, metavar="START,STEP,MAX",
                   help="step the offered produce rate (messages/s, all producers together) from START by STEP "
                        "up to MAX or the first step over a limit (default: no ramp)")
    g.add_argument("--ramp-step-s", type=positive_float, default=None, help="seconds per step (default 10)")
    g.add_argument("--ramp-p99-ms", type=non_negative_float, default=None,
                   help="produce p99 limit (default 100; 0: none)")
    g.add_argument("--ramp-max-error-rate", type=fraction, default=None, help="failed/attempted limit (default 0.01)")
    g.add_argument("--ramp-lag-growth-s", type=non_negative_float, default=None,
                   help="limit: a group's lag grows this many seconds in a row (default 5; 0: none)")
    g.add_argument("--ramp-consumers-step", type=non_negative_int, default=None,
                   help="members added to each group per step (default 0)")


def ramp_from_args(args: argparse.Namespace, ramp: dict[str, Any] | None) -> dict[str, Any] | None:
    """The spec's ``ramp`` mapping with the command line's ramp options applied (None: no ramp)."""
    out = dict(ramp or {})
    if args.ramp is not None:
        try:
            start, step, top = (float(x) for x in args.ramp.split(","))
        except ValueError:
            raise SpecError(f"invalid --ramp {args.ramp!r}: expected START,STEP,MAX in messages/s") from None
        out.update(start_rate=start, step_rate=step, max_rate=top)
    if not out:
        return None
    limits = dict(out.get("limits") or {})
    for option, key in (("ramp_p99_ms", "p99_ms"), ("ramp_max_error_rate", "error_rate"),
                        ("ramp_lag_growth_s", "lag_growth_s")):
        value = getattr(args, option)
        if value is not None:
            limits[key] = value or None
    if limits:
        out["limits"] = limits
    for option, key in (("ramp_step_s", "step_s"), ("ramp_consumers_step", "consumers_step")):
        if getattr(args, option) is not None:
            out[key] = getattr(args, option)
    return out


def spec_from_args(args: argparse.Namespace) -> dict[str, Any]:
    topic = args.topic
    spec: dict[str, Any] = {
        "duration_s": args.duration if args.duration is not None else DEFAULT_DURATION_S,
        "topics": [{"name": topic, "partitions": args.partitions, "replication_factor": args.replication_factor}],
        "producers": [],
        "groups": [],
    }
    if args.producers > 0:
        spec["producers"].append({
            "name": "cli", "topics": [topic], "rate": args.rate, "instances": args.producers,
            "size": {"dist": "lognormal", "mean": args.size, "sigma": 0.5, "min": 1, "max": max(args.size * 8, 64)},
            "keys": {"mode": "random", "cardinality": 1000}, "acks": args.acks, "client": args.client,
            "batching": args.batching,
        })
    if args.group_members > 0:
        spec["groups"].append({"group_id": "load-group", "topics": [topic], "members": args.group_members,
                               "client": args.client, "churn": parse_churn(args.churn)})
    return spec
