"""The admin schedule of a load run: topic creation and deletion, listings and descriptions.

Admin requests go through the controller and the group coordinator while produce and fetch
traffic is running, which is where an emulator's locking shows; each records its latency.
"""
from __future__ import annotations

import threading
import time
from typing import Any

from kafka_emu.loadgen.pacing import wait_until
from kafka_emu.loadgen.samples import SampleSink

TIMEOUT_S = 15.0


def _error_name(exc: BaseException) -> str:
    arg = exc.args[0] if exc.args else None
    name = getattr(arg, "name", None)
    return name() if callable(name) else type(exc).__name__


def run_admin(params: dict[str, Any], bootstrap: str, t0: float, start_s: float, stop_s: float,
              sink: SampleSink, stop_event: threading.Event) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": sink.task})
    for action in params["actions"]:
        if not wait_until(t0 + action["at_s"], stop_event):
            return
        name = action["action"]
        started = time.perf_counter()
        try:
            if name == "create_topic":
                futures = admin.create_topics([NewTopic(action["topic"], action["partitions"],
                                                        action["replication_factor"])], request_timeout=TIMEOUT_S)
                for f in futures.values():
                    f.result(TIMEOUT_S)
            elif name == "delete_topic":
                for f in admin.delete_topics([action["topic"]], request_timeout=TIMEOUT_S).values():
                    f.result(TIMEOUT_S)
            elif name == "list_topics":
                admin.list_topics(timeout=TIMEOUT_S)
            elif name == "describe_cluster":
                admin.describe_cluster(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
            elif name == "list_groups":
                admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
            elif name == "describe_groups":
                for f in admin.describe_consumer_groups([action["group"]], request_timeout=TIMEOUT_S).values():
                    f.result(TIMEOUT_S)
            error = ""
        except Exception as exc:
            error = _error_name(exc)
        sink.add(f"admin:{name}", (time.perf_counter() - started) * 1000.0, error=error,
                 topic=action.get("topic"), detail=action.get("group"))
