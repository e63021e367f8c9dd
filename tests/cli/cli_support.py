"""Running ``kafka-emu`` as a user does: a child process, its exit code and its stderr."""
from __future__ import annotations

import socket
import subprocess
import sys

from kafka_emu.cli import COMMANDS, Command

# ["serve"], ["load"], ["bench", "timer"], ...: every leaf of the command table
EVERY_COMMAND = [[name] if isinstance(entry, Command) else [name, leaf]
                 for name, entry in COMMANDS.items()
                 for leaf in ([None] if isinstance(entry, Command) else entry)]


def kafka_emu(*args: str, blocked_module: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``python -m kafka_emu.cli ARGS``; ``blocked_module``: import it fails as if not installed."""
    if blocked_module is None:
        command = [sys.executable, "-m", "kafka_emu.cli", *args]
    else:
        command = [sys.executable, "-c",
                   f"import sys; sys.modules[{blocked_module!r}] = None; "
                   "from kafka_emu.cli import main; sys.exit(main(sys.argv[1:]))", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def user_error(result: subprocess.CompletedProcess) -> str:
    """Assert the run ended as a user error (exit 2, one line on stderr, no traceback); the line."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert result.returncode == 2, (result.returncode, result.stderr)
    return lines[0]


def taken_port_after_a_free_one() -> socket.socket:
    """A listening socket on a port whose predecessor was free when checked (for a two-broker
    ``serve --port busy-1`` whose second broker finds its port taken)."""
    for _ in range(50):
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", taken.getsockname()[1] - 1))
                return taken
            except OSError:
                taken.close()
    raise AssertionError("no port with a free predecessor")
