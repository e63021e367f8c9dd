"""DelayedOperationPurgatory: where delayed operations wait for a trigger or their timeout.

Each operation is watched under one or more keys (for example every partition a produce writes
to). A trigger on a key (``check_and_complete``) tries to complete the operations watched under
it; the timer completes the rest when they time out. The design is Kafka's since the 2015
redesign (KAFKA-1989) with the later refinements:

* 512 watcher shards (KAFKA-6431); a key maps to ``hash(key) % 512``. Each shard has its own lock
  guarding its key→Watchers map (creation, lookup and removal of entries), so triggers on
  different keys rarely contend. A Watchers list itself is an insertion-ordered dict used as a
  set: appends and removals are atomic under the GIL and iteration works on a snapshot, which is
  what Kafka gets from a ``ConcurrentLinkedQueue``.
* ``try_complete_else_watch`` holds the operation lock across "try, watch on every key, try
  again" (KAFKA-8334), so a trigger that fires between the two tries cannot be missed.
* A completed operation stays in the watcher lists of keys that did not trigger it. Rather than
  scanning after every completion, the purgatory keeps an *estimate* of watched operations
  (incremented once per watched operation) and, when ``estimate - num_delayed`` exceeds
  ``purge_interval``, resets the estimate to ``num_delayed`` and purges completed operations from
  every list. The expiration reaper thread does this after each ``advance_clock(200)``.

Counters for metrics (``expiration_count``, ``purge_count``) have a single writer each (the
timer's executor thread and the reaper thread) and are read without locks. ``watched()`` and
``num_delayed()`` never hold more than one shard lock at a time, so scraping them never blocks
request handling.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Generic, Hashable, Iterable, TypeVar

import structlog

from kafka_emu.timer.delayed_operation import DelayedOperation
from kafka_emu.timer.shutdownable_thread import ShutdownableThread
from kafka_emu.timer.system_timer import SystemTimer, Timer, TimerSnapshot
from kafka_emu.timer.time import Time

T = TypeVar("T", bound=DelayedOperation)

SHARDS = 512

_log = structlog.get_logger("timer.purgatory")


class Watchers(Generic[T]):
    """The operations watched under one key (order of arrival kept)."""

    __slots__ = ("key", "_ops")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self._ops: dict[T, None] = {}

    def watch(self, op: T) -> None:
        self._ops[op] = None

    def count_watched(self) -> int:
        return len(self._ops)

    def is_empty(self) -> bool:
        return not self._ops

    def operations(self) -> list[T]:
        return list(self._ops)

    def try_complete_watched(self) -> int:
        """Try every watched operation; drop completed ones; count those completed here."""
        completed = 0
        ops = self._ops
        for op in list(ops):
            if op._completed:
                ops.pop(op, None)
            elif op.safe_try_complete():
                ops.pop(op, None)
                completed += 1
        return completed

    def cancel(self) -> list[T]:
        ops = list(self._ops)
        self._ops.clear()
        for op in ops:
            op.cancel()
        return ops

    def purge_completed(self) -> int:
        ops = self._ops
        purged = 0
        for op in list(ops):
            if op._completed:
                ops.pop(op, None)
                purged += 1
        return purged


class WatcherList:
    """One shard: its lock guards ``watchers_for_key`` (not the Watchers lists themselves)."""

    __slots__ = ("lock", "watchers_for_key")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.watchers_for_key: dict[Hashable, Watchers] = {}


@dataclass(frozen=True, slots=True)
class PurgatorySnapshot:
    """Kafka's purgatory gauges (PurgatorySize, NumDelayedOperations), its counters and timer."""

    name: str
    watched: int        # PurgatorySize: once per watch key, completed-but-unpurged included
    num_delayed: int    # NumDelayedOperations: waiting in the timer
    expirations: int
    purges: int
    timer: TimerSnapshot


