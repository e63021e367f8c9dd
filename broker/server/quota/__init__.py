"""Client quotas (KIP-13, KIP-124, KIP-257, KIP-546): Kafka's quota managers and their parts.

``stats`` holds the sampled statistics quotas are measured with (Kafka's ``Rate``, ``Avg`` and
``TokenBucket`` from ``org.apache.kafka.common.metrics``, and ``QuotaUtils``'s throttle time);
``throttled_channel`` the delay queue of muted channels and its reaper thread;
``client_quota_manager``, ``client_request_quota_manager`` and
``controller_mutation_quota_manager`` Kafka's three managers; ``quota_factory`` builds one of each
per broker (``QuotaManagers``) and applies the cluster's quota records to them (Kafka's
``QuotaFactory`` and ``ClientQuotaMetadataManager``).
"""
