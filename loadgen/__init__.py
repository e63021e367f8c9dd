"""Load generation and stress testing for kafka-emu.

``kafka-emu load`` (``loadgen.load``): a workload spec (``spec``/``spec_cli``) becomes a task
table (``tasks``) that Spark runs as one barrier stage (``driver``, ``executor``): each Spark
partition runs its producers (``producer_task``), consumers and group members
(``consumer_task``, ``consumer_clients``, ``member_child`` for members that crash) and admin
calls (``admin_task``) with real clients, returning one sample row per request outcome
(``samples``) and sending live counts to the driver (``live_stats``, shown by
``live_progress``). The driver collects the samples once as Arrow and aggregates them
(``aggregate``) into a report folder (``report``, ``charts``); ``target`` starts the embedded
cluster or checks an external one. A ``ramp`` runs one stage per step of offered rate until a
limit is crossed (``ramp``, ``ramp_report``); ``standalone`` runs a local Spark standalone
master and workers.

``kafka-emu stress purgatory|rebalance|replication``: ``stress_*`` with a shared verdict table
(``verdict``); rebalance members run as processes (``stress_member``).
"""
