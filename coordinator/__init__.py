"""The coordinators: groups (``group``: the group coordinator, its group types and offsets) and
transactions (``transaction``), over ``CoordinatorLog`` (``coordinator_log``), the one way they
reach their internal topics.

Never imports ``broker``: the broker injects the logs and the partition leaders they need.
"""
