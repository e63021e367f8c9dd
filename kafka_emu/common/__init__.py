"""Vocabulary every package shares (Kafka's ``org.apache.kafka.common``): the error table, the
generic ``ConfigDef`` and the Java properties reader. Leaf modules: they import nothing of the
project outside this package (``tests/test_layering.py``)."""
