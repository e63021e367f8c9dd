"""CLIENT_METRICS config resources: the client telemetry subscriptions of KIP-714 (Kafka's
``ClientMetricsConfigs``).

A subscription is a named resource with three configs: ``metrics`` (the metric name prefixes to
push; ``*`` for all), ``interval.ms`` (how often to push, 100 ms to one hour; default five
minutes) and ``match`` (``selector=regex`` pairs on the client's instance id, client id, software
name and version, source address and port; empty: every client). A client is subscribed to the
union of the metrics of every subscription that matches it, at the shortest interval.

Validation, as Kafka's ``ClientMetricsConfigs.validate`` (the errors AlterConfigs answers): an
empty subscription name or an unknown key is INVALID_REQUEST, so is an interval outside
100..3600000; a bad value (not an int, a duplicate list element) or an illegal match pattern is
INVALID_CONFIG. The patterns are Python regular expressions matched whole, refused where RE2
(Kafka's engine) refuses them (``kafka_emu.common.re2``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from kafka_emu.common.config_def import ConfigDef, ConfigException, ConfigKey, ConfigValue, Importance, Type
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.common.re2 import compile_re2

METRICS_CONFIG, INTERVAL_MS_CONFIG, MATCH_CONFIG = "metrics", "interval.ms", "match"
ALL_SUBSCRIBED_METRICS = "*"
INTERVAL_MS_DEFAULT = 5 * 60 * 1000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
# the client attributes a match pattern may select on (ClientMetricsConfigs.ALLOWED_MATCH_PARAMS)
CLIENT_INSTANCE_ID, CLIENT_ID = "client_instance_id", "client_id"
CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION = "client_software_name", "client_software_version"
CLIENT_SOURCE_ADDRESS, CLIENT_SOURCE_PORT = "client_source_address", "client_source_port"
MATCH_SELECTORS = frozenset((CLIENT_INSTANCE_ID, CLIENT_ID, CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION,
                             CLIENT_SOURCE_ADDRESS, CLIENT_SOURCE_PORT))


def _no_duplicates(name: str, value: ConfigValue) -> None:
    """``ValidList.anyNonDuplicateValues``."""
    items = list(value or ())  # type: ignore[arg-type]
    if len(set(items)) != len(items):
        raise ConfigException(name, value, "Configuration contains duplicate values.")


CLIENT_METRICS_CONFIG_DEF = ConfigDef((
    ConfigKey(METRICS_CONFIG, Type.LIST, [], _no_duplicates, Importance.MEDIUM, "Telemetry metric name prefix list"),
    ConfigKey(INTERVAL_MS_CONFIG, Type.INT, INTERVAL_MS_DEFAULT, None, Importance.MEDIUM,
              "Metrics push interval in milliseconds"),
    ConfigKey(MATCH_CONFIG, Type.LIST, [], _no_duplicates, Importance.MEDIUM, "Client match criteria"),
))


@dataclass(frozen=True)
class Subscription:
    """One CLIENT_METRICS resource, parsed (Kafka's ``SubscriptionInfo``)."""

    name: str
    metrics: tuple[str, ...]
    interval_ms: int
    match: Mapping[str, re.Pattern[str]]

    def matches(self, attributes: Mapping[str, str | None]) -> bool:
        """Every pattern matches its attribute whole (no patterns: every client)."""
        return all(attributes.get(sel) is not None and pattern.fullmatch(attributes[sel] or "")
                   for sel, pattern in self.match.items())


def parse_match(patterns: list[str]) -> dict[str, re.Pattern[str]]:
    """``ClientMetricsConfigs.parseMatchingPatterns``; INVALID_CONFIG for an illegal one."""
    out: dict[str, re.Pattern[str]] = {}
    for pattern in patterns:
        parts = pattern.split("=")
        selector = parts[0].strip() if len(parts) == 2 else ""
        compiled = compile_re2(parts[1].strip()) if len(parts) == 2 else None
        if selector not in MATCH_SELECTORS or compiled is None:
            raise KafkaError(Errors.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}")
        out[selector] = compiled
    return out


def validate_client_metrics(name: str, configs: Mapping[str, str]) -> dict[str, ConfigValue]:
    """The typed configs of subscription ``name`` (only those given), or ``KafkaError``."""
    if not name:
        raise KafkaError(Errors.INVALID_REQUEST, "Subscription name can't be empty")
    typed: dict[str, ConfigValue] = {}
    for key in configs:
        if CLIENT_METRICS_CONFIG_DEF.key(key) is None:
            raise KafkaError(Errors.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    try:
        for key, value in configs.items():
            typed[key] = CLIENT_METRICS_CONFIG_DEF.keys[key].parse(key, value)
    except ConfigException as exc:
        raise KafkaError(Errors.INVALID_CONFIG, str(exc)) from None
    interval = typed.get(INTERVAL_MS_CONFIG)
    if interval is not None and not MIN_INTERVAL_MS <= int(interval) <= MAX_INTERVAL_MS:  # type: ignore[call-overload]
        raise KafkaError(Errors.INVALID_REQUEST, f"Invalid value {interval} for {INTERVAL_MS_CONFIG}, interval must "
                                                 f"be between 100 and 3600000 (1 hour)")
    parse_match(list(typed.get(MATCH_CONFIG) or ()))  # type: ignore[call-overload]
    return typed


def subscription(name: str, configs: Mapping[str, ConfigValue]) -> Subscription:
    """A stored (validated) resource as a ``Subscription``, defaults filled in."""
    values = {**CLIENT_METRICS_CONFIG_DEF.defaults(), **configs}
    return Subscription(name, tuple(values[METRICS_CONFIG] or ()), int(values[INTERVAL_MS_CONFIG]),  # type: ignore
                        parse_match(list(values[MATCH_CONFIG] or ())))  # type: ignore[call-overload]
