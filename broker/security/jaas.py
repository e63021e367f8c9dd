"""JAAS configuration lines as Kafka's brokers read them (``sasl.jaas.config``, Kafka's
``JaasConfig``): ``<LoginModule class> <flag> [key=value ...];``, values optionally in double
quotes (with backslash escapes). A listener's mechanism reads its own line,
``listener.name.<listener>.<mechanism>.sasl.jaas.config``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kafka_emu.common.config_def import ConfigException

FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:"((?:\\.|[^"\\])*)"|([^\s=;"]+)|(=)|(;))')


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


def _tokens(text: str, key: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ConfigException(key, "[hidden]", f"JAAS config entry could not be parsed near {text[pos:pos + 20]!r}")
        pos = m.end()
        if m.group(1) is not None:
            out.append(("quoted", re.sub(r"\\(.)", r"\1", m.group(1))))
        elif m.group(2) is not None:
            out.append(("word", m.group(2)))
        else:
            out.append(("punct", m.group(3) or m.group(4)))
    return out


def parse_jaas_config(text: str, key: str) -> list[JaasEntry]:
    """The entries of a JAAS configuration value; ConfigException (value hidden) if malformed."""
    tokens = _tokens(text, key)
    entries: list[JaasEntry] = []
    i = 0
    while i < len(tokens):
        if i + 1 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][1].lower() not in FLAGS:
            raise ConfigException(key, "[hidden]", "JAAS config entry must be '<LoginModule> <flag> [key=value]... ;' "
                                                   f"with flag one of {', '.join(FLAGS)}")
        module, flag = tokens[i][1], tokens[i + 1][1].lower()
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i] != ("punct", ";"):
            if i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1] != ("punct", "=") or \
                    tokens[i + 2][0] == "punct":
                raise ConfigException(key, "[hidden]", "JAAS config options must be key=value")
            options[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ConfigException(key, "[hidden]", "JAAS config entry must end with ';'")
        i += 1
        entries.append(JaasEntry(module, flag, options))
    if len(entries) != 1:
        raise ConfigException(key, "[hidden]", f"JAAS config property contains {len(entries)} login modules, "
                                               f"should be 1 module")
    return entries
