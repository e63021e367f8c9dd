"""Long commands draw a live progress bar (elapsed and ETA) on a terminal, and nothing when
stderr is not a terminal or with ``--no-progress`` (issue 11, part 4)."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

from cli_support import kafka_emu

pytestmark = pytest.mark.timeout(60)

ELAPSED_ETA = re.compile(r"\d\d:\d\d<\d\d:\d\d")    # tqdm's "[00:01<00:02, ...]"
RUN = ["stress", "purgatory", "--duration", "1.5", "--threads", "1", "--json"]


def _stderr_on_a_terminal(*args: str) -> str:
    """Run ``kafka-emu ARGS`` with stderr on a pseudo-terminal; what it wrote there."""
    controller, terminal = pty.openpty()
    # a real terminal has a size (tqdm draws nothing on a 0-column one)
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "kafka_emu.cli", *args], stdout=subprocess.PIPE,
                            stderr=terminal, text=True)
    os.close(terminal)
    written = b""
    try:
        while chunk := _read(controller):
            written += chunk
    finally:
        os.close(controller)
        assert proc.wait(30) == 0
        proc.stdout.close()
    return written.decode(errors="replace")


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:   # EIO: the child closed the terminal
        return b""


def test_a_terminal_gets_a_bar_with_elapsed_time_and_eta() -> None:
    assert ELAPSED_ETA.search(_stderr_on_a_terminal(*RUN))


def test_no_progress_keeps_a_terminal_quiet() -> None:
    assert not ELAPSED_ETA.search(_stderr_on_a_terminal("--no-progress", *RUN))


def test_not_a_terminal_stays_quiet() -> None:
    result = kafka_emu(*RUN)
    assert result.returncode == 0 and result.stderr == ""
