"""The log layer (Kafka's ``storage`` module): ``UnifiedLog`` and its segments, indexes and
checkpoints, the LogValidator, producer state and transaction indexes, retention and compaction
(``LogManager``, ``LogCleaner``), and the on-disk layout.

It imports nothing of the server, the network layer or the front ends (``tests/test_layering.py``):
what it needs from them (the broker's defaults, the metadata store, a scheduler) it is handed.
"""
