"""Kafka API names by key (``ListOffsets``, ``JoinGroup``...), for metric labels and log fields.

Taken from kio's index of the protocol schemas (snake_case module names turned into Kafka's
``ApiKeys`` names), so a new API the codec learns is named without a table to maintain here.
Kept free of prometheus_client so logging can use it cheaply.
"""
from __future__ import annotations

from typing import Any

FETCH_API_KEY = 1


def _camel(snake: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in snake.split("_"))


def _load_api_names() -> dict[int, str]:
    try:
        from kio.index import api_key_map
    except Exception:  # pragma: no cover - kio is a hard dependency; keep metrics usable anyway
        return {}
    return {int(key): _camel(value) for key, value in api_key_map.items()}


API_NAMES: dict[int, str] = _load_api_names()


def api_name(api_key: int) -> str:
    """Kafka's name of an API key, ``Unknown<key>`` for keys the codec does not know."""
    return API_NAMES.get(api_key) or f"Unknown{api_key}"


def is_from_follower(body: Any) -> bool:
    """True for a Fetch sent by a replica fetcher (replica id >= 0), in every Fetch version."""
    replica_id = getattr(body, "replica_id", None)
    if replica_id is None:
        state = getattr(body, "replica_state", None)
        replica_id = getattr(state, "replica_id", None)
    try:
        return replica_id is not None and int(replica_id) >= 0
    except (TypeError, ValueError):
        return False
