"""Kafka error codes for the broker: the one table in ``coordinator.errors``, plus ``KafkaError``."""
from __future__ import annotations

from kafka_emu.coordinator.errors import *  # noqa: F401,F403  (the shared table of Kafka error codes)
from kafka_emu.coordinator.errors import name  # noqa: F401


class KafkaError(Exception):
    """An error that maps to one Kafka error code."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or str(code))
        self.code = code
        self.message = message
