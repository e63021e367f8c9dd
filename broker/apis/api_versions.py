"""ApiVersions: what the broker speaks, from the handler modules' declarations (``broker.apis.APIS``).

KIP-511: a request at a version newer than the broker knows (the network layer hands it on
with ``body=None``) gets UNSUPPORTED_VERSION in a **v0** body, framed with response header v0,
still listing the ApiVersions range so the client can retry at a version both sides speak.
ApiVersions v3+ carries the client's software name and version; Kafka validates them
(INVALID_REQUEST for names outside ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``). We do too.
The ranges listed are those of the broker's ``emulator.api.compatibility`` mode
(``ApiSpec.advertised``).

Features (v3+, Kafka's ``ApiVersionsResponse.createApiVersionsResponse``): ``transaction.version``
is listed as supported (0-2; 0-0 under 3.9, whose production level is 0) and, when not 0, as
finalized at ``emulator.transaction.version`` (a client uses transaction version 2 when the
finalized level is 2); ``group.version`` as supported 0-1 and finalized at 1, what a newly
formatted Kafka 4 cluster finalizes (KIP-848's consumer groups; 0-0 and not finalized under 3.9,
which cannot finalize level 1). Supported features whose minimum is 0 are left out below v4
(KAFKA-17011: older clients reject a minimum of 0); finalized level 0 is left out as Kafka leaves
it out. ``metadata.version`` and ``kraft.version`` are not reported: the emulator has no KRaft
metadata log, so nothing they would tell a client holds. The finalized features epoch is 0: the
levels are fixed for the cluster's life.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

import kafka_emu.broker.apis as registry   # the package: APIS is read at call time, after it is built
from kafka_emu.broker.apis._common import ZERO_THROTTLE
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.config import API_COMPATIBILITY, KAFKA_4X
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction.config import (
    MAX_TRANSACTION_VERSION, TRANSACTION_VERSION, TRANSACTION_VERSION_FEATURE,
)

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

API_KEY = int(ApiKeys.API_VERSIONS)   # an int: compared with headers' keys (answers_unsupported_versions)
_SOFTWARE_RE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


FIRST_VERSION_WITH_MIN_0_FEATURES = 4   # KAFKA-17011
FINALIZED_FEATURES_EPOCH = 0
GROUP_VERSION_FEATURE = "group.version"
GROUP_VERSION_KIP_848 = 1   # GroupVersion.GV_1, Kafka 4's LATEST_PRODUCTION


def _features(cls: type, version: int, compatibility: str, transaction_version: int) -> dict[str, object]:
    """The feature fields of an ApiVersions response (v3+; none before)."""
    if version < 3:
        return {}
    kafka_4 = compatibility == KAFKA_4X
    group_version = GROUP_VERSION_KIP_848 if kafka_4 else 0
    levels = ((GROUP_VERSION_FEATURE, group_version, group_version),
              (TRANSACTION_VERSION_FEATURE, MAX_TRANSACTION_VERSION if kafka_4 else 0, transaction_version))
    supported = ()
    if version >= FIRST_VERSION_WITH_MIN_0_FEATURES:
        supported = tuple(build(item_cls(cls, "supported_features"), name=name, min_version=0, max_version=high)
                          for name, high, _ in levels)
    finalized = tuple(build(item_cls(cls, "finalized_features"), name=name, min_version_level=level,
                            max_version_level=level) for name, _, level in levels if level != 0)
    return {"supported_features": supported, "finalized_features_epoch": FINALIZED_FEATURES_EPOCH,
            "finalized_features": finalized}


@lru_cache(maxsize=None)
def build_api_versions_response(version: int, error_code: int = Errors.NONE,
                                compatibility: str = KAFKA_4X, transaction_version: int = 0) -> object:
    """The (immutable, hence cached) response entity for ``version`` in ``compatibility`` mode
    with ``transaction.version`` finalized at ``transaction_version``."""
    cls = response_schema(API_KEY, version)
    entry_cls = item_cls(cls, "api_keys")
    specs = registry.APIS.values()
    if error_code == Errors.UNSUPPORTED_VERSION:
        specs = [registry.APIS[API_KEY]]
    keys = []
    for spec in specs:
        low, high = spec.advertised(compatibility)
        keys.append(build(entry_cls, api_key=spec.api_key, min_version=low, max_version=high))
    features = _features(cls, version, compatibility, transaction_version) if error_code == Errors.NONE else {}
    return build(cls, error_code=error_code, api_keys=tuple(keys), throttle_time=ZERO_THROTTLE, **features)


def handle_api_versions(request: Request, compatibility: str = KAFKA_4X, transaction_version: int = 0) -> object:
    """Return the response body for an ApiVersions request."""
    return api_versions_answer(request.api_version, request.body, compatibility, transaction_version)


def api_versions_answer(api_version: int, body: object, compatibility: str = KAFKA_4X,
                        transaction_version: int = 0) -> object:
    """The answer to ApiVersions ``api_version`` with request ``body`` (None: a version not served)."""
    if body is None or not registry.is_supported(API_KEY, api_version, compatibility):
        return build_api_versions_response(0, Errors.UNSUPPORTED_VERSION, compatibility)
    if api_version >= 3:
        name = body.client_software_name
        ver = body.client_software_version
        if not (_SOFTWARE_RE.match(name or "") and _SOFTWARE_RE.match(ver or "")):
            return build_api_versions_response(api_version, Errors.INVALID_REQUEST, compatibility)
    return build_api_versions_response(api_version, Errors.NONE, compatibility, transaction_version)


def _handle(apis: KafkaApis, request: Request) -> None:
    apis.request_channel.send_response(
        request, handle_api_versions(request, apis.config[API_COMPATIBILITY], apis.config[TRANSACTION_VERSION]))


APIS = (ApiSpec(API_KEY, 0, 4, _handle),)


class DefaultApiVersionManager:
    """What the network layer admits (its ``ApiVersionManager`` protocol, Kafka's
    ``DefaultApiVersionManager``): the versions ``broker.apis.APIS`` serves in one
    ``emulator.api.compatibility`` mode, with their names; ApiVersions at any other version gets
    KIP-511's v0 answer. ``KafkaServer`` hands one to its ``SocketServer``.

    The ranges are read from the specs once (``ApiSpec.versions``), so admitting a request is one
    dict lookup and a comparison. Immutable; safe from any thread."""

    __slots__ = ("_enabled", "_compatibility", "_transaction_version")

    def __init__(self, compatibility: str = KAFKA_4X, transaction_version: int = 0) -> None:
        self._compatibility = compatibility
        self._transaction_version = transaction_version
        # api key -> (min version, max version, name)
        self._enabled: dict[int, tuple[int, int, str]] = {
            key: (*spec.versions(compatibility), spec.name) for key, spec in registry.APIS.items()}

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
        return api_versions_answer(api_version, body, self._compatibility, self._transaction_version)
