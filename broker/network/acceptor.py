"""Acceptor: the thread that accepts a listener's connections (Kafka's ``Acceptor``)."""
from __future__ import annotations

import errno
import selectors
import socket
from typing import TYPE_CHECKING

import structlog

from kafka_emu.broker.network.processor import Processor
from kafka_emu.timer.shutdownable_thread import ShutdownableThread

if TYPE_CHECKING:
    from kafka_emu.broker.network.socket_server import EndPoint, SocketServer

_log = structlog.get_logger("broker.network")


class Acceptor(ShutdownableThread):
    """Accepts connections on one listener and deals them round robin to its processors.

    Threading: the listening socket and ``_selector`` belong to this thread; shutdown wakes it
    through ``_wake_w``.
    """

    def __init__(self, server: "SocketServer", endpoint: EndPoint, listen_sock: socket.socket,
                 processors: list[Processor]) -> None:
        super().__init__(f"data-plane-kafka-socket-acceptor-{endpoint.listener_name}-{endpoint.port}",
                         log_context={"broker_id": server.broker_id})
        self.server = server
        self.endpoint = endpoint
        self.listen_sock = listen_sock
        self.processors = processors
        self._next = 0
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(listen_sock, selectors.EVENT_READ, "accept")
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        self.accepted = 0

    def on_initiate_shutdown(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass

    def do_work(self) -> None:
        for key, _ in self._selector.select(0.5):
            if key.data == "wake":
                return
            while True:
                try:
                    sock, addr = self.listen_sock.accept()
                except (BlockingIOError, InterruptedError):
                    break
                except OSError as exc:
                    if exc.errno in (errno.EMFILE, errno.ENFILE):
                        _log.warning("accept_failed", broker_id=self.server.broker_id, reason=repr(exc))
                        self._shutdown_initiated.wait(0.05)
                    break
                self.accepted += 1
                processor = self.processors[self._next % len(self.processors)]
                self._next += 1
                processor.accept(sock, addr)

    def run(self) -> None:
        try:
            super().run()
        finally:
            for s in (self.listen_sock, self._wake_r, self._wake_w):
                try:
                    s.close()
                except OSError:
                    pass
            try:
                self._selector.close()
            except OSError:
                pass
