#!/usr/bin/env python3
"""Derive ``kafka_emu/common/kafka_release_data.py`` from Kafka's sources at each release tag.

Usage: ``python scripts/derive_kafka_releases.py --kafka-git DIR [--check]``

``DIR`` is a git directory (a bare mirror is enough: everything is read with ``git show TAG:path``)
holding Apache Kafka's release tags. The search tool's ``fetch github:aiven/inkless`` brings one
(a fork that carries Apache's tags; ``github:apache/kafka``'s stored snapshot stops at 3.9's
release candidates). ``--check`` compares instead of writing and exits 1 on a difference.

What is read, per release (``RELEASES`` below: the newest patch tag of each minor release):

- every ``clients/src/main/resources/common/message/*Request.json`` whose ``listeners`` name
  ``broker``: the API key, name and ``validVersions``; a ``latestVersionUnstable`` top version is
  dropped, as a broker without ``unstable.api.versions.enable`` does (``ApiKeys.latestVersion``),
  and an API left with no version is not served at all;
- ``ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION`` (KAFKA-18659: Produce advertised from v0);
- the features: ``MetadataVersion`` (levels, ``MINIMUM_VERSION``/``MINIMUM_KRAFT_VERSION``,
  ``LATEST_PRODUCTION``) and each production feature of ``Feature``/``Features``: its levels with
  their bootstrap metadata version and ``LATEST_PRODUCTION``. What a broker reports as supported
  is ``BrokerFeatures.defaultSupportedFeatures(false)`` (minimum..latest production, left out when
  that is 0); what a newly formatted cluster finalizes is ``Feature.defaultVersion(LATEST_PRODUCTION)``
  (the highest level whose bootstrap metadata version the release's production metadata
  version reaches);
- broker config defaults: every ``X_CONFIG = "name"`` with an ``X_DEFAULT`` literal beside it in the
  server-side modules. Only the names whose default differs between the releases are written.
"""
from __future__ import annotations

import argparse
import ast
import json
import operator
import re
import subprocess
import sys
from pathlib import Path

# release -> the tag its facts are read at (the newest of that minor release the mirror holds)
RELEASES: dict[str, str] = {
    "3.9": "3.9.1",
    "4.0": "4.0.1",
    "4.1": "4.1.1",
    "4.2": "4.2.0-rc1",   # the mirror has no final 4.2.0 tag: the last release candidate
}
MESSAGES = "clients/src/main/resources/common/message"
COMMON = "server-common/src/main/java/org/apache/kafka/server/common"
API_KEYS = "clients/src/main/java/org/apache/kafka/common/protocol/ApiKeys.java"
CONFIG_DIRS = ("server/", "server-common/", "storage/", "core/src/main/", "group-coordinator/",
               "transaction-coordinator/", "coordinator-common/", "raft/", "metadata/", "share-coordinator/")
OUTPUT = Path(__file__).resolve().parent.parent / "kafka_emu" / "common" / "kafka_release_data.py"


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True,
                          text=True).stdout


def _json(text: str) -> dict:
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


def _range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def apis(git_dir: str, tag: str) -> dict[int, tuple[str, int, int]]:
    out: dict[int, tuple[str, int, int]] = {}
    for path in _git(git_dir, "ls-tree", "--name-only", f"{tag}:{MESSAGES}").split():
        if not path.endswith("Request.json"):
            continue
        spec = _json(_git(git_dir, "show", f"{tag}:{MESSAGES}/{path}"))
        if "broker" not in spec.get("listeners", ()) or spec.get("validVersions", "none") == "none":
            continue
        low, high = _range(spec["validVersions"])
        if spec.get("latestVersionUnstable"):
            high -= 1
        if high >= low:
            out[spec["apiKey"]] = (spec["name"].removesuffix("Request"), low, high)
    return dict(sorted(out.items()))


def produce_advertised_min(git_dir: str, tag: str) -> int | None:
    m = re.search(r"PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION\s*=\s*(\d+)", _git(git_dir, "show", f"{tag}:{API_KEYS}"))
    return int(m.group(1)) if m else None


def _enum_levels(source: str, prefix: str) -> dict[str, tuple[int, str]]:
    """constant -> (level, bootstrap metadata version constant) of a FeatureVersion enum."""
    return {m.group(1): (int(m.group(2)), m.group(3)) for m in re.finditer(
        rf"^\s+({prefix}\w*)\(\s*(\d+)\s*,\s*MetadataVersion\.(\w+)", source, re.M)}


