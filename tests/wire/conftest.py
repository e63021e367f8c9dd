"""Wire tests: real Kafka clients against an in-process cluster over loopback.

The cluster fixtures come from the ``kafka_emu.broker.cluster.fixture`` pytest plugin, registered by the
``pytest11`` entry point of the installed package (``kafka_emu.broker`` is importable only once
the package is installed, editable or not), exactly as users get it.
"""
from __future__ import annotations

import os

if os.environ.get("KAFKA_EMU_WIRE_LOG"):
    # Debugging aid: send the emulator's info-level events to a file for post-mortems.
    from kafka_emu.logsetup import configure_logging

    configure_logging(level="info", stream=open(os.environ["KAFKA_EMU_WIRE_LOG"], "a"))  # noqa: SIM115
    import logging

    _handler = logging.FileHandler(os.environ["KAFKA_EMU_WIRE_LOG"] + ".clients")
    _handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s"))
    logging.getLogger("kafka").addHandler(_handler)
    logging.getLogger("kafka").setLevel(logging.DEBUG)
    logging.getLogger("aiokafka").addHandler(_handler)
    logging.getLogger("aiokafka").setLevel(logging.DEBUG)
