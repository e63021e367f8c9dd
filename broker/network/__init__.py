"""Kafka's network layer: acceptor and processor threads feeding the broker's RequestChannel."""
from kafka_emu.broker.network.socket_server import Acceptor, BindError, EndPoint, KafkaChannel, Processor, SocketServer, parse_listeners

__all__ = ["Acceptor", "BindError", "EndPoint", "KafkaChannel", "Processor", "SocketServer", "parse_listeners"]
