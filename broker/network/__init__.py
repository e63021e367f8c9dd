"""Kafka's network layer: acceptor and processor threads feeding the broker's RequestChannel."""
from kafka_emu.broker.network.acceptor import Acceptor
from kafka_emu.broker.network.kafka_channel import KafkaChannel
from kafka_emu.broker.network.processor import Processor
from kafka_emu.broker.network.socket_server import BindError, EndPoint, SocketServer, parse_listeners

__all__ = ["Acceptor", "BindError", "EndPoint", "KafkaChannel", "Processor", "SocketServer", "parse_listeners"]
