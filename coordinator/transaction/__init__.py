"""The transaction coordinator (Kafka's ``kafka.coordinator.transaction``): transactional ids'
state in ``__transaction_state``, InitProducerId/AddPartitionsToTxn/EndTxn, and the marker channel
that writes COMMIT/ABORT markers to the partitions of a finished transaction.

Never imports ``broker``: it reaches ``__transaction_state`` through ``CoordinatorLog`` and the
partition leaders through ``TxnMarkerSender``.
"""
from kafka_emu.coordinator.transaction.config import TRANSACTION_STATE_TOPIC, TransactionConfig
from kafka_emu.coordinator.transaction.transaction_coordinator import (
    InitProducerIdResult, TransactionCoordinator, TransactionCoordinatorSnapshot, TransactionDescription,
)
from kafka_emu.coordinator.transaction.transaction_marker_channel_manager import (
    TransactionMarkerChannelManager, TxnMarkerSender,
)
from kafka_emu.coordinator.transaction.transaction_metadata import (
    TransactionMetadata, TransactionState, TxnTransitMetadata,
)
from kafka_emu.coordinator.transaction.transaction_state_manager import TransactionStateManager

__all__ = [
    "InitProducerIdResult", "TRANSACTION_STATE_TOPIC", "TransactionConfig", "TransactionCoordinator",
    "TransactionCoordinatorSnapshot", "TransactionDescription", "TransactionMarkerChannelManager",
    "TransactionMetadata", "TransactionState", "TransactionStateManager", "TxnMarkerSender",
    "TxnTransitMetadata",
]
