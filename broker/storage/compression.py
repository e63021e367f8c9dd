"""Record batch compression codecs (Kafka's ``CompressionType`` and ``Compression``).

The codec id is the low three bits of a v2 batch's attributes: 0 none, 1 gzip, 2 snappy, 3 lz4,
4 zstd. What is compressed is the batch's records section (everything after the 61-byte
header). The codecs are maintained libraries: ``gzip`` from the standard library, snappy, LZ4
(frame format, as Kafka's ``Lz4BlockOutputStream`` writes) and zstd from ``cramjam``.

Snappy comes in two framings: Java clients write xerial's ``SnappyOutputStream`` format (a
16-byte header, then blocks each preceded by its big-endian length), librdkafka writes a bare
snappy block; Kafka reads both, and so does ``decompress``. ``compress`` writes the xerial
framing, as the Java client (and so Kafka's broker when it recompresses) does.

Stateless; safe from any thread.
"""
from __future__ import annotations

import gzip
import struct
import zlib

import cramjam

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_MASK = 0x07
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
# compression.type values (the topic config) -> codec id; "producer" keeps the producer's
BY_TOPIC_CONFIG = {"uncompressed": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")   # magic, version 1, compatible version 1
_XERIAL_BLOCK = 32 * 1024                 # xerial's default block size
_I32 = struct.Struct(">i")


class CompressionError(Exception):
    """The payload cannot be decoded with its codec (or the codec id is unknown)."""


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    try:
        if codec == GZIP:
            return gzip.decompress(data)
        if codec == SNAPPY:
            return _snappy_decompress(bytes(data))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except (OSError, EOFError, zlib.error, cramjam.DecompressionError, ValueError, struct.error) as exc:
        raise CompressionError(f"{NAMES[codec]} payload cannot be decompressed: {exc}") from None
    raise CompressionError(f"unknown compression codec {codec}")


def compress(codec: int, data: bytes | memoryview, level: int | None = None) -> bytes:
    """``data`` compressed with ``codec``; ``level`` None or -1 is the codec's default."""
    if level is not None and level < 0 and codec != ZSTD:
        level = None
    if codec == GZIP:
        return gzip.compress(data, compresslevel=6 if level is None else level)
    if codec == SNAPPY:
        return _snappy_compress(bytes(data))
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(data) if level is None else cramjam.lz4.compress(data, level=level))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data) if level is None else cramjam.zstd.compress(data, level=level))
    raise CompressionError(f"unknown compression codec {codec}")


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos = _XERIAL_HEADER.size
    while pos < len(data):
        n = _I32.unpack_from(data, pos)[0]
        pos += 4
        if n < 0 or pos + n > len(data):
            raise ValueError("truncated xerial snappy block")
        out += cramjam.snappy.decompress_raw(data[pos:pos + n])
        pos += n
    return bytes(out)


def _snappy_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1))
    for pos in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[pos:pos + _XERIAL_BLOCK]))
        out += _I32.pack(len(block))
        out += block
    return bytes(out)