class DelayedOperationPurgatory(Generic[T]):
    def __init__(
        self,
        purgatory_name: str,
        timer: Timer | None = None,
        broker_id: int = 0,
        purge_interval: int = 1000,
        reaper_enabled: bool = True,
        timer_enabled: bool = True,
        time: Time | None = None,
    ) -> None:
        self.purgatory_name = purgatory_name
        self.broker_id = broker_id
        self.purge_interval = purge_interval
        self.timer_enabled = timer_enabled
        self.timeout_timer: Timer = timer if timer is not None else SystemTimer(purgatory_name, time=time)
        self._shards = [WatcherList() for _ in range(SHARDS)]
        self._estimate_lock = threading.Lock()  # guards _estimated_total_operations
        self._estimated_total_operations = 0
        self.expiration_count = 0
        self.purge_count = 0
        self.expiration_listeners: list[Callable[[DelayedOperation], None]] = []
        self._reaper: ExpirationReaper | None = None
        if reaper_enabled:
            self._reaper = ExpirationReaper(self)
            self._reaper.start()

    # ------------------------------------------------------------------ watching
    def _shard(self, key: Hashable) -> WatcherList:
        return self._shards[hash(key) % SHARDS]

    def try_complete_else_watch(self, operation: T, watch_keys: Iterable[Hashable]) -> bool:
        """Complete ``operation`` now if possible, else watch it on every key and time it.

        Returns true iff this call completed it. The operation lock is held across the first
        try, the watching and the second try; the timer add happens after the lock is released.
        """
        keys = list(watch_keys)
        if not keys:
            raise ValueError("The watch key list can't be empty")

        shards = self._shards

        def watch() -> None:
            # Shard lookup and ``Watchers.watch`` are inlined: this runs for every key of
            # every request that has to wait.
            for key in keys:
                if operation._completed:
                    break  # completed meanwhile: the remaining keys need not watch it
                shard = shards[hash(key) % SHARDS]
                with shard.lock:
                    watchers = shard.watchers_for_key.get(key)
                    if watchers is None:
                        watchers = shard.watchers_for_key[key] = Watchers(key)
                    watchers._ops[operation] = None
            with self._estimate_lock:
                self._estimated_total_operations += 1

        if operation.safe_try_complete_or_else(watch):
            return True
        if not operation._completed and self.timer_enabled:
            operation._purgatory = self
            self.timeout_timer.add(operation)
            if operation._completed:
                operation.cancel()  # completed concurrently: pull it back out of the timer
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Try to complete the operations watched on ``key``; count those completed here."""
        shard = self._shards[hash(key) % SHARDS]   # _shard, inlined: every append triggers this
        with shard.lock:
            watchers = shard.watchers_for_key.get(key)
        if watchers is None:
            return 0
        completed = watchers.try_complete_watched()
        if watchers.is_empty():
            self._remove_key_if_empty(key, watchers)
        return completed

    def cancel_for_key(self, key: Hashable) -> list[T]:
        """Stop watching ``key``: its operations leave the timer without completing."""
        shard = self._shard(key)
        with shard.lock:
            watchers = shard.watchers_for_key.pop(key, None)
        return watchers.cancel() if watchers is not None else []

    def _remove_key_if_empty(self, key: Hashable, watchers: Watchers) -> None:
        shard = self._shard(key)
        with shard.lock:
            if shard.watchers_for_key.get(key) is watchers and watchers.is_empty():
                del shard.watchers_for_key[key]

    # ------------------------------------------------------------------ sizes
    def watched(self) -> int:
        """Operations watched, counted once per key, completed-but-unpurged ones included."""
        total = 0
        for shard in self._shards:
            for watchers in list(shard.watchers_for_key.values()):
                total += watchers.count_watched()
        return total

    def num_delayed(self) -> int:
        """Operations waiting in the timer (completion removes them at once)."""
        return self.timeout_timer.size()

    def snapshot(self) -> PurgatorySnapshot:
        timer = self.timeout_timer.snapshot()
        return PurgatorySnapshot(self.purgatory_name, self.watched(), timer.pending_tasks,
                                 self.expiration_count, self.purge_count, timer)

    def watched_keys(self) -> int:
        return sum(len(shard.watchers_for_key) for shard in self._shards)

    def estimated_total_operations(self) -> int:
        return self._estimated_total_operations

    # ------------------------------------------------------------------ clock and purge
    def advance_clock(self, timeout_ms: int) -> bool:
        """Run due expirations, then purge completed operations if the estimate calls for it."""
        advanced = self.timeout_timer.advance_clock(timeout_ms)
        self._maybe_purge()
        return advanced

    def _maybe_purge(self) -> None:
        num_delayed = self.num_delayed()
        with self._estimate_lock:
            if self._estimated_total_operations - num_delayed <= self.purge_interval:
                return
            self._estimated_total_operations = num_delayed
        purged = 0
        for shard in self._shards:
            for key, watchers in list(shard.watchers_for_key.items()):
                purged += watchers.purge_completed()
                if watchers.is_empty():
                    self._remove_key_if_empty(key, watchers)
        self.purge_count += 1
        _log.debug("purgatory_purged", purgatory=self.purgatory_name, broker_id=self.broker_id,
                   purged=purged)

    def _record_expiration(self, operation: DelayedOperation) -> None:
        self.expiration_count += 1
        for listener in self.expiration_listeners:
            listener(operation)

    # ------------------------------------------------------------------ shutdown
    def shutdown(self) -> None:
        """Stop the reaper and the timer; pending operations are abandoned (as in Kafka)."""
        if self._reaper is not None:
            self._reaper.initiate_shutdown()
            wakeup: Any = getattr(self.timeout_timer, "wakeup", None)
            if wakeup is not None:
                wakeup()
            self._reaper.await_shutdown()
        self.timeout_timer.close()

    @property
    def reaper(self) -> "ExpirationReaper | None":
        return self._reaper

    def __repr__(self) -> str:
        return f"DelayedOperationPurgatory({self.purgatory_name!r}, broker={self.broker_id})"


class ExpirationReaper(ShutdownableThread):
    """Advances the purgatory's timer (200 ms polls) and purges; one per purgatory."""

    def __init__(self, purgatory: DelayedOperationPurgatory) -> None:
        super().__init__(name=f"ExpirationReaper-{purgatory.broker_id}-{purgatory.purgatory_name}",
                         log_context={"broker_id": purgatory.broker_id})
        self.purgatory = purgatory

    def do_work(self) -> None:
        self.purgatory.advance_clock(200)
