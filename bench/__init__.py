"""Benchmarks and their naive comparators (``kafka-emu bench ...``); not part of the product."""
