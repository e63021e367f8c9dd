"""The ``kafka-emu`` command line: one argparse parser, one subparser per command.

    kafka-emu [global options] COMMAND [SUBCOMMAND] [options]   # global options may also follow

Each command module provides ``configure(parser)``, which declares its options next to the code
that reads them, and ``run(args) -> int``. The parser tree is complete from the start (every
command's name and help), but a command's options are added by ``CommandParser`` only when
argparse selects that command, so ``kafka-emu bench timer`` imports neither Spark nor the
broker, and ``kafka-emu --help`` imports no command at all. argparse alone decides which
command the arguments name.

Global options (logging, ``--no-progress``) come from a parent parser added to the top level and
to every command; on the commands their defaults are ``SUPPRESS``, so a value given before the
subcommand is not overwritten by the subcommand's default, and a repeatable one given on both
sides keeps every value (``_Commands``).

Exit codes: 0 success, 1 a failed verdict (stress and bench checks), 2 a user error, always one
line on stderr: a bad or out-of-range option, an unknown command, a missing config file, a port
in use, a missing extra (``pip install 'kafka-emu[load]'``). Only a bug prints a traceback.
Commands may define more codes (``load``: 3 no Java, 4 cluster unreachable).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NoReturn

PROG = "kafka-emu"


# ---------------------------------------------------------------- range-checked option types
def _checked(kind: Callable[[str], float], rule: str, ok: Callable[[float], bool]) -> Callable[[str], Any]:
    """An argparse ``type`` converting with ``kind`` and refusing values outside ``rule``."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {rule}, got {text!r}") from None
        if not (math.isfinite(value) and ok(value)):
            raise argparse.ArgumentTypeError(f"expected {rule}, got {text!r}")
        return value

    return parse


positive_int = _checked(int, "an integer >= 1", lambda v: v >= 1)
non_negative_int = _checked(int, "an integer >= 0", lambda v: v >= 0)
positive_float = _checked(float, "a number > 0", lambda v: v > 0)
non_negative_float = _checked(float, "a number >= 0", lambda v: v >= 0)
fraction = _checked(float, "a number from 0 to 1", lambda v: 0 <= v <= 1)
port = _checked(int, "a port number from 0 to 65535", lambda v: 0 <= v <= 65535)


def int_list(item: Callable[[str], int]) -> Callable[[str], list[int]]:
    """A comma-separated list (``1,16``), each element checked by ``item``."""

    def parse(text: str) -> list[int]:
        return [item(part.strip()) for part in text.split(",")]

    return parse


# ---------------------------------------------------------------- commands
@dataclass(frozen=True)
class Command:
    """A leaf command: the module providing ``configure``/``run`` and, for ``--help``, one line."""

    module: str
    help: str


COMMANDS: dict[str, Command | dict[str, Command]] = {
    "serve": Command("kafka_emu.broker.cluster.serve", "run an in-process Kafka cluster until SIGINT/SIGTERM"),
    "load": Command("kafka_emu.loadgen.load", "Spark-driven synthetic load and report (needs [load])"),
    "bench": {
        "timer": Command("kafka_emu.bench.bench_timer",
                         "timing wheel vs a naive heapq timer: add/cancel rate and firing lateness"),
        "purgatory": Command("kafka_emu.bench.bench_purgatory",
                             "port of Kafka's TestPurgatoryPerformance (needs [load] for numpy)"),
        "replication": Command("kafka_emu.bench.bench_replication",
                               "in-process 3-broker acks=all vs acks=1 produce throughput and latency"),
        "rebalance": Command("kafka_emu.bench.bench_rebalance",
                             "join/sync of N members and heartbeat throughput"),
        "wire": Command("kafka_emu.bench.bench_wire",
                        "request rate and client throughput over loopback (needs [load] for confluent-kafka)"),
        "log": Command("kafka_emu.bench.bench_log",
                       "segment log vs the old list log: append/read rates, RSS under retention"),
        "transactions": Command("kafka_emu.bench.bench_transactions",
                                "transactions/s and commit latency vs the same records produced idempotently"),
        "share": Command("kafka_emu.bench.bench_share",
                         "share-group fetch throughput vs a classic group, and lock-expiry redelivery on the "
                         "manual clock (needs [load] for confluent-kafka)"),
        "registry": Command("kafka_emu.bench.bench_registry",
                            "schema registry lookups by id and registrations vs a dict-backed HTTP server "
                            "(needs [registry])"),
    },
    "stress": {
        "purgatory": Command("kafka_emu.loadgen.stress_purgatory",
                             "many threads against shared keys, exactly-once completion"),
        "rebalance": Command("kafka_emu.loadgen.stress_rebalance",
                             "member storms with crashes and rejoins (needs [load])"),
        "replication": Command("kafka_emu.loadgen.stress_replication",
                               "acks=all under broker stops and restarts (needs [load])"),
        "overload": Command("kafka_emu.loadgen.stress_overload",
                            "RSS against retained bytes flat out, and a flood of large requests (needs [load])"),
    },
}

