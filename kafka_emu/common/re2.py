"""Regular expressions as Kafka compiles them: with RE2 (``com.google.re2j``).

Kafka compiles user-given patterns (ListTransactions' transactional id pattern, client-metrics
match patterns, KIP-848 subscribed-topic regexes) with RE2J, which has no lookaround, no
backreferences, no possessive quantifiers and no atomic groups. The emulator compiles them with
Python's ``re``, which has all four: ``compile_re2`` refuses a pattern using one, so what Kafka
refuses is refused here too.
"""
from __future__ import annotations

import re

_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]|\(\?>|[*+?}]\+")


def compile_re2(pattern: str) -> re.Pattern[str] | None:
    """``pattern`` compiled, or None where Kafka's RE2J (or Python's ``re``) refuses it."""
    if _NOT_RE2.search(pattern):
        return None
    try:
        return re.compile(pattern)
    except re.error:
        return None
