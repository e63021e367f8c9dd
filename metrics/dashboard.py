"""The Grafana dashboard (dashboards/kafka-emu.json), built from code.

Hand-edited dashboard JSON drifts from the metric names; building it here lets a test check
that every PromQL expression references only series from ``metrics.names`` and that the
committed file is what this module produces. Regenerate with::

    python -m kafka_emu.metrics.dashboard > dashboards/kafka-emu.json

Variables: ``datasource`` (any Prometheus), ``job`` and ``broker`` (multi-select over
``broker_id``), ``request`` (the request type for the latency breakdown panel).
"""
from __future__ import annotations

import json
import sys
from typing import Any

UID = "kafka-emu-overview"
SEL = 'job=~"$job",broker_id=~"$broker"'
RI = "$__rate_interval"


def _target(expr: str, legend: str, ref: str) -> dict[str, Any]:
    return {"datasource": {"type": "prometheus", "uid": "${datasource}"}, "expr": expr,
            "legendFormat": legend, "refId": ref, "range": True}


class _Layout:
    """Places panels on Grafana's 24-column grid, row by row."""

    def __init__(self) -> None:
        self.panels: list[dict[str, Any]] = []
        self._y = 0
        self._x = 0
        self._row_h = 0
        self._id = 0

    def row(self, title: str) -> None:
        self._newline()
        self._id += 1
        self.panels.append({"type": "row", "title": title, "id": self._id, "collapsed": False,
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self._y}, "panels": []})
        self._y += 1

    def _newline(self) -> None:
        if self._x:
            self._y += self._row_h
            self._x = 0
            self._row_h = 0

    def panel(self, title: str, description: str, targets: list[tuple[str, str]], unit: str = "short",
              w: int = 8, h: int = 8, kind: str = "timeseries", stack: bool = False,
              thresholds: list[tuple[float, str]] | None = None) -> None:
        if self._x + w > 24:
            self._newline()
        self._id += 1
        custom: dict[str, Any] = {}
        if kind == "timeseries":
            custom = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10 if not stack else 40,
                      "showPoints": "never", "stacking": {"mode": "normal" if stack else "none", "group": "A"}}
        steps = [{"color": "green", "value": None}]
        steps += [{"color": color, "value": value} for value, color in (thresholds or [])]
        panel = {
            "id": self._id, "type": kind, "title": title, "description": description,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": h, "w": w, "x": self._x, "y": self._y},
            "fieldConfig": {"defaults": {"unit": unit, "custom": custom,
                                         "thresholds": {"mode": "absolute", "steps": steps}},
                            "overrides": []},
            "options": ({"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                         "tooltip": {"mode": "multi", "sort": "desc"}} if kind == "timeseries" else
                        {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                         "colorMode": "background", "graphMode": "area", "textMode": "auto"}),
            "targets": [_target(expr, legend, chr(ord("A") + i)) for i, (expr, legend) in enumerate(targets)],
        }
        self.panels.append(panel)
        self._x += w
        self._row_h = max(self._row_h, h)


def _variable(name: str, label: str, query: str, multi: bool = True, include_all: bool = True) -> dict[str, Any]:
    return {"name": name, "label": label, "type": "query",
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "query": {"query": query, "refId": f"{name}-var"}, "definition": query,
            "refresh": 2, "multi": multi, "includeAll": include_all, "sort": 1,
            "current": {"selected": True, "text": ["All"] if include_all else [], "value": ["$__all"] if include_all else []},
            "options": [], "hide": 0}


def build() -> dict[str, Any]:
    """The dashboard model (Grafana schema 38, Grafana 10+)."""
    L = _Layout()

    L.row("Requests")
    L.panel("Request rate by type", "Requests completed per second (RequestsPerSec), by API. "
            "Fetch also appears as FetchConsumer/FetchFollower.",
            [(f'sum by (request) (rate(kafka_network_requestmetrics_requestspersec_total{{{SEL}}}[{RI}]))',
              "{{request}}")], unit="reqps")
    L.panel("Request latency p99 by type", "99th percentile of TotalTimeMs per API over all selected brokers.",
            [(f'histogram_quantile(0.99, sum by (request, le) (rate(kafka_network_requestmetrics_totaltimems_bucket{{{SEL}}}[{RI}])))',
              "{{request}} p99")], unit="ms")
    L.panel("Request latency p50 by type", "Median TotalTimeMs per API.",
            [(f'histogram_quantile(0.5, sum by (request, le) (rate(kafka_network_requestmetrics_totaltimems_bucket{{{SEL}}}[{RI}])))',
              "{{request}} p50")], unit="ms")
    phases = [("requestqueuetimems", "request queue"), ("localtimems", "local"), ("remotetimems", "remote (purgatory)"),
              ("responsequeuetimems", "response queue"), ("responsesendtimems", "send")]
    L.panel("Where $request time goes (mean per phase)",
            "Mean time per request phase for the selected request type: queue wait, handler work, "
            "waiting in a purgatory for other brokers/members, response queue and send.",
            [(f'sum(rate(kafka_network_requestmetrics_{m}_sum{{{SEL},request="$request"}}[{RI}])) / '
              f'sum(rate(kafka_network_requestmetrics_{m}_count{{{SEL},request="$request"}}[{RI}]))', legend)
             for m, legend in phases], unit="ms", w=12, stack=True)
    L.panel("Request queue and thread idleness",
            "Requests waiting for a handler thread, and the idle fraction of handler and network threads "
            "(low idle = saturated broker).",
            [(f'kafka_network_requestchannel_requestqueuesize{{{SEL}}}', "queue broker {{broker_id}}"),
             (f'kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent{{{SEL}}} * 100',
              "handler idle % broker {{broker_id}}"),
             (f'kafka_network_socketserver_networkprocessoravgidlepercent{{{SEL}}} * 100',
              "network idle % broker {{broker_id}}")], w=12)
    L.panel("Errors per second by request and error",
            "Error codes in responses (ErrorsPerSec), NONE left out: what clients are being told.",
            [(f'sum by (request, error) (rate(kafka_network_requestmetrics_errorspersec_total{{{SEL},error!="NONE"}}[{RI}]))',
              "{{request}} {{error}}")], unit="ops", w=24)

    L.row("Purgatories and timers")
    L.panel("Delayed operations waiting (NumDelayedOperations)",
            "Operations parked in each purgatory's timer: acks=all produces waiting for the ISR, "
            "fetches waiting for data, joins/syncs waiting for members, heartbeats awaiting expiry.",
            [(f'sum by (delayedOperation) (kafka_server_delayedoperationpurgatory_numdelayedoperations{{{SEL}}})',
              "{{delayedOperation}}")], w=8)
    L.panel("Purgatory size (watched, incl. completed not yet purged)",
            "PurgatorySize: operations on watcher lists, counted once per key; much larger than "
            "NumDelayedOperations means completed operations await the reaper's purge.",
            [(f'sum by (delayedOperation) (kafka_server_delayedoperationpurgatory_purgatorysize{{{SEL}}})',
              "{{delayedOperation}}")], w=8)
    L.panel("Delayed operation expirations per second",
            "Timeouts: produce (ISR did not acknowledge in time), fetch by fetcher type, and every purgatory.",
            [(f'sum(rate(kafka_server_delayedproducemetrics_expirespersec_total{{{SEL}}}[{RI}]))', "produce"),
             (f'sum by (fetcherType) (rate(kafka_server_delayedfetchmetrics_expirespersec_total{{{SEL}}}[{RI}]))',
              "fetch {{fetcherType}}"),
             (f'sum by (delayedOperation) (rate(kafka_emu_purgatory_expirations_total{{{SEL}}}[{RI}]))',
              "{{delayedOperation}} (all)")], unit="ops", w=8)
    L.panel("Timer pending tasks", "Tasks linked in each timing-wheel timer.",
            [(f'sum by (timer) (kafka_emu_timer_pendingtasks{{{SEL}}})', "{{timer}}")], w=12)
    L.panel("Purges per second", "Purges of completed operations by the expiration reapers.",
            [(f'sum by (delayedOperation) (rate(kafka_emu_purgatory_purges_total{{{SEL}}}[{RI}]))',
              "{{delayedOperation}}")], unit="ops", w=12)

    L.row("Replication")
    L.panel("Under-replicated partitions", "Partitions whose ISR is smaller than their replica set "
            "(should be 0 in a healthy cluster).",
            [(f'sum(kafka_server_replicamanager_underreplicatedpartitions{{{SEL}}})', "under-replicated")],
            w=4, kind="stat", thresholds=[(1, "red")])
    L.panel("Under min ISR", "Partitions whose ISR is below min.insync.replicas (acks=all fails).",
            [(f'sum(kafka_server_replicamanager_underminisrpartitioncount{{{SEL}}})', "under min ISR")],
            w=4, kind="stat", thresholds=[(1, "red")])
    L.panel("Under-replicated partitions by broker", "UnderReplicatedPartitions per leader broker.",
            [(f'kafka_server_replicamanager_underreplicatedpartitions{{{SEL}}}', "broker {{broker_id}}")], w=8)
    L.panel("ISR shrinks and expands per second", "IsrShrinksPerSec / IsrExpandsPerSec.",
            [(f'sum by (broker_id) (rate(kafka_server_replicamanager_isrshrinkspersec_total{{{SEL}}}[{RI}]))',
              "shrinks broker {{broker_id}}"),
             (f'sum by (broker_id) (rate(kafka_server_replicamanager_isrexpandspersec_total{{{SEL}}}[{RI}]))',
              "expands broker {{broker_id}}")], unit="ops", w=8)
    L.panel("Messages in per second by topic", "MessagesInPerSec per topic, over the selected leaders.",
            [(f'sum by (topic) (rate(kafka_server_brokertopicmetrics_messagesinpersec_total{{{SEL}}}[{RI}]))',
              "{{topic}}")], unit="ops", w=8)
    L.panel("Bytes in / out per second", "BytesInPerSec (produce) and BytesOutPerSec (consumer fetch).",
            [(f'sum(rate(kafka_server_brokertopicmetrics_bytesinpersec_total{{{SEL}}}[{RI}]))', "in"),
             (f'sum(rate(kafka_server_brokertopicmetrics_bytesoutpersec_total{{{SEL}}}[{RI}]))', "out")],
            unit="Bps", w=8)
    L.panel("Failed produce / fetch per second by topic",
            "FailedProduceRequestsPerSec and FailedFetchRequestsPerSec: unexpected partition failures "
            "(not the routine not-leader or unknown-partition answers).",
            [(f'sum by (topic) (rate(kafka_server_brokertopicmetrics_failedproducerequestspersec_total{{{SEL}}}[{RI}]))',
              "produce {{topic}}"),
             (f'sum by (topic) (rate(kafka_server_brokertopicmetrics_failedfetchrequestspersec_total{{{SEL}}}[{RI}]))',
              "fetch {{topic}}")], unit="ops", w=8)

    L.row("Group coordinator")
    states = ["preparingrebalance", "completingrebalance", "stable", "empty", "dead"]
    L.panel("Groups by state", "Classic groups per state over the selected coordinators.",
            [(f'sum(kafka_coordinator_group_groupmetadatamanager_numgroups{s}{{{SEL}}})', s) for s in states],
            w=8, stack=True)
    L.panel("Rebalances per second", "Classic rebalances started (entered PreparingRebalance) and completed; "
            "consumer-protocol (KIP-848) group epoch bumps.",
            [(f'sum(rate(kafka_emu_coordinator_rebalances_started_total{{{SEL}}}[{RI}]))', "classic started"),
             (f'sum(rate(kafka_server_group_coordinator_metrics_group_completed_rebalance_total{{{SEL}}}[{RI}]))',
              "classic completed"),
             (f'sum(rate(kafka_server_group_coordinator_metrics_consumer_group_rebalance_total{{{SEL}}}[{RI}]))',
              "consumer protocol")], unit="ops", w=8)
    L.panel("Rebalance time", "Mean rebalance duration over the window, and the longest seen.",
            [(f'sum(rate(kafka_emu_coordinator_rebalance_time_ms_sum{{{SEL}}}[{RI}])) / '
              f'sum(rate(kafka_emu_coordinator_rebalance_time_ms_count{{{SEL}}}[{RI}]))', "mean"),
             (f'max(kafka_emu_coordinator_rebalance_time_ms_max{{{SEL}}})', "max")], unit="ms", w=8)
    L.panel("Consumer-protocol groups by state", "KIP-848 groups per state over the selected coordinators.",
            [(f'sum by (state) (kafka_server_group_coordinator_metrics_consumer_group_count{{{SEL}}})', "{{state}}")],
            w=12, stack=True)
    L.panel("Groups by protocol", "Groups loaded by the selected coordinators, classic and consumer protocol.",
            [(f'sum by (protocol) (kafka_server_group_coordinator_metrics_group_count{{{SEL}}})', "{{protocol}}")],
            w=12, stack=True)
    L.panel("Members and offsets", "Group members and committed offsets held by the coordinators.",
            [(f'sum(kafka_emu_coordinator_members{{{SEL}}})', "members"),
             (f'sum(kafka_coordinator_group_groupmetadatamanager_numoffsets{{{SEL}}})', "offsets")], w=12)
    L.panel("Heartbeat expirations per second", "Members removed because their session timed out.",
            [(f'sum(rate(kafka_emu_coordinator_heartbeat_expirations_total{{{SEL}}}[{RI}]))', "expired sessions")],
            unit="ops", w=12)
    L.panel("Consumer group lag", "High watermark minus committed offset, summed per group and topic "
            "(kafka-exporter's kafka_consumergroup_lag).",
            [(f'sum by (consumergroup, topic) (kafka_consumergroup_lag{{{SEL}}})', "{{consumergroup}} {{topic}}")],
            w=24)

    L.row("Schema registry")
    job = 'job=~"$job"'   # one registry per cluster: no broker_id
    L.panel("Registry requests per second", "Schema registry requests answered, by route and HTTP status "
            "(serializers register and look up schemas; deserializers fetch them by id).",
            [(f'sum by (method, endpoint, status) (rate(kafka_emu_schema_registry_requests_total{{{job}}}[{RI}]))',
              "{{method}} {{endpoint}} {{status}}")], unit="reqps", w=8)
    L.panel("Registry mean request time", "Seconds spent answering per request, by route, over the window.",
            [(f'sum by (method, endpoint) (rate(kafka_emu_schema_registry_request_seconds_total{{{job}}}[{RI}])) / '
              f'sum by (method, endpoint) (rate(kafka_emu_schema_registry_requests_total{{{job}}}[{RI}]))',
              "{{method}} {{endpoint}}")], unit="s", w=8)
    L.panel("Registry contents", "Live subjects and versions, and distinct schema ids per type.",
            [(f'kafka_emu_schema_registry_subjects{{{job}}}', "subjects"),
             (f'kafka_emu_schema_registry_versions{{{job}}}', "versions"),
             (f'kafka_emu_schema_registry_schemas{{{job}}}', "{{schema_type}} schemas")], w=8)

    return {
        "uid": UID,
        "title": "kafka-emu",
        "description": "kafka-emu brokers and group coordinators: requests, purgatories, replication, "
                       "rebalances (series named after Kafka's JMX metrics; see docs/metrics.md).",
        "tags": ["kafka", "kafka-emu"],
        "schemaVersion": 38,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "refresh": "5s",
        "time": {"from": "now-15m", "to": "now"},
        "timezone": "utc",
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
             "current": {}, "hide": 0, "refresh": 1, "options": []},
            _variable("job", "Job", "label_values(kafka_network_requestmetrics_requestspersec_total, job)"),
            _variable("broker", "Broker", "label_values(kafka_network_requestmetrics_requestspersec_total{job=~\"$job\"}, broker_id)"),
            _variable("request", "Request type",
                      "label_values(kafka_network_requestmetrics_totaltimems_count{job=~\"$job\"}, request)",
                      multi=False, include_all=False),
        ]},
        "annotations": {"list": []},
        "panels": L.panels,
    }


def expressions(model: dict[str, Any]) -> list[str]:
    """Every PromQL expression of the dashboard's panels."""
    return [t["expr"] for p in model["panels"] for t in p.get("targets", [])]


def render() -> str:
    return json.dumps(build(), indent=2, sort_keys=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
