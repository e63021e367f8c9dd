"""``kafka-emu load --advertised-host``: the embedded cluster is reachable at a non-loopback address.

Executors on other machines connect to what the brokers advertise, so with an advertised host
every broker in the metadata must carry that host, and a client given only that address works.
"""
from __future__ import annotations

import socket

import pytest

from kafka_emu.loadgen.load import embedded_config
from kafka_emu.loadgen.target import check_reachable, open_target

pytestmark = pytest.mark.timeout(60)


def _outbound_address() -> str | None:
    """This machine's address on its default route (no packet is sent by a UDP connect)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


def test_advertised_host_is_what_clients_get():
    host = _outbound_address()
    if host is None:
        pytest.skip(reason="this machine has no non-loopback IPv4 address to advertise")
    from confluent_kafka.admin import AdminClient

    with open_target(None, brokers=2, config=embedded_config(host)) as target:
        assert all(b.startswith(f"{host}:") for b in target.bootstrap.split(","))
        assert check_reachable(target.bootstrap, 10) == 2
        brokers = AdminClient({"bootstrap.servers": target.bootstrap}).list_topics(timeout=10).brokers
        assert {b.host for b in brokers.values()} == {host}


def test_no_advertised_host_keeps_the_defaults():
    assert embedded_config(None) == {}
