"""SslPrincipalMapper: the principal name of a TLS client certificate (Kafka's
``org.apache.kafka.common.security.ssl.SslPrincipalMapper``, config ``ssl.principal.mapping.rules``).

Rules are tried in order on the certificate's subject in RFC 2253 form (``CN=alice,O=acme``);
the first whose pattern matches the whole name gives the principal name: ``DEFAULT`` keeps the
name as it is, ``RULE:pattern/replacement/`` rewrites it (``$1`` names a group, as in Java), with
an optional ``L`` or ``U`` after the last slash to lower- or upper-case the result. No rule
matching is an error (Kafka's ``NoMatchingRule``): the connection fails authentication.
Immutable after construction.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from kafka_emu.common.config_def import ConfigException

CONFIG = "ssl.principal.mapping.rules"
_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?))\s*(?:,|$)")
_BACKREF = re.compile(r"\$(\d+)")


class NoMatchingRule(ValueError):
    """No rule maps the certificate's subject (Kafka: ``NoMatchingRule``)."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None   # None: DEFAULT
    replacement: str
    case: str                         # "", "L" or "U"

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if not self.pattern.fullmatch(name):
            return None
        result = self.pattern.sub(lambda m: _BACKREF.sub(lambda g: m.group(int(g.group(1))) or "", self.replacement),
                                  name)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result


class SslPrincipalMapper:
    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules: list[_Rule] = []
        text = rules.strip() or "DEFAULT"
        pos = 0
        while pos < len(text):
            m = _RULE.match(text, pos)
            if m is None or m.end() == pos:
                raise ConfigException(CONFIG, rules, f"Invalid rule: {text[pos:]}")
            pos = m.end()
            if m.group(1):
                self.rules.append(_Rule(None, "", ""))
                continue
            try:
                pattern = re.compile(m.group(2).replace("\\/", "/"))
            except re.error as exc:
                raise ConfigException(CONFIG, rules, f"Invalid rule pattern {m.group(2)}: {exc}") from None
            self.rules.append(_Rule(pattern, m.group(3).replace("\\/", "/"), m.group(4)))

    def get_name(self, distinguished_name: str) -> str:
        for rule in self.rules:
            name = rule.apply(distinguished_name)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {distinguished_name}, rules {[r.pattern for r in self.rules]}")
