"""Wire tests: real Kafka clients against an in-process cluster over loopback.

The cluster fixtures come from the ``broker.fixture`` pytest plugin. Installed packages register
it through the ``pytest11`` entry point; importing them here keeps these tests working from a
source checkout where the entry point is not installed (a conftest definition simply shadows
the plugin's identical one).
"""
from __future__ import annotations

from kafka_emu.broker.fixture import kafka_bootstrap, kafka_cluster, kafka_cluster_config, pytest_configure  # noqa: F401

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
