"""report.html in a real browser: headless Chromium renders the page with its charts.

The page is built from a small run's samples (no Spark needed), rendered to a PNG, and the PNG
must exist and not be blank: several distinct colours, and a good share of non-white pixels
(the tables' text and the four charts).
"""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from kafka_emu.loadgen.report import build_report, write_summary

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/test.sh installs it)")]


def screenshot(page, png, profile) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
         "--hide-scrollbars", "--window-size=1100,2600", f"--screenshot={png}", page.as_uri()],
        capture_output=True, text=True, timeout=90)


def test_report_html_renders_in_headless_chromium(known_samples, tmp_path):
    out = tmp_path / "report"
    summary = build_report(known_samples, out, {"run_id": "html", "target": "x", "master": "local[2]"},
                           {"g": ["t"], "consumer:c": ["t"]})
    write_summary(summary, out)
    png = tmp_path / "report.png"
    proc = screenshot(out / "report.html", png, tmp_path / "profile")
    assert png.exists(), proc.stderr[-1500:]
    px = np.asarray(Image.open(png).convert("RGB"))
    assert px.shape[0] >= 2000 and px.shape[1] >= 1000
    non_white = (px.sum(axis=2) < 720).mean()
    colours = len(np.unique(px.reshape(-1, 3)[::7], axis=0))
    assert non_white > 0.05, non_white     # text, tables and the charts' lines and bars
    assert colours > 50, colours           # the charts' colours, not a blank or single-colour page
