"""Forged array counts must be refused before kio's native reader sees them.

kio sizes an array's storage from its count, and a failed allocation in its Rust code aborts the
whole process: one 20-byte frame claiming 2**31 items used to kill every broker of an embedded
cluster. Decoding runs in a child process so that a regression fails this test instead of
killing the test run.
"""
from __future__ import annotations

import struct
import subprocess
import sys
import textwrap

import pytest

from kafka_emu.broker.protocol.codec import InvalidRequestError, decode_request, decode_request_header


def _frame(api_key: int, version: int, body: bytes, flexible: bool) -> bytes:
    header = struct.pack(">hhih", api_key, version, 1, -1) + (b"\x00" if flexible else b"")
    return header + body


FORGED = {
    # DescribeGroups v4 (legacy): groups is an array of strings, count 2**31 - 1.
    "primitive-array-legacy": _frame(15, 4, struct.pack(">i", 0x7FFFFFFF) + b"\x00", False),
    # DescribeGroups v6 (flexible): compact array count as a huge uvarint.
    "primitive-array-compact": _frame(15, 6, b"\xfb\xff\xff\xff\x0f" + b"\x00" * 4, True),
    # Metadata v4 (legacy): topics is an array of entities.
    "entity-array-legacy": _frame(3, 4, struct.pack(">i", 0x10000000) + b"\x00\x01", False),
    # Produce v9 (flexible): topic_data with a forged compact count after acks/timeout.
    "entity-array-compact": _frame(0, 9, b"\x00" + struct.pack(">hi", 1, 1000) + b"\xff\xff\xff\xff\x07", True),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(FORGED))
def test_forged_counts_are_invalid_requests(name: str) -> None:
    script = textwrap.dedent(f"""
        from kafka_emu.broker.protocol.codec import InvalidRequestError, decode_request, decode_request_header
        frame = bytes.fromhex({FORGED[name].hex()!r})
        try:
            decode_request(decode_request_header(frame), frame)
        except InvalidRequestError as exc:
            print("invalid:", exc)
        else:
            print("decoded")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=50)
    assert done.returncode == 0, f"decoder died ({done.returncode}): {done.stderr[-500:]}"
    assert done.stdout.startswith("invalid:"), done.stdout


@pytest.mark.timeout(60)
def test_random_frames_never_abort_the_process() -> None:
    script = textwrap.dedent("""
        import random, struct
        from kafka_emu.broker.protocol.codec import decode_request_header, decode_request
        rng = random.Random(7)
        keys = [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 22, 32, 42, 60]
        counts = [0x7FFFFFFF, 0x10000000, 1 << 20, -5]
        for _ in range(4000):
            header = struct.pack(">hhih", rng.choice(keys), rng.randrange(14), 1, -1)
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
            if rng.random() < 0.5:
                body = struct.pack(">i", rng.choice(counts)) + body
            frame = header + (b"\\x00" if rng.random() < 0.5 else b"") + body
            try:
                decode_request(decode_request_header(frame), frame)
            except Exception:
                pass
        print("survived")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=50)
    assert done.returncode == 0, f"decoder died ({done.returncode}): {done.stderr[-500:]}"
    assert "survived" in done.stdout


def test_valid_describe_groups_still_decodes() -> None:
    body = struct.pack(">i", 1) + struct.pack(">h", 1) + b"g" + b"\x00"
    frame = _frame(15, 4, body, False)
    request = decode_request(decode_request_header(frame), frame)
    assert tuple(request.groups) == ("g",)
    with pytest.raises(InvalidRequestError):
        short = _frame(15, 4, struct.pack(">i", 3) + b"\x00", False)
        decode_request(decode_request_header(short), short)