def features(git_dir: str, tag: str) -> dict[str, dict[str, object]]:
    mv_src = _git(git_dir, "show", f"{tag}:{COMMON}/MetadataVersion.java")
    mv_levels = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(IBP_\w+)\((\d+),", mv_src, re.M)}
    latest_mv = re.search(r"LATEST_PRODUCTION\s*=\s*(IBP_\w+)", mv_src).group(1)
    minimum = re.search(r"MINIMUM_(?:KRAFT_)?VERSION\s*=\s*(IBP_\w+)", mv_src).group(1)
    mv_levels["MINIMUM_VERSION"] = mv_levels["MINIMUM_KRAFT_VERSION"] = mv_levels[minimum]
    out: dict[str, dict[str, object]] = {"metadata.version": {
        "min": mv_levels[minimum], "max": mv_levels[latest_mv], "default": mv_levels[latest_mv],
        "release_version": latest_mv.removeprefix("IBP_").replace("_IV", "-IV").replace("_", ".")}}
    names = _git(git_dir, "ls-tree", "--name-only", f"{tag}:{COMMON}").split()
    registry = "Feature.java" if "Feature.java" in names else "Features.java"
    reg_src = _git(git_dir, "show", f"{tag}:{COMMON}/{registry}")
    for cls in re.findall(r"^\s+(?!TEST_|UNIT_TEST)[A-Z_]+\(.*?\b(\w+)\.values\(\)", reg_src, re.M):
        src = _git(git_dir, "show", f"{tag}:{COMMON}/{cls}.java")
        name = re.search(r"FEATURE_NAME\s*=\s*\"([\w.]+)\"", src)
        name = name.group(1) if name else re.search(rf"\(\"([\w.]+)\",\s*{cls}\.values", reg_src).group(1)
        levels = _enum_levels(src, "[A-Z]")
        reachable = [lvl for lvl, mv in levels.values() if mv_levels[mv] <= mv_levels[latest_mv]]
        default = max(reachable)
        latest = re.search(r"LATEST_PRODUCTION\s*=\s*(\w+)", src)
        latest_level = levels[latest.group(1)][0] if latest else default   # 3.9: defaultValue(LATEST_PRODUCTION)
        out[name] = {"min": min(lvl for lvl, _ in levels.values()), "max": latest_level, "default": default}
    return dict(sorted(out.items()))


_OPS = {ast.Mult: operator.mul, ast.Add: operator.add, ast.Sub: operator.sub, ast.FloorDiv: operator.floordiv}
_CONSTANTS = {"Long.MAX_VALUE": str(2**63 - 1), "Integer.MAX_VALUE": str(2**31 - 1)}


def _literal(text: str) -> object:
    """A Java default's literal value (numbers, arithmetic, strings, booleans), else None."""
    text = text.strip()
    for java, value in _CONSTANTS.items():
        text = text.replace(java, value)
    text = re.sub(r"(\d)[Ll]\b", r"\1", text).replace("(short)", "").replace("(int)", "")
    text = text.replace("true", "True").replace("false", "False")

    def ev(node: ast.AST) -> object:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        raise ValueError(text)
    try:
        return ev(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, TypeError):
        return None


_DECL = re.compile(r"static\s+final\s+[\w<>,\s]+?\s(\w+)\s*=\s*([^;]+);")
_REF = re.compile(r"\b(?:(\w+)\.)?([A-Z][A-Z0-9_]+)\b")


def config_defaults(git_dir: str, tag: str) -> dict[str, object]:
    """Broker config name -> default, from the ``X_CONFIG``/``X_DEFAULT`` constants of the
    server-side config classes (references to other constants and ``serverSynonym`` resolved)."""
    files = [p for p in _git(git_dir, "ls-tree", "-r", "--name-only", tag).split()
             if (p.startswith(CONFIG_DIRS) or p.endswith("/TopicConfig.java"))
             and p.endswith(("Config.java", "Configs.java", "Defaults.java")) and "/test/" not in p]
    qualified: dict[str, str] = {}   # Class.CONST -> expression
    simple: dict[str, str] = {}      # CONST -> expression (first seen)
    for path in files:
        cls = path.rsplit("/", 1)[1].removesuffix(".java")
        for const, expr in _DECL.findall(_git(git_dir, "show", f"{tag}:{path}")):
            qualified[f"{cls}.{const}"] = expr
            simple.setdefault(const, expr)

    def resolve(expr: str, depth: int = 0) -> object:
        expr = expr.strip()
        if depth > 8:
            return None
        m = re.fullmatch(r"ServerTopicConfigSynonyms\.serverSynonym\((.+)\)", expr)
        if m:
            inner = resolve(m.group(1), depth + 1)
            return "log." + inner if isinstance(inner, str) else None
        if re.fullmatch(r'"[^"]*"', expr):
            return expr[1:-1]

        def sub(ref: re.Match) -> str:
            cls, const = ref.group(1), ref.group(2)
            target = qualified.get(f"{cls}.{const}") if cls else None
            target = target if target is not None else simple.get(const)
            if f"{cls}.{const}" in _CONSTANTS or const in ("MAX_VALUE",):
                return ref.group(0)
            value = resolve(target, depth + 1) if target is not None else None
            return repr(value) if isinstance(value, (int, float, str, bool)) else ref.group(0)
        return _literal(_REF.sub(sub, expr))

    out: dict[str, object] = {}
    for const, expr in simple.items():
        if not const.endswith("_CONFIG"):
            continue
        name = resolve(expr)
        default = simple.get(const.removesuffix("_CONFIG") + "_DEFAULT")
        if isinstance(name, str) and default is not None:
            value = resolve(default)
            if value is not None:
                out.setdefault(name, value)
    return out


def derive(git_dir: str, emulator_keys: set[str]) -> str:
    table: dict[str, dict[str, object]] = {}
    defaults: dict[str, dict[str, object]] = {}
    for release, tag in RELEASES.items():
        table[release] = {"tag": tag, "apis": apis(git_dir, tag),
                          "produce_advertised_min_version": produce_advertised_min(git_dir, tag),
                          "features": features(git_dir, tag)}
        defaults[release] = config_defaults(git_dir, tag)
    changed = sorted(k for k in emulator_keys
                     if len({repr(d.get(k)) for d in defaults.values()}) > 1 and all(k in d for d in defaults.values()))
    unresolved = sorted(k for k in emulator_keys if not all(k in d for d in defaults.values()))
    print(f"defaults not read in every release (defined in Scala or by expression): {len(unresolved)} keys",
          file=sys.stderr)
    for release in table:
        table[release]["config_defaults"] = {k: defaults[release][k] for k in changed}
    lines = ['"""Kafka releases as the emulator serves them: GENERATED by scripts/derive_kafka_releases.py',
             "from Kafka's sources at each release tag; do not edit (rerun the script).",
             "",
             "Per release: ``tag`` read; ``apis``: api key -> (name, min, max) a broker listener serves",
             "(message JSON ``validVersions``, unstable top versions dropped); ``produce_advertised_min_version``",
             "(KAFKA-18659); ``features``: name -> min/max supported (production) and the level a newly",
             "formatted cluster finalizes (``default``); ``config_defaults``: the broker defaults that differ",
             'between the releases, for the keys the emulator defines."""',
             "from __future__ import annotations", "", "RELEASE_DATA: dict[str, dict[str, object]] = {"]
    for release, data in table.items():
        lines.append(f"    {release!r}: {{")
        lines.append(f"        'tag': {data['tag']!r},")
        lines.append("        'apis': {")
        for key, entry in data["apis"].items():
            lines.append(f"            {key}: {entry!r},")
        lines.append("        },")
        lines.append(f"        'produce_advertised_min_version': {data['produce_advertised_min_version']!r},")
        lines.append(f"        'features': {data['features']!r},")
        lines.append(f"        'config_defaults': {data['config_defaults']!r},")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-git", required=True, help="git directory with Kafka's release tags")
    parser.add_argument("--check", action="store_true", help="compare with the checked-in table")
    args = parser.parse_args()
    sys.path.insert(0, str(OUTPUT.parents[2]))
    from kafka_emu.broker.server.config import KAFKA_CONFIG_DEF
    text = derive(args.kafka_git, set(KAFKA_CONFIG_DEF.defaults()))
    if args.check:
        same = OUTPUT.read_text() == text
        print("kafka_release_data.py matches the sources" if same else "kafka_release_data.py differs: rerun")
        return 0 if same else 1
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
