#!/usr/bin/env bash
# Installs the project with its test extra (and the system packages the tests use: prometheus, a JRE for
# Spark, chromium for the report.html screenshot), then runs all tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v prometheus >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq prometheus default-jre-headless chromium >/dev/null
  fi
fi
python3 -m pip install -q --disable-pip-version-check -e '.[test]'
python3 -m pytest "$@"
if [ $# -eq 0 ]; then
  # The compiled modules' own suites again, uncompiled (kafka_emu.compiled, setup.py): the code
  # is the same, and both ways of running it must pass.
  KAFKA_EMU_PURE=1 python3 -m pytest tests/broker tests/wire
fi
