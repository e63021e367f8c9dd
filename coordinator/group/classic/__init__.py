"""The classic group type (JoinGroup/SyncGroup/Heartbeat/LeaveGroup): the group and member state
machines and the delayed operations of a rebalance (DelayedJoin, InitialDelayedJoin, DelayedSync,
DelayedHeartbeat)."""
