"""A broker that cannot bind its port fails to start and leaves nothing running."""
from __future__ import annotations

import errno
import socket
import threading

import pytest

from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.network.socket_server import BindError

pytestmark = pytest.mark.timeout(60)


def test_conflict_broker_startup_with_same_port() -> None:
    """Kafka's ServerStartupTest.testConflictBrokerStartupWithSamePort: starting a broker on a
    port already taken fails with an error naming the address; here also every thread the
    failed broker (and the cluster's first broker) started is stopped again."""
    before = set(threading.enumerate())
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        cluster = EmbeddedCluster(brokers=1, config={"listeners": f"PLAINTEXT://127.0.0.1:{busy}"},
                                  start=False)
        with pytest.raises(BindError) as failure:
            cluster.start()
        cluster.close()
    assert (failure.value.port, failure.value.errno) == (busy, errno.EADDRINUSE)
    assert f"127.0.0.1:{busy}" in str(failure.value)
    for thread in set(threading.enumerate()) - before:
        thread.join(10)
        assert not thread.is_alive(), thread.name
