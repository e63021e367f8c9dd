"""Load generation and stress testing for kafka-emu.

``kafka-emu load`` (``loadgen.load``): a workload spec (``spec``/``spec_cli``) becomes a task
table (``tasks``) that Spark runs as one barrier stage (``driver``, ``executor``): each Spark
partition runs its producers (``producer_task``), consumers and group members
(``consumer_task``, ``consumer_clients``, ``member_child`` for members that crash) and admin
calls (``admin_task``) with real clients, returning one sample row per request outcome
(``samples``). The driver aggregates them with Spark (``aggregate``) into a report folder
(``report``, ``charts``), watching progress from the cluster's high watermarks
(``live_progress``); ``target`` starts the embedded cluster or checks an external one.

``kafka-emu stress purgatory|rebalance|replication``: ``stress_*`` with a shared verdict table
(``verdict``); rebalance members run as processes (``stress_member``).
"""