# Import name -> the extra that installs it (pyproject.toml [project.optional-dependencies]).
EXTRA_OF_MODULE = {name: "load" for name in (
    "pyspark", "py4j", "pyarrow", "pandas", "numpy", "matplotlib", "yaml", "confluent_kafka", "kafka")}
EXTRA_OF_MODULE.update({name: "registry" for name in ("avro", "jsonschema", "proto_schema_parser", "google")})


class UsageError(Exception):
    """A user error found outside argparse; ``main`` prints ``kafka-emu: <message>``, exit 2."""


@contextlib.contextmanager
def _extras_named() -> Iterator[None]:
    """Turns an import that an extra would satisfy into a one-line ``UsageError`` (other
    missing modules are bugs and keep their traceback)."""
    try:
        yield
    except ModuleNotFoundError as exc:
        top = (exc.name or "").partition(".")[0]
        extra = EXTRA_OF_MODULE.get(top)
        if extra is None:
            raise
        raise UsageError(f"this command needs the {top} module, which is not installed: "
                         f"pip install 'kafka-emu[{extra}]'") from None


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends ``(default: X)`` to every option's help unless the help already states its default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line, and which, for a command, imports the
    command module and adds its options the first time it parses (argparse calls
    ``parse_known_args`` on the subparser it selected; ``--help`` is parsed there too)."""

    def __init__(self, *args: Any, command: Command | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.command = command
        self._configured = command is None

    def configure_command(self) -> None:
        if not self._configured:
            self._configured = True
            importlib.import_module(self.command.module).configure(self)
            self.set_defaults(_command=self.command)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.configure_command()
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Commands(argparse._SubParsersAction):
    """The subparsers action, merging a repeatable global option given on both sides of the
    command: argparse parses the command's arguments into a namespace of their own and copies
    it over, which would drop the values given before the command."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        before = {k: v for k, v in vars(namespace).items() if isinstance(v, list)}
        super().__call__(parser, namespace, values, option_string)
        for key, earlier in before.items():
            later = getattr(namespace, key)
            if later is not earlier:
                setattr(namespace, key, earlier + later)


def _global_options(inherited: bool) -> argparse.ArgumentParser:
    """The options every command accepts; ``inherited``: the copy on a subcommand, whose
    defaults are SUPPRESS so it keeps what was given before the subcommand."""
    from kafka_emu.logsetup import add_logging_arguments

    parent = argparse.ArgumentParser(add_help=False)
    add_logging_arguments(parent)
    parent.add_argument("--no-progress", action="store_true",
                        help="no live progress bars (by default long commands show one when stderr is a terminal)")
    if inherited:
        for action in parent._actions:
            action.default = argparse.SUPPRESS
    return parent


def build_parser() -> CommandParser:
    parser = CommandParser(prog=PROG, description="A Kafka broker-coordinator emulator in Python",
                           parents=[_global_options(inherited=False)])
    inherited = _global_options(inherited=True)

    def add_commands(parent: CommandParser, table: dict[str, Command | dict[str, Command]], dest: str) -> None:
        sub = parent.add_subparsers(dest=dest, required=True, metavar="COMMAND", parser_class=CommandParser,
                                    action=_Commands)
        for name, entry in table.items():
            if isinstance(entry, Command):
                sub.add_parser(name, help=entry.help, description=entry.help, parents=[inherited],
                               command=entry)
            else:
                group = sub.add_parser(name, help=f"{name} commands: {', '.join(entry)}",
                                       parents=[inherited])
                add_commands(group, entry, "subcommand")

    add_commands(parser, COMMANDS, "command")
    return parser


def _user_errors() -> tuple[type[Exception], ...]:
    """``UsageError``, and the broker's ``ConfigException`` once its module is loaded (a command
    that never loaded it cannot have raised it, and importing it loads the coordinator too)."""
    config = sys.modules.get("kafka_emu.broker.server.config")
    return (UsageError,) if config is None else (UsageError, config.ConfigException)


def main(argv: list[str] | None = None) -> int:
    from kafka_emu.logsetup import configure_from

    try:
        with _extras_named():   # a command module is imported while parsing, and may import more in run()
            args = build_parser().parse_args(argv)
            try:
                configure_from(args, default_format="json" if args.command == "serve" else "console",
                               capture_stdlib=args.command == "serve")
            except ValueError as exc:  # e.g. a bad --log-logger-level or $KAFKA_EMU_LOG_FORMAT
                raise UsageError(str(exc)) from None
            return int(importlib.import_module(args._command.module).run(args) or 0)
    except Exception as exc:
        if not isinstance(exc, _user_errors()):
            raise
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
