"""Structured logs: every line is one JSON object carrying the keys people filter on.

Log pipelines (Loki, Elasticsearch, ``jq``) break on a line that is not JSON, and a line without
the thread, broker, request or group context is useless when 3 brokers share one process. The
tests log through real threads (a purgatory's expiration reaper, handler-like threads) and parse
every emitted line.
"""
from __future__ import annotations

import importlib
import argparse
import io
import json
import logging
import threading
import time
from typing import Any, Iterator

import pytest
import structlog

from kafka_emu.logsetup import (add_logging_arguments, bind_thread_context, clear_thread_context,
                              configure_logging, get_logger, group_context, request_context,
                              resolve_settings)
from kafka_emu.timer import DelayedOperationPurgatory

from metrics_support import FakeRequest

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """JSON logging into a buffer for the test; the suite's quiet console set-up afterwards."""
    buffer = io.StringIO()
    configure_logging(level="debug", fmt="json", stream=buffer)
    try:
        yield buffer
    finally:
        clear_thread_context()
        configure_logging(level="warning")


def lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    text = buffer.getvalue()
    assert text.endswith("\n")
    events = [json.loads(line) for line in text.splitlines()]  # every line must be JSON
    for event in events:
        assert {"event", "level", "timestamp", "thread"} <= event.keys()
        assert event["timestamp"].endswith("Z")
    return events


def test_reaper_thread_start_and_death_are_json_with_thread_name(stream: io.StringIO) -> None:
    purgatory = DelayedOperationPurgatory("Produce", broker_id=4)
    purgatory.shutdown()
    events = [e for e in lines(stream) if e.get("thread") == "ExpirationReaper-4-Produce"]
    assert [e["event"] for e in events] == ["thread_started", "thread_stopped"]
    assert events[1]["level"] == "info" and events[1]["reason"] == "shutdown"
    assert events[1]["logger"] == "timer.shutdownable_thread"


def test_request_and_group_context_on_a_handler_thread(stream: io.StringIO) -> None:
    log = get_logger("broker.kafka_apis")

    def handler() -> None:
        bind_thread_context(broker_id=2)
        request = FakeRequest(api_name="JoinGroup", api_version=9, correlation_id=77, client_id="consumer-1")
        with request_context(request):
            with group_context("orders", generation=5, member_id="m-1"):
                log.info("join_group_parked")
            log.info("request_done")
        log.info("idle")

    thread = threading.Thread(target=handler, name="data-plane-kafka-request-handler-3")
    thread.start()
    thread.join(10)
    log.info("main_thread_event")
    parked, done, idle, main = lines(stream)
    assert parked == {**parked, "event": "join_group_parked", "thread": "data-plane-kafka-request-handler-3",
                      "logger": "broker.kafka_apis", "broker_id": 2, "request": "JoinGroup",
                      "api_version": 9, "correlation_id": 77, "client_id": "consumer-1",
                      "group_id": "orders", "generation": 5, "member_id": "m-1", "level": "info"}
    assert done["request"] == "JoinGroup" and "group_id" not in done
    assert idle["broker_id"] == 2 and "request" not in idle and "correlation_id" not in idle
    # Context bound on the handler thread never leaks into another thread.
    assert "broker_id" not in main and main["thread"] == threading.current_thread().name


def test_exceptions_stay_on_one_json_line(stream: io.StringIO) -> None:
    log = structlog.get_logger("broker.request_handler")
    try:
        raise ValueError("bad frame\nwith a newline")
    except ValueError:
        log.exception("request_handling_failed", correlation_id=3)
    (event,) = lines(stream)
    assert event["level"] == "error" and "ValueError: bad frame" in event["exception"]


