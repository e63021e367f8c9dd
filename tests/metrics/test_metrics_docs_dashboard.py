"""The catalogue, docs/metrics.md and the Grafana dashboard agree with each other.

A series renamed in code but not in the dashboard shows up as an empty panel only when someone
needs it; these checks make that a test failure instead.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kafka_emu.metrics import dashboard, names

pytestmark = pytest.mark.timeout(30)

ROOT = Path(__file__).resolve().parents[2]
SUFFIXES = ("_total", "_bucket", "_sum", "_count")


def known_sample_names() -> set[str]:
    known: set[str] = set()
    for spec in names.ALL:
        known.add(spec.name)
        known.update(spec.name + suffix for suffix in SUFFIXES)
    return known


def test_every_series_is_documented() -> None:
    doc = (ROOT / "docs" / "metrics.md").read_text()
    missing = [spec.name for spec in names.ALL if f"`{spec.name}" not in doc]
    assert not missing, f"not in docs/metrics.md: {missing}"
    documented = set(re.findall(r"`(kafka_[a-z_]*[a-z])`", doc))
    unknown = sorted(n for n in documented if n not in known_sample_names())
    assert not unknown, f"docs/metrics.md names series that do not exist: {unknown}"


def test_catalogue_is_consistent() -> None:
    assert len(names.BY_NAME) == len(names.ALL), "duplicate family name"
    for spec in names.ALL:
        assert re.fullmatch(r"kafka_[a-z_]+", spec.name), spec.name
        assert not spec.name.endswith("_total"), "counter family names omit _total"
        assert "broker_id" not in spec.labels


def test_committed_dashboard_is_the_generated_one() -> None:
    committed = (ROOT / "dashboards" / "kafka-emu.json").read_text()
    assert committed == dashboard.render(), "regenerate: python -m kafka_emu.metrics.dashboard > dashboards/kafka-emu.json"


def test_dashboard_only_uses_known_series_and_covers_the_key_ones() -> None:
    model = json.loads((ROOT / "dashboards" / "kafka-emu.json").read_text())
    exprs = dashboard.expressions(model) + [v["query"]["query"] for v in model["templating"]["list"]
                                      if isinstance(v.get("query"), dict)]
    used = {m for e in exprs for m in re.findall(r"\b(kafka_[a-z_]+)", e)}
    assert used <= known_sample_names(), sorted(used - known_sample_names())
    for required in ("kafka_network_requestmetrics_requestspersec_total",
                     "kafka_network_requestmetrics_totaltimems_bucket",
                     "kafka_server_delayedoperationpurgatory_purgatorysize",
                     "kafka_server_delayedoperationpurgatory_numdelayedoperations",
                     "kafka_server_replicamanager_underreplicatedpartitions",
                     "kafka_server_group_coordinator_metrics_group_completed_rebalance_total"):
        assert required in used
    ids = [p["id"] for p in model["panels"]]
    assert len(ids) == len(set(ids))
    for panel in model["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24
