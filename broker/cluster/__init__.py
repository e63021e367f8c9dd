"""The front ends: the in-process ``EmbeddedCluster``, its pytest plugin (``fixture``), ``kafka-emu
serve``, the in-process client and test control (``control``: faults, interception, recording,
time travel). They assemble and drive brokers; nothing below them imports them."""
