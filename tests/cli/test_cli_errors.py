"""Every user error of ``kafka-emu`` is one line on stderr naming what is wrong, exit code 2, no
traceback (issue 11, part 4: what users saw were OSError/FileNotFoundError/OverflowError
tracebacks, ``--brokers 0`` starting one broker and ``--duration -1`` printing PASS)."""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import pytest

from cli_support import kafka_emu, taken_port_after_a_free_one, user_error
from kafka_emu.cli import main

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("args, named", [
    (["serve", "--port", "99999"], "'99999'"),
    (["serve", "--port", "-1"], "'-1'"),
    (["serve", "--metrics-port", "70000"], "'70000'"),
    (["serve", "--brokers", "0"], "--brokers"),
    (["serve", "--brokers", "-2"], "'-2'"),
    (["serve", "--set", "num.partitions"], "'num.partitions'"),
    (["serve", "--set", "emulator.transaction.version=3"], "emulator.transaction.version"),
    (["serve", "--set", "emulator.api.compatibility=3.9", "--set", "emulator.transaction.version=1"],
     "emulator.transaction.version"),
    (["serve", "--kafka-version", "3.9", "--set", "emulator.transaction.version=1"], "emulator.transaction.version"),
    (["serve", "--kafka-version", "3.7"], "'3.7'"),
    (["serve", "--set", "emulator.kafka.version=5.0"], "emulator.kafka.version"),
    (["serve", "--set", "emulator.kafka.version=4.0", "--set", "emulator.api.compatibility=3.9"],
     "emulator.api.compatibility"),
    (["stress", "purgatory", "--duration", "-1"], "--duration"),
    (["stress", "purgatory", "--count", "0"], "--count"),
    (["stress", "purgatory", "--trigger-ratio", "1.5"], "'1.5'"),
    (["bench", "wire", "--connections", "1,x"], "'x'"),
    (["bench", "timer", "--tasks", "0"], "--tasks"),
    (["load", "--duration", "0"], "--duration"),
    (["frobnicate"], "'frobnicate'"),
    (["bench", "frobnicate"], "'frobnicate'"),
    (["bench"], "COMMAND"),
    (["--log-level", "loud", "serve"], "'loud'"),
])
def test_bad_arguments(args: list[str], named: str, capsys) -> None:
    """In-process (each is refused before anything starts): the exit code and stderr."""
    try:
        code = main(args)
    except SystemExit as exit_info:   # argparse's refusals
        code = exit_info.code
    assert named in user_error(subprocess.CompletedProcess(args, code, "", capsys.readouterr().err))


def test_bad_argument_through_the_entry_point() -> None:
    assert "'99999'" in user_error(kafka_emu("serve", "--port", "99999"))


def test_port_in_use_names_the_port() -> None:
    with taken_port_after_a_free_one() as taken:
        busy = taken.getsockname()[1]
        line = user_error(kafka_emu("serve", "--brokers", "1", "--port", str(busy)))
        assert line == f"kafka-emu: port {busy} is already in use"
        # broker 1 of 2 (port+1) is the one that cannot bind: the first one is shut down again
        line = user_error(kafka_emu("serve", "--brokers", "2", "--port", str(busy - 1)))
        assert line == f"kafka-emu: port {busy} is already in use"


def test_metrics_port_in_use_names_the_port() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        result = kafka_emu("serve", "--brokers", "1", "--port", "0", "--metrics-port", str(busy))
    assert user_error(result) == f"kafka-emu: metrics port {busy} is already in use"


def test_ports_past_65535() -> None:
    line = user_error(kafka_emu("serve", "--brokers", "3", "--port", "65534"))
    assert "65536" in line and "--brokers 3" in line


def test_missing_config_file(tmp_path) -> None:
    missing = tmp_path / "nope.properties"
    line = user_error(kafka_emu("serve", "--config", str(missing)))
    assert line.lower() == f"kafka-emu: config file {missing} not found".lower()


def test_unreadable_config_file(tmp_path) -> None:
    line = user_error(kafka_emu("serve", "--config", str(tmp_path)))    # a directory
    assert line.lower().startswith(f"kafka-emu: config file {tmp_path}".lower()) and "cannot be read" in line


@pytest.mark.parametrize("args, module", [
    (["bench", "wire", "--messages", "10", "--duration", "0.1"], "confluent_kafka"),
    (["bench", "purgatory", "--help"], "numpy"),
    (["stress", "replication", "--count", "1"], "confluent_kafka"),
    (["stress", "rebalance", "--count", "1"], "yaml"),
])
def test_missing_extra_says_which_to_install(args: list[str], module: str) -> None:
    line = user_error(kafka_emu(*args, blocked_module=module))
    assert line == f"kafka-emu: this command needs the {module} module, which is not installed: " \
                   "pip install 'kafka-emu[load]'"


def test_serve_logs_shutting_down_and_stopped() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "kafka_emu.cli", "--log-level", "info", "serve",
                             "--brokers", "1", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("bootstrap.servers=")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    events = [json.loads(line) for line in proc.stderr.read().splitlines()]
    mine = [e for e in events if e["logger"] == "broker.serve"]
    assert [e["event"] for e in mine] == ["serving", "shutting_down", "stopped"]
    assert mine[1]["signal"] == "SIGTERM"
