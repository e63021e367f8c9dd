"""The ``kafka-emu`` command line.

Subcommands are registered by dotted module name and imported only when used, so
``kafka-emu bench timer`` does not pay for importing Spark. Each command module provides
``configure(parser)`` to add its options and ``run(args) -> int``.
"""
from __future__ import annotations

import argparse
import importlib
import sys

BENCHES: dict[str, tuple[str, str]] = {
    "timer": ("kafka_emu.bench.bench_timer", "timing wheel vs a naive heapq timer: add/cancel rate and firing lateness"),
    "purgatory": ("kafka_emu.bench.bench_purgatory", "port of Kafka's TestPurgatoryPerformance"),
    "replication": ("kafka_emu.bench.bench_replication", "in-process 3-broker acks=all vs acks=1 produce throughput and latency"),
    "rebalance": ("kafka_emu.bench.bench_rebalance", "join/sync of N members and heartbeat throughput"),
    "wire": ("kafka_emu.bench.bench_wire", "request rate and client throughput over loopback"),
}
STRESS: dict[str, tuple[str, str]] = {
    "purgatory": ("kafka_emu.loadgen.stress_purgatory", "many threads against shared keys, exactly-once completion"),
    "rebalance": ("kafka_emu.loadgen.stress_rebalance", "member storms with crashes and rejoins"),
    "replication": ("kafka_emu.loadgen.stress_replication", "acks=all under broker stops and restarts"),
}
TOP: dict[str, tuple[str, str]] = {
    "serve": ("kafka_emu.broker.serve", "run an in-process Kafka cluster until SIGINT/SIGTERM"),
    "load": ("kafka_emu.loadgen.load", "Spark-driven synthetic load and report"),
}


def _add_module_parser(sub: argparse._SubParsersAction, name: str, module: str, help_text: str) -> None:
    parser = sub.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(_module=module)
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            parser.set_defaults(_missing=f"{module} is not available yet")
            return
        raise
    mod.configure(parser)


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-emu", description="A Kafka broker-coordinator emulator in Python")
    from kafka_emu.metrics.logging import add_logging_arguments

    add_logging_arguments(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    # Import only the module the command line names (help for the others stays available).
    wanted = [a for a in argv if not a.startswith("-")]
    groups = {"bench": BENCHES, "stress": STRESS}
    for group, table in groups.items():
        gp = sub.add_parser(group, help=f"{group} subcommands")
        gsub = gp.add_subparsers(dest="subcommand", required=True)
        for name, (module, help_text) in table.items():
            if len(wanted) >= 2 and wanted[0] == group and wanted[1] == name:
                _add_module_parser(gsub, name, module, help_text)
            else:
                gsub.add_parser(name, help=help_text).set_defaults(_module=module, _lazy=True)
    for name, (module, help_text) in TOP.items():
        if wanted and wanted[0] == name:
            _add_module_parser(sub, name, module, help_text)
        else:
            sub.add_parser(name, help=help_text).set_defaults(_module=module, _lazy=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    missing = getattr(args, "_missing", None)
    if missing:
        print(f"kafka-emu: {missing}", file=sys.stderr)
        return 2
    from kafka_emu.metrics.logging import configure_from

    try:
        configure_from(args, default_format="json" if args.command == "serve" else "console",
                       capture_stdlib=args.command == "serve")
    except ValueError as exc:  # e.g. a bad --log-logger-level or $KAFKA_EMU_LOG_FORMAT
        print(f"kafka-emu: {exc}", file=sys.stderr)
        return 2
    module = importlib.import_module(args._module)
    from kafka_emu.broker.config import ConfigException

    try:
        return int(module.run(args) or 0)
    except ConfigException as exc:   # bad configuration: one line, no traceback
        print(f"kafka-emu: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
