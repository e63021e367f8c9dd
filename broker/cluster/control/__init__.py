"""Test control: scripted faults, latency, isolation, leader and coordinator moves, broker time
travel and request recording (``ClusterControl``), from Python and over HTTP (``control_http``)."""
from kafka_emu.broker.cluster.control.control import ClusterControl, ControlRequest, UnknownBrokerError
from kafka_emu.broker.cluster.control.faults import DISCONNECT, ErrorInjection
from kafka_emu.broker.cluster.control.recorder import RequestRecord

__all__ = ["DISCONNECT", "ClusterControl", "ControlRequest", "ErrorInjection",
           "RequestRecord", "UnknownBrokerError"]
