#!/usr/bin/env bash
# Installs the project, then runs the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -e .
kafka-emu bench timer
kafka-emu bench purgatory --num 200000 --rate 25000 --timeout 200 --pct75 60 --pct50 20
