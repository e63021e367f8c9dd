"""Entry point of a group member that will be crashed: ``python -m loadgen.member_child <json>``.

Only a separate process can die without a LeaveGroup and without its heartbeat thread going on,
which is what a crash means to the coordinator.
"""
from __future__ import annotations

import json
import sys
import threading


def main() -> int:
    from kafka_emu.loadgen.consumer_task import StreamSink, run_member

    job = json.loads(sys.argv[1])
    sink = StreamSink(job["task"], job["client"], job["params"]["group"]["group_id"], job["params"]["member"])
    run_member(job["params"], job["bootstrap"], job["t0"], job["start_s"], job["stop_s"], sink, threading.Event())
    return 0


if __name__ == "__main__":
    sys.exit(main())
