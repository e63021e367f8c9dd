"""The log layer (Kafka's ``storage`` module): ``UnifiedLog`` and its segments, indexes and
checkpoints, the LogValidator, producer state and transaction indexes, retention and compaction
(``LogManager``, ``LogCleaner``), and the on-disk layout.

It imports only the common vocabulary, the timer package, logging and the record formats of
``broker.protocol`` (``tests/test_layering.py``), never the server, the network layer or the front
ends. What it needs of them it is handed, typed by small Protocols declared beside their use: the
broker's configuration (``log_config.BrokerConfig``: ``KafkaConfig`` is one; the log layer's own
broker keys are defined in ``log_config`` and included in ``KafkaConfig``'s table, as Kafka's
``ServerLogConfigs``), the controller's state (``log_manager.ClusterMetadata``,
``log_dirs.ControllerState``: the ``MetadataStore``) and a ``kafka_emu.timer.scheduler.KafkaScheduler``.
"""
