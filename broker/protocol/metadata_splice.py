"""Metadata response bytes spliced from topic entries encoded on their own.

A Metadata response for many partitions is mostly its topics array. The handler
(``broker.apis.metadata``) decides what each topic entry says and keeps it encoded
(``encode_entity``) while it holds; per request it builds only the rest of the response (the
"shell": brokers, cluster id, controller, an empty topics array) and ``splice_topics`` writes
the shell with the kept entries as its topics array. The bytes are what kio writes for the whole
response (``tests/broker/test_metadata_encoding.py`` decodes them for every version). Stateless.
"""
from __future__ import annotations

import dataclasses
import io
import struct
from typing import Any

from kio.serial import entity_writer

from kafka_emu.common.varint import write_uvarint

_I32 = struct.Struct(">i")
# the fields that can follow ``topics`` in a MetadataResponse, all fixed-size: their byte counts
_FIXED_AFTER_TOPICS = {"cluster_authorized_operations": 4, "error_code": 2}


def encode_entity(entity: Any) -> bytes:
    """A kio entity's bytes, as kio writes it inside a message (no size, no header)."""
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def splice_topics(version: int, shell: Any, topics: list[bytes]) -> bytes:
    """The body of ``shell`` (a MetadataResponse with no topics) with ``topics`` (encoded
    entries) as its topics array. The topics array is followed only by fixed-size fields
    (``cluster_authorized_operations`` v8-v10, ``error_code`` v13) and, when flexible, the
    empty tagged-field section, so the empty array is found counting back from the end."""
    data = encode_entity(shell)
    flexible = type(shell).__flexible__
    empty = b"\x01" if flexible else b"\0\0\0\0"
    names = [f.name for f in dataclasses.fields(shell)]
    suffix = sum(_FIXED_AFTER_TOPICS[n] for n in names[names.index("topics") + 1:]) + (1 if flexible else 0)
    cut = len(data) - suffix - len(empty)
    if data[cut:cut + len(empty)] != empty or (flexible and data[-1:] != b"\0"):
        raise ValueError(f"unexpected MetadataResponse v{version} layout")
    if flexible:
        count = bytearray()
        write_uvarint(count, len(topics) + 1)
    else:
        count = _I32.pack(len(topics))
    return b"".join((data[:cut], count, *topics, data[cut + len(empty):]))


__all__ = ["encode_entity", "splice_topics"]
