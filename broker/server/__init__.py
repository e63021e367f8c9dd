"""The broker (Kafka's ``kafka.server``): ``KafkaServer`` and its configuration, ``KafkaApis`` and
the request handler pool, ``ReplicaManager`` with partitions, replica fetchers, fetch sessions and
the delayed operations (produce, fetch, delete records), the metadata store and the scheduler."""
