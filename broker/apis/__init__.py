"""API handler modules; each offers ``register(apis)`` (one line per module below)."""
from __future__ import annotations

from typing import Any, Callable

from kafka_emu.broker.apis import fetch, produce
# wire APIs (issue 5)
from kafka_emu.broker.apis import admin, api_versions, find_coordinator, group, init_producer_id, list_offsets, metadata

REGISTER: list[Callable[[Any], None]] = [
    produce.register,
    fetch.register,
    # wire APIs (issue 5)
    api_versions.register,
    metadata.register,
    init_producer_id.register,
    list_offsets.register,
    find_coordinator.register,
    admin.register,
    group.register,
]


def register_all(apis: Any) -> None:
    for register in REGISTER:
        register(apis)
