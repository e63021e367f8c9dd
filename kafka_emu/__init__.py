"""kafka-emu: a multithreaded, in-process Kafka cluster that real Kafka clients use over TCP.

The public API is ``EmbeddedCluster`` (``kafka_emu.broker.cluster``); it is imported on first
use, so ``import kafka_emu`` stays cheap for the pytest plugin and the command line.
"""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_emu.broker.cluster import EmbeddedCluster

try:
    __version__ = version("kafka-emu")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["EmbeddedCluster", "__version__"]


def __getattr__(name: str) -> type:
    if name == "EmbeddedCluster":
        from kafka_emu.broker.cluster import EmbeddedCluster
        return EmbeddedCluster
    raise AttributeError(f"module 'kafka_emu' has no attribute {name!r}")
