"""Java properties text (``server.properties``), read as Kafka's ``Utils.loadProps`` reads it
with ``java.util.Properties``: ``parse_properties`` for a text, ``load_properties`` for a file.

Values stay strings; a ``ConfigDef`` (``KafkaConfig``) converts them. Stateless.
"""
from __future__ import annotations

from pathlib import Path

from kafka_emu.common.config_def import ConfigException


def _logical_lines(text: str) -> list[str]:
    """java.util.Properties' logical lines: comments and blank lines dropped, a line ending in
    an odd number of backslashes continued on the next (leading white space removed)."""
    out: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not pending and (not line or line.startswith(("#", "!"))):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending += line[:-1]
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2:i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """A ``server.properties`` text as java.util.Properties reads it: ``#``/``!`` comments, blank
    lines, ``key=value``, ``key: value`` or ``key value`` with any white space around the
    separator, backslash continuations and escapes; a key alone has the empty value. Values are
    strings; the table converts them (``KafkaConfig``)."""
    out: dict[str, str] = {}
    for line in _logical_lines(text):
        i, escaped = 0, False
        while i < len(line):
            ch = line[i]
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch in "=: \t\f":
                break
            i += 1
        key, rest = line[:i], line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        out[_unescape(key)] = _unescape(rest)
    return out


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a ``server.properties`` file; a missing or unreadable file is a ``ConfigException``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigException(f"Config file {path} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigException(f"Config file {path} cannot be read: {reason}") from None
    return parse_properties(text)
