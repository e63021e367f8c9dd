#!/usr/bin/env bash
# The main job: install, then start a 3-broker in-process cluster with its /metrics endpoint and
# drive a 40 s Spark-generated mixed load at it (producers with acks=all and acks=1, Avro producers
# through the cluster's schema registry, two consumer groups, one with joins, a leave and a crash,
# standalone consumers, admin calls). Prints the Markdown summary and the report folder
# (summary.json, samples.parquet/, PNG charts).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq default-jre-headless >/dev/null
  fi
fi
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e ".[load,registry]"
start=$(date +%s)
kafka-emu load --spec examples/workload.yaml --report-dir "reports/main-$(date -u +%Y%m%d-%H%M%S)" "$@"
echo "main job finished in $(( $(date +%s) - start )) s"
