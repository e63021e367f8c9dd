"""ApiVersions: what the broker speaks, from the handler modules' declarations (``broker.apis.APIS``).

KIP-511: a request at a version newer than the broker knows (the network layer hands it on
with ``body=None``) gets UNSUPPORTED_VERSION in a **v0** body, framed with response header v0,
still listing the ApiVersions range so the client can retry at a version both sides speak.
ApiVersions v3+ carries the client's software name and version; Kafka validates them
(INVALID_REQUEST for names outside ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``). We do too.
The ranges listed are those the broker serves as its release (``emulator.kafka.version``,
``ApiSpec.advertised``).

Features (v3+, Kafka's ``ApiVersionsResponse.createApiVersionsResponse``): those a broker of the
release reports (``kafka_emu.common.kafka_releases``): as supported, each feature's production
range (Kafka's ``BrokerFeatures.defaultSupportedFeatures``: left out when its maximum is 0); as
finalized, the level a newly formatted cluster of the release finalizes, capped at the level the
emulator implements (``IMPLEMENTED_LEVELS``): a feature whose behaviour the emulator does not have
is finalized at 0, which means off, and a client does not use it. ``transaction.version`` is
finalized at ``emulator.transaction.version`` and ``share.version`` at ``emulator.share.version``
(each the release's default unless set: a new 4.1 cluster finalizes share.version 0, share groups
off, a 4.2 one 1); ``group.version`` at 1 where the release's new cluster has it (4.0 and later: KIP-848's consumer
groups; 3.9 does not list the feature). Supported
features whose minimum is 0 are left out below v4 (KAFKA-17011: older clients reject a minimum of
0); finalized level 0 is left out as Kafka leaves it out. The finalized features epoch is 0: the
levels are fixed for the cluster's life (no UpdateFeatures).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

import kafka_emu.broker.apis as registry   # the package: APIS is read at call time, after it is built
from kafka_emu.broker.apis._common import ZERO_THROTTLE
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.common.kafka_releases import LATEST, KafkaRelease, release as kafka_release
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.share.config import MAX_SHARE_VERSION, SHARE_VERSION, SHARE_VERSION_FEATURE
from kafka_emu.coordinator.transaction.config import (
    MAX_TRANSACTION_VERSION, TRANSACTION_VERSION, TRANSACTION_VERSION_FEATURE,
)

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

API_KEY = int(ApiKeys.API_VERSIONS)   # an int: compared with headers' keys (answers_unsupported_versions)
_SOFTWARE_RE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


FIRST_VERSION_WITH_MIN_0_FEATURES = 4   # KAFKA-17011
LATEST_RELEASE = kafka_release(LATEST)
FINALIZED_FEATURES_EPOCH = 0
GROUP_VERSION_FEATURE = "group.version"
GROUP_VERSION_KIP_848 = 1   # GroupVersion.GV_1, Kafka 4's LATEST_PRODUCTION


# The highest level of each feature whose behaviour the emulator has. metadata.version names the
# release's metadata format and gates nothing the emulator does differently; group.version 1 is
# KIP-848's consumer groups (served); kraft.version 1 is KIP-853's dynamic quorum (the in-process
# controller is one static voter), streams.version 1 KIP-1071's streams groups,
# eligible.leader.replicas.version 1 KIP-966's ELR: none served here; share.version 1 is KIP-932's
# share groups (served).
IMPLEMENTED_LEVELS: dict[str, int] = {
    "kraft.version": 0,
    TRANSACTION_VERSION_FEATURE: MAX_TRANSACTION_VERSION,
    GROUP_VERSION_FEATURE: GROUP_VERSION_KIP_848,
    SHARE_VERSION_FEATURE: MAX_SHARE_VERSION,
    "streams.version": 0,
    "eligible.leader.replicas.version": 0,
}
METADATA_VERSION_FEATURE = "metadata.version"


def finalized_levels(release: KafkaRelease, transaction_version: int, share_version: int = 0) -> dict[str, int]:
    """Feature -> the level finalized as ``release``: the configured one for ``transaction.version``
    and ``share.version``, else its new cluster's, capped at what the emulator implements (a feature
    the emulator does not know is off); levels 0 left out."""
    configured = {TRANSACTION_VERSION_FEATURE: transaction_version, SHARE_VERSION_FEATURE: share_version}
    out: dict[str, int] = {}
    for name, levels in release.features.items():
        if name in configured:
            level = configured[name]
        elif name == METADATA_VERSION_FEATURE:
            level = levels.default
        else:
            level = min(levels.default, IMPLEMENTED_LEVELS.get(name, 0))
        if level > 0:
            out[name] = level
    return out


def _features(cls: type, version: int, release: KafkaRelease, transaction_version: int,
              share_version: int) -> dict[str, object]:
    """The feature fields of an ApiVersions response (v3+; none before)."""
    if version < 3:
        return {}
    supported = tuple(
        build(item_cls(cls, "supported_features"), name=name, min_version=levels.min, max_version=levels.max)
        for name, levels in release.features.items()
        if levels.max > 0 and (levels.min > 0 or version >= FIRST_VERSION_WITH_MIN_0_FEATURES))
    finalized = tuple(
        build(item_cls(cls, "finalized_features"), name=name, min_version_level=level, max_version_level=level)
        for name, level in finalized_levels(release, transaction_version, share_version).items())
    return {"supported_features": supported, "finalized_features_epoch": FINALIZED_FEATURES_EPOCH,
            "finalized_features": finalized}


@lru_cache(maxsize=None)
def build_api_versions_response(version: int, error_code: int = Errors.NONE,
                                release: KafkaRelease = LATEST_RELEASE, transaction_version: int = 0,
                                share_version: int = 0) -> object:
    """The (immutable, hence cached) response entity for ``version`` as ``release`` with
    ``transaction.version`` finalized at ``transaction_version`` and ``share.version`` at
    ``share_version``."""
    cls = response_schema(API_KEY, version)
    entry_cls = item_cls(cls, "api_keys")
    specs = registry.APIS.values()
    if error_code == Errors.UNSUPPORTED_VERSION:
        specs = [registry.APIS[API_KEY]]
    keys = []
    for spec in specs:
        served = spec.advertised(release)
        if served is not None:
            keys.append(build(entry_cls, api_key=spec.api_key, min_version=served[0], max_version=served[1]))
    features = _features(cls, version, release, transaction_version, share_version) \
        if error_code == Errors.NONE else {}
    return build(cls, error_code=error_code, api_keys=tuple(keys), throttle_time=ZERO_THROTTLE, **features)


def handle_api_versions(request: Request, release: KafkaRelease = LATEST_RELEASE,
                        transaction_version: int = 0, share_version: int = 0) -> object:
    """Return the response body for an ApiVersions request."""
    return api_versions_answer(request.api_version, request.body, release, transaction_version, share_version)


def api_versions_answer(api_version: int, body: object, release: KafkaRelease = LATEST_RELEASE,
                        transaction_version: int = 0, share_version: int = 0) -> object:
    """The answer to ApiVersions ``api_version`` with request ``body`` (None: a version not served)."""
    if body is None or not registry.is_supported(API_KEY, api_version, release):
        return build_api_versions_response(0, Errors.UNSUPPORTED_VERSION, release)
    if api_version >= 3:
        name = body.client_software_name  # type: ignore[attr-defined]
        ver = body.client_software_version  # type: ignore[attr-defined]
        if not (_SOFTWARE_RE.match(name or "") and _SOFTWARE_RE.match(ver or "")):
            return build_api_versions_response(api_version, Errors.INVALID_REQUEST, release)
    return build_api_versions_response(api_version, Errors.NONE, release, transaction_version, share_version)


def _handle(apis: KafkaApis, request: Request) -> None:
    manager = apis.client_metrics_manager
    if manager is not None and request.body is not None and request.api_version >= 3:
        # the connection's ClientInformation, which telemetry subscriptions may match on
        manager.record_client_software(request.connection_id, request.body.client_software_name,
                                       request.body.client_software_version)
    apis.request_helper.send_response_maybe_throttle(
        request, handle_api_versions(request, apis.config.kafka_release, apis.config[TRANSACTION_VERSION],
                                     apis.config[SHARE_VERSION]))


APIS = (ApiSpec(API_KEY, 0, 4, _handle),)


class DefaultApiVersionManager:
    """What the network layer admits (its ``ApiVersionManager`` protocol, Kafka's
    ``DefaultApiVersionManager``): the versions ``broker.apis.APIS`` serves in one
    release (``emulator.kafka.version``), with their names; ApiVersions at any other version gets
    KIP-511's v0 answer. ``KafkaServer`` hands one to its ``SocketServer``.

    The ranges are read from the specs once (``ApiSpec.versions``), so admitting a request is one
    dict lookup and a comparison. Immutable; safe from any thread."""

    __slots__ = ("_enabled", "_release", "_transaction_version", "_share_version")

    def __init__(self, release: KafkaRelease = LATEST_RELEASE, transaction_version: int = 0,
                 share_version: int = 0) -> None:
        self._release = release
        self._transaction_version = transaction_version
        self._share_version = share_version
        # api key -> (min version, max version, name)
        self._enabled: dict[int, tuple[int, int, str]] = {}
        for key, spec in registry.APIS.items():
            served = spec.versions(release)
            if served is not None:
                self._enabled[key] = (*served, spec.name)

    def enabled_api_name(self, api_key: int, api_version: int) -> str | None:
        entry = self._enabled.get(api_key)
        if entry is not None and entry[0] <= api_version <= entry[1]:
            return entry[2]
        return None

    def api_name(self, api_key: int) -> str:
        return registry.api_name(api_key)

    def answers_unsupported_versions(self, api_key: int) -> bool:
        return api_key == API_KEY

    def api_versions_response(self, api_version: int, body: object) -> object:
        """The answer to an ApiVersions request at ``api_version`` (``body`` None: a version not
        served), for the SASL authenticator, which answers it before the connection reaches KafkaApis."""
        return api_versions_answer(api_version, body, self._release, self._transaction_version,
                                   self._share_version)
