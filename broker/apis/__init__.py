"""The APIs the broker serves, gathered from the handler modules' declarations.

Each module here that serves APIs declares ``APIS``, one ``ApiSpec`` (key, version range,
handler) per API. ``APIS`` below is their union, gathered from the modules the package holds
(none is listed: serving a new API is adding its module), and the single statement of what the
broker speaks: KafkaApis dispatches on it, ApiVersions advertises it and the network processors
admit only what it serves (``api_versions.DefaultApiVersionManager``, handed to them). Each range
is what kio decodes and the handler fills correctly; versions newer than a handler understands
are left out rather than half-served.

Which of these a broker serves, and at which versions, depends on the Kafka release it answers
as (``ApiSpec.versions``, ``emulator.kafka.version``).
"""
from __future__ import annotations

import importlib
import pkgutil
from types import MappingProxyType
from typing import Mapping

from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.common.kafka_releases import KafkaRelease


def _collect() -> Mapping[int, ApiSpec]:
    """Every ``ApiSpec`` of the package's modules, by key; the modules are found, not listed, so
    a new API is a new module and nothing else."""
    table: dict[int, ApiSpec] = {}
    for module_info in pkgutil.iter_modules(__path__, f"{__name__}."):
        for spec in getattr(importlib.import_module(module_info.name), "APIS", ()):
            if spec.api_key in table:
                raise ValueError(f"api key {spec.api_key} declared twice ({table[spec.api_key].name}, {spec.name})")
            table[spec.api_key] = spec
    return MappingProxyType(dict(sorted(table.items())))


APIS: Mapping[int, ApiSpec] = _collect()


def api_name(api_key: int) -> str:
    """Kafka's name of ``api_key`` for logs and metric labels (``Unknown(<key>)`` if not served)."""
    spec = APIS.get(api_key)
    return spec.name if spec is not None else f"Unknown({api_key})"


def is_supported(api_key: int, api_version: int, release: KafkaRelease) -> bool:
    """Whether the broker serves ``api_version`` of ``api_key`` as ``release``
    (``emulator.kafka.version``). Everything else closes the connection, as in Kafka."""
    spec = APIS.get(api_key)
    return spec is not None and spec.supports(api_version, release)


__all__ = ["APIS", "ApiSpec", "api_name", "is_supported"]
