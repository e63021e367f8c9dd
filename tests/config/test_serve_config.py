"""``kafka-emu serve`` with bad or surprising configuration: exit code 2, one line naming the
problem, no traceback; warnings for keys without effect; explicit flags win over the file."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]


def serve(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run ``kafka-emu serve`` expecting it to stop by itself (a configuration error)."""
    return subprocess.run([sys.executable, "-m", "kafka_emu.cli", "serve", "--brokers", "1", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""                     # nothing started, no bootstrap line
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("text, expected", [
    ("num.partitions=abc\n", "kafka-emu: Invalid value abc for configuration num.partitions: Not a number of type INT"),
    ("# comment\n\nnum.io.threads = -1\n",
     "kafka-emu: Invalid value -1 for configuration num.io.threads: Value must be at least 1"),
    ("auto.create.topics.enable=maybe\n", "kafka-emu: Invalid value maybe for configuration "
                                          "auto.create.topics.enable: Expected value to be either true or false"),
    ("emulator.cpu.affinity=fastest\n", "kafka-emu: Invalid value fastest for configuration emulator.cpu.affinity: "
                                        "Expected auto, none or a list of CPU numbers"),
    ("log.level=loud\n", "kafka-emu: Invalid value loud for configuration log.level: String must be one of (case "
                         "insensitive): debug, info, warning, error, critical, warn"),
    ("emulator.strict.config=true\nnum.partitionz=3\n",
     "kafka-emu: The configuration 'num.partitionz' was supplied but isn't a known config. "
     "(emulator.strict.config=true refuses it)"),
    ("emulator.strict.config=true\nnum.recovery.threads.per.data.dir=2\n",
     "kafka-emu: The configuration 'num.recovery.threads.per.data.dir' is defined by Kafka but not implemented by the emulator. "
     "(emulator.strict.config=true refuses it)"),
])
def test_bad_config_file_exits_2_with_one_line(tmp_path: Path, text: str, expected: str) -> None:
    props = tmp_path / "bad.properties"
    props.write_text(text)
    assert one_line_error(serve("--port", "0", "--config", str(props))) == expected


@pytest.mark.parametrize("text, expected", [
    ("listeners=SASL_PLAINTEXT://127.0.0.1:0\nsasl.enabled.mechanisms=PLAIN\n",
     "kafka-emu: listener SASL_PLAINTEXT: SASL mechanism PLAIN has no JAAS configuration "
     "(listener.name.sasl_plaintext.plain.sasl.jaas.config)"),
    ("listeners=SASL_PLAINTEXT://127.0.0.1:0\n",
     "kafka-emu: listener SASL_PLAINTEXT: sasl.enabled.mechanisms GSSAPI is not supported by the emulator "
     "(it serves PLAIN, OAUTHBEARER, SCRAM-SHA-256, SCRAM-SHA-512)"),
    ("listeners=SSL://127.0.0.1:0\nssl.keystore.location=/k.jks\n",
     "kafka-emu: listener SSL: ssl.keystore.type=JKS (Kafka's default) cannot be read by the emulator: use PKCS12 "
     "or PEM (keytool -importkeystore -deststoretype PKCS12)"),
    ("listeners=CLIENT://127.0.0.1:0\n",
     "kafka-emu: No security protocol defined for listener CLIENT (listener.security.protocol.map)"),
    ("authorizer.class.name=kafka.security.authorizer.AclAuthorizer\n",
     "kafka-emu: Invalid value kafka.security.authorizer.AclAuthorizer for configuration authorizer.class.name: "
     "Kafka 4 removed the ZooKeeper-based AclAuthorizer: use org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
    ("sasl.kerberos.service.name=kafka\n",
     "kafka-emu: The configuration 'sasl.kerberos.service.name' is not supported by the emulator; a security "
     "setting is never ignored"),
])
def test_security_the_emulator_cannot_serve_stops_start_up(tmp_path: Path, text: str, expected: str) -> None:
    """Issue 28's report: a SASL_PLAINTEXT listener with SASL and authorizer keys it could not
    act on used to start a plaintext listener with warnings; what cannot be served as configured
    now stops start-up with one line (Kafka fails the same configurations at start-up, the JKS
    store and GSSAPI aside, which the emulator cannot read or serve)."""
    props = tmp_path / "security.properties"
    props.write_text(text)
    assert one_line_error(serve("--config", str(props))) == expected


def test_missing_config_file_and_bad_set(tmp_path: Path) -> None:
    missing = tmp_path / "missing.properties"
    assert one_line_error(serve("--config", str(missing))) == f"kafka-emu: Config file {missing} not found"
    assert one_line_error(serve("--set", "num.partitions")) == \
        "kafka-emu: --set expects KEY=VALUE, got 'num.partitions'"
    assert one_line_error(serve("--port", "0", "--set", "num.partitions=x")) == \
        "kafka-emu: Invalid value x for configuration num.partitions: Not a number of type INT"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "kafka_emu.cli", "serve", "--brokers", "1", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    line = proc.stdout.readline().strip()
    if not line.startswith("bootstrap.servers="):
        proc.kill()
        pytest.fail(f"serve did not start: {line!r} {proc.stderr.read()}")
    return proc, line.split("=", 1)[1]


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    return err


def test_cli_port_wins_over_listeners_in_file(tmp_path: Path) -> None:
    file_port, cli_port = _free_port(), _free_port()
    props = tmp_path / "server.properties"
    props.write_text(f"listeners=PLAINTEXT://127.0.0.1:{file_port}\n")
    proc, bootstrap = _start("--port", str(cli_port), "--config", str(props))
    _stop(proc)
    assert bootstrap == f"127.0.0.1:{cli_port}"


def test_listeners_in_file_apply_without_flags(tmp_path: Path) -> None:
    port = _free_port()
    props = tmp_path / "server.properties"
    props.write_text(f"listeners = PLAINTEXT://127.0.0.1:{port}\n")
    proc, bootstrap = _start("--config", str(props))
    _stop(proc)
    assert bootstrap == f"127.0.0.1:{port}"


def test_unknown_and_unimplemented_keys_warned_on_stderr(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("foo.bar.baz=1\nnum.partitionz=3\nnum.recovery.threads.per.data.dir=2\n")
    proc, _ = _start("--port", "0", "--config", str(props))
    err = _stop(proc)
    assert "Traceback" not in err
    for key in ("foo.bar.baz", "num.partitionz", "num.recovery.threads.per.data.dir"):
        assert sum(f'"key": "{key}"' in line and "config_ignored" in line for line in err.splitlines()) == 1, err


def test_serve_help_still_lists_the_defaults() -> None:
    out = subprocess.run([sys.executable, "-m", "kafka_emu.cli", "serve", "--help"], capture_output=True,
                         text=True, timeout=30, cwd=ROOT, env={**os.environ, "COLUMNS": "200"}).stdout
    assert "default: 9092" in out and "default: 127.0.0.1" in out


def _build(tmp_path: Path, text: str, *argv: str) -> dict[str, object]:
    import argparse

    from kafka_emu.broker.cluster import serve as serve_module

    props = tmp_path / "server.properties"
    props.write_text(text)
    parser = argparse.ArgumentParser()
    serve_module.configure(parser)
    return serve_module.build_config(parser.parse_args(["--config", str(props), *argv]))


def test_merge_order_file_then_set_then_flags(tmp_path: Path) -> None:
    file = "listeners=PLAINTEXT://0.0.0.0:9000\nnum.partitions=2\n"
    assert _build(tmp_path, file)["listeners"] == "PLAINTEXT://0.0.0.0:9000"
    assert _build(tmp_path, file, "--set", "num.partitions=5")["num.partitions"] == "5"
    assert _build(tmp_path, file, "--port", "9100")["listeners"] == "PLAINTEXT://127.0.0.1:9100"
    assert _build(tmp_path, file, "--host", "10.0.0.1")["listeners"] == "PLAINTEXT://10.0.0.1:9092"
    assert _build(tmp_path, file, "--set", "listeners=PLAINTEXT://h:1", "--port", "7")["listeners"] == \
        "PLAINTEXT://127.0.0.1:7"
    built = _build(tmp_path, "", "--advertised-host", "kafka.example")
    assert (built["listeners"], built["advertised.listeners"]) == (
        "PLAINTEXT://127.0.0.1:9092", "PLAINTEXT://kafka.example:0")   # port 0: each broker's bound port
