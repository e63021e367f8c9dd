"""kafka-emu: a multithreaded, in-process Kafka cluster that real Kafka clients use over TCP.

The public API is ``EmbeddedCluster`` (``kafka_emu.broker.cluster.embedded_cluster``) with
``ClusterSecurity`` (``kafka_emu.broker.cluster.cluster_security``). They and ``__version__``
(read from the installed distribution's metadata) are looked up on first use, so
``import kafka_emu`` costs nothing for the pytest plugin and the command line.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.compiled import install_source_finder

install_source_finder()   # before any other submodule is imported: see kafka_emu.compiled

if TYPE_CHECKING:
    from kafka_emu.broker.cluster.cluster_security import ClusterSecurity
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

__all__ = ["ClusterSecurity", "EmbeddedCluster", "__version__"]


def __getattr__(name: str) -> object:
    if name == "EmbeddedCluster":
        from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
        return EmbeddedCluster
    if name == "ClusterSecurity":
        from kafka_emu.broker.cluster.cluster_security import ClusterSecurity
        return ClusterSecurity
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("kafka-emu")
        except PackageNotFoundError:  # running from a source tree that was never installed
            return "0+unknown"
    raise AttributeError(f"module 'kafka_emu' has no attribute {name!r}")
