"""Shared fixtures of the load tests: one Spark session for the whole run (it takes 5-15 s to start)."""
from __future__ import annotations

from typing import Any, Iterator

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from kafka_emu.loadgen.spark_session import start_session

    session = start_session("local[2]", app_name="kafka-emu-tests")
    try:
        yield session
    finally:
        session.stop()
