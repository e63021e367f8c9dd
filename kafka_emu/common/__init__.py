"""Vocabulary every package shares (Kafka's ``org.apache.kafka.common``): the error table and the
generic ``ConfigDef``. Leaf modules: they import nothing of the project."""