def test_levels_global_and_per_logger() -> None:
    buffer = io.StringIO()
    try:
        configure_logging(level="warning", fmt="json", stream=buffer,
                          logger_levels={"broker.replica_manager": "debug", "timer": "error"})
        structlog.get_logger("broker.replica_manager.fetch").debug("shown_child_of_debug_logger")
        structlog.get_logger("broker.kafka_apis").info("hidden_by_global_warning")
        structlog.get_logger("broker.kafka_apis").warning("shown_warning")
        structlog.get_logger("timer.purgatory").warning("hidden_by_timer_error")
        structlog.get_logger("timer.purgatory").error("shown_error")
        assert [e["event"] for e in lines(buffer)] == [
            "shown_child_of_debug_logger", "shown_warning", "shown_error"]
    finally:
        configure_logging(level="warning")


def test_settings_precedence_cli_over_config_over_environment() -> None:
    parser = argparse.ArgumentParser()
    add_logging_arguments(parser, default_format="json")
    env = {"KAFKA_EMU_LOG_LEVEL": "error", "KAFKA_EMU_LOG_FORMAT": "console"}
    config = {"log.level": "info", "log.level.coordinator": "debug"}

    settings = resolve_settings(parser.parse_args([]), {}, env={})
    assert (settings.level, settings.fmt, settings.logger_levels) == ("warning", "json", {})
    settings = resolve_settings(parser.parse_args([]), {}, env=env)
    assert (settings.level, settings.fmt) == ("error", "console")
    settings = resolve_settings(parser.parse_args([]), config, env=env)
    assert (settings.level, settings.logger_levels) == ("info", {"coordinator": "debug"})
    args = parser.parse_args(["--log-level", "debug", "--log-format", "json",
                              "--log-logger-level", "coordinator=warning"])
    settings = resolve_settings(args, config, env=env)
    assert (settings.level, settings.fmt, settings.logger_levels) == ("debug", "json", {"coordinator": "warning"})
    with pytest.raises(ValueError):
        resolve_settings(None, {"log.level": "loud"}, env={})


def test_stdlib_logging_is_captured_as_json() -> None:
    buffer = io.StringIO()
    try:
        configure_logging(level="info", fmt="json", stream=buffer, capture_stdlib=True)
        logging.getLogger("kafka.conn").warning("connection to %s failed", "127.0.0.1:9092")
        (event,) = lines(buffer)
        assert event["event"] == "connection to 127.0.0.1:9092 failed"
        assert event["logger"] == "kafka.conn" and event["level"] == "warning"
    finally:
        root = logging.getLogger()
        for handler in list(root.handlers):
            if handler.get_name() == "kafka-emu-structlog":
                root.removeHandler(handler)
        root.setLevel(logging.WARNING)
        configure_logging(level="warning")


@pytest.mark.timeout(60)
def test_a_real_cluster_logs_only_json_lines_with_thread_and_broker(stream: io.StringIO) -> None:
    """Every line a 2-broker cluster writes from start to close (info and up, as ``serve`` runs)
    is one JSON object; broker lifecycle events name their broker and thread."""
    cluster_module = importlib.import_module("kafka_emu.broker.cluster.embedded_cluster")
    configure_logging(level="info", fmt="json", stream=stream)
    cluster = cluster_module.EmbeddedCluster(brokers=2, config={"offsets.topic.replication.factor": 2})
    try:
        cluster.create_topic("audit", partitions=1, replication_factor=2)
        deadline = time.monotonic() + 10
        while cluster.leader_of("audit") < 0:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert cluster.produce("audit", 0, [(b"k", b"v")])[0] == 0
    finally:
        cluster.close()
    events = lines(stream)
    assert len(events) > 10
    started = [e for e in events if e["event"] == "broker_started"]
    assert sorted(e["broker_id"] for e in started) == [0, 1]
    stopped_threads = {e["thread"] for e in events if e["event"] == "thread_stopped"}
    assert {"data-plane-kafka-request-handler-0", "ExpirationReaper-0-Produce",
            "ExpirationReaper-1-Fetch"} <= stopped_threads
    assert all(e["logger"] for e in events)
