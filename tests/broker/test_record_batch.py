import struct
import subprocess
import sys

import pytest

from kafka_emu.broker.storage.record_batch import build_batch, iter_records, parse_batches, rewrite_batch_header
from kafka_emu.common.errors import Errors, KafkaError

pytestmark = pytest.mark.timeout(10)


def _code(data, **kw):
    with pytest.raises(KafkaError) as ei:
        parse_batches(data, **kw)
    return ei.value.code


def test_roundtrip_and_offset_rewrite():
    b = build_batch([(b"k1", b"v1"), (None, b"v2"), (b"k3", None)])
    (info,) = parse_batches(b)
    assert info.record_count == 3 and info.last_offset_delta == 2 and info.size == len(b)
    buf = bytearray(b)
    rewrite_batch_header(buf, 0, 42, 7)
    (info2,) = parse_batches(bytes(buf))  # CRC still valid: base offset and epoch are outside it
    assert info2.base_offset == 42 and info2.leader_epoch == 7
    assert list(iter_records(bytes(buf))) == [(42, b"k1", b"v1"), (43, None, b"v2"), (44, b"k3", None)]


def test_bad_crc_is_corrupt_message():
    b = bytearray(build_batch([(b"k", b"v")]))
    b[-1] ^= 0xFF
    assert _code(bytes(b)) == Errors.CORRUPT_MESSAGE


def test_old_magic_is_unsupported():
    b = bytearray(build_batch([(b"k", b"v")]))
    b[16] = 1
    assert _code(bytes(b)) == Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT


def test_truncated_batches_are_corrupt():
    b = build_batch([(b"k", b"v" * 100)])
    assert _code(b[:40]) == Errors.CORRUPT_MESSAGE
    assert _code(b[:-5]) == Errors.CORRUPT_MESSAGE
    assert _code(b + b[:10]) == Errors.CORRUPT_MESSAGE


def test_declared_length_too_small_is_corrupt():
    b = bytearray(build_batch([(b"k", b"v")]))
    struct.pack_into(">i", b, 8, 10)
    assert _code(bytes(b)) == Errors.CORRUPT_MESSAGE


def test_record_count_mismatch_is_invalid_record():
    b = bytearray(build_batch([(b"k", b"v"), (b"k", b"v")]))
    struct.pack_into(">i", b, 57, 5)  # inside the CRC: recompute it
    from crc32c import crc32c
    struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    assert _code(bytes(b)) == Errors.INVALID_RECORD


def test_message_too_large_and_empty():
    b = build_batch([(b"k", b"v" * 2000)])
    assert _code(b, max_batch_size=1000) == Errors.MESSAGE_TOO_LARGE
    assert _code(b"") == Errors.INVALID_RECORD


def test_the_log_layer_loads_without_the_wire_codecs():
    """The storage layer takes its varints from ``common.varint``; importing it must not load
    kio or any of ``broker.protocol``."""
    probe = ("import sys, kafka_emu.broker.storage.unified_log; "
             "print(sorted(m for m in sys.modules if m == 'kio' or m.startswith('kafka_emu.broker.protocol')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
