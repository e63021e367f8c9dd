"""The structure of ``kafka-emu``'s parser: global options in either position, help that states
every default, range-checked numeric options (issue 11, part 4)."""
from __future__ import annotations

import argparse
import re

import pytest
from hypothesis import given, strategies as st

from cli_support import EVERY_COMMAND
from kafka_emu.cli import build_parser, port, positive_float, positive_int
from kafka_emu.metrics.progress import progress_enabled

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("argv", [
    ["--log-level", "info", "--no-progress", "serve", "--brokers", "1"],
    ["serve", "--brokers", "1", "--log-level", "info", "--no-progress"],
    ["--log-level", "info", "serve", "--no-progress", "--brokers", "1"],
], ids=["before", "after", "mixed"])
def test_global_options_before_or_after_the_command(argv: list[str]) -> None:
    """The reported bug: ``kafka-emu --log-level info serve --brokers 1`` was refused with
    ``unrecognized arguments: --brokers 1`` because the CLI guessed the command from argv."""
    args = build_parser().parse_args(argv)
    assert (args.command, args.brokers, args.log_level, args.no_progress) == ("serve", 1, "info", True)


def test_global_defaults_apply_when_not_given_and_do_not_overwrite() -> None:
    args = build_parser().parse_args(["stress", "purgatory"])
    assert (args.log_level, args.log_format, args.log_logger_level, args.no_progress) == (None, None, [], False)
    # given before the group and the command: the subparsers' copies must not reset it
    args = build_parser().parse_args(["--log-format", "json", "stress", "purgatory", "--count", "3"])
    assert (args.log_format, args.count, args.subcommand) == ("json", 3, "purgatory")


def test_a_repeatable_global_option_keeps_the_values_from_both_sides() -> None:
    args = build_parser().parse_args(["--log-logger-level", "timer=debug", "bench", "--log-logger-level",
                                      "broker=info", "timer", "--log-logger-level", "coordinator=error"])
    assert args.log_logger_level == ["timer=debug", "broker=info", "coordinator=error"]


def _option_entries(help_text: str) -> list[str]:
    """The option entries of a ``--help`` text (an option line and its continuation lines)."""
    entries: list[str] = []
    for line in help_text.splitlines():
        if re.match(r"^  -", line):
            entries.append(line)
        elif entries and entries[-1] and re.match(r"^\s{6,}\S", line):
            entries[-1] += " " + line.strip()
        elif not line.strip() or not line.startswith(" "):
            entries.append("")   # a blank line or section heading ends the entry
    return [e for e in entries if e and not e.strip().startswith("-h, --help")]


@pytest.mark.parametrize("command", EVERY_COMMAND, ids=" ".join)
def test_help_of_every_command_states_every_default(command: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*command, "--help"])
    assert exit_info.value.code == 0
    entries = _option_entries(capsys.readouterr().out)
    assert any("--log-level" in e for e in entries) and any("--no-progress" in e for e in entries)
    for entry in entries:
        assert re.search(r"default", entry), f"no default in: {entry}"
        assert "(default: None)" not in entry and "(default: [])" not in entry, entry


@pytest.mark.parametrize("parse, good, bad", [
    (positive_int, ["1", "65536"], ["0", "-2", "1.5", "x", ""]),
    (positive_float, ["0.001", "5"], ["0", "-1", "nan", "inf", "x"]),
    (port, ["0", "9092", "65535"], ["-1", "65536", "99999", "x"]),
])
def test_range_checked_types(parse, good: list[str], bad: list[str]) -> None:
    for text in good:
        assert parse(text) == float(text)
    for text in bad:
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(repr(text))):
            parse(text)


@given(st.integers())
def test_port_accepts_exactly_0_to_65535(value: int) -> None:
    try:
        assert port(str(value)) == value and 0 <= value <= 65535
    except argparse.ArgumentTypeError:
        assert not 0 <= value <= 65535


def test_progress_enabled_only_on_a_terminal_without_no_progress(monkeypatch) -> None:
    class Terminal:
        @staticmethod
        def isatty() -> bool:
            return True

    args = build_parser().parse_args(["stress", "purgatory"])
    assert not progress_enabled(args)          # pytest captures stderr: not a terminal
    monkeypatch.setattr("sys.stderr", Terminal())
    assert progress_enabled(args)
    assert not progress_enabled(build_parser().parse_args(["stress", "purgatory", "--no-progress"]))
