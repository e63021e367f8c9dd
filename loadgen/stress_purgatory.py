"""``kafka-emu stress purgatory``: many threads racing on shared keys of one purgatory.

Worker threads add delayed operations watched on a few of a small set of shared keys (so
watch, trigger and expiry constantly race on the same watcher lists) and trigger keys
themselves. Each operation becomes completable only when one of its keys is triggered after it
was created, or immediately for a share of them (the try-at-watch path), or by its timeout.

Checked at the end, once every operation has had time to expire:
* every operation completed exactly once (``on_complete`` ran once, never zero, never twice);
* an operation ran ``on_expiration`` if and only if its timeout completed it, and the
  purgatory's ``expiration_count`` equals the number of those;
* an operation completed by a trigger really had its condition met;
* nothing is left in the timer, and no worker, reaper or timer thread hit an error.
"""
from __future__ import annotations

import argparse
import itertools
import random
import threading
import time

import structlog

from kafka_emu.loadgen.verdict import Verdict, add_run_options, run_duration
from kafka_emu.metrics.progress import progress, progress_enabled
from kafka_emu.timer import DelayedOperation, DelayedOperationPurgatory

_log = structlog.get_logger("loadgen.stress_purgatory")

SETTLE_S = 10.0   # most time to wait for outstanding operations to expire after the workers stop


class KeyState:
    """A shared key's trigger generation; bumped before each ``check_and_complete`` on it."""

    __slots__ = ("generation",)

    def __init__(self) -> None:
        self.generation = 0


class StressOperation(DelayedOperation):
    def __init__(self, op_id: int, delay_ms: int, keys: list[KeyState], immediate: bool) -> None:
        super().__init__(delay_ms)
        self.op_id = op_id
        self.keys = keys
        self.snapshot = [k.generation for k in keys]
        self.immediate = immediate
        self.completions = 0
        self.expirations = 0
        self.condition_met_at_completion = False

    def condition(self) -> bool:
        return self.immediate or any(k.generation > s for k, s in zip(self.keys, self.snapshot))

    def try_complete(self) -> bool:
        if self.condition():
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.completions += 1          # under the operation lock: force_complete holds it
        self.condition_met_at_completion = self.condition()

    def on_expiration(self) -> None:
        self.expirations += 1


class Worker(threading.Thread):
    def __init__(self, index: int, stress: "PurgatoryStress") -> None:
        super().__init__(name=f"stress-purgatory-worker-{index}", daemon=True)
        self.stress = stress
        self.rng = random.Random(stress.seed * 1000 + index)
        self.created = 0
        self.triggers = 0
        self.errors = 0

    def run(self) -> None:
        reason = "stopped"
        s = self.stress
        try:
            while not s.stop_event.is_set():
                op_id = s.next_id()
                if op_id is None:
                    break
                try:
                    s.step(self.rng, op_id)
                    self.created += 1
                    if self.rng.random() < s.trigger_ratio:
                        s.trigger(self.rng)
                        self.triggers += 1
                except Exception:
                    self.errors += 1
                    _log.exception("stress_worker_error", thread=self.name)
        except BaseException as exc:  # pragma: no cover - interpreter teardown
            reason = f"fatal: {exc!r}"
            raise
        finally:
            _log.info("thread_stopped", thread=self.name, reason=reason)


class PurgatoryStress:
    def __init__(self, threads: int, keys: int, max_delay_ms: int, count: int | None, seed: int,
                 immediate_ratio: float = 0.1, trigger_ratio: float = 0.1) -> None:
        self.purgatory: DelayedOperationPurgatory[StressOperation] = DelayedOperationPurgatory(
            "StressPurgatory", purge_interval=100)
        self.key_states = [KeyState() for _ in range(keys)]
        self.max_delay_ms = max_delay_ms
        self.count = count
        self.seed = seed
        self.immediate_ratio = immediate_ratio
        self.trigger_ratio = trigger_ratio
        self.stop_event = threading.Event()
        self.ops: list[StressOperation] = []
        self._ids = itertools.count()
        self._id_lock = threading.Lock()
        self.completed_on_watch = 0
        self.workers = [Worker(i, self) for i in range(threads)]

    def next_id(self) -> int | None:
        with self._id_lock:
            op_id = next(self._ids)
        if self.count is not None and op_id >= self.count:
            return None
        return op_id

    def step(self, rng: random.Random, op_id: int) -> None:
        chosen = rng.sample(range(len(self.key_states)), rng.randint(1, min(3, len(self.key_states))))
        op = StressOperation(op_id, rng.randint(1, self.max_delay_ms), [self.key_states[i] for i in chosen],
                             immediate=rng.random() < self.immediate_ratio)
        self.ops.append(op)   # list.append is atomic under the GIL
        if self.purgatory.try_complete_else_watch(op, [("key", i) for i in chosen]):
            self.completed_on_watch += 1   # racy counter: informative only, not checked

    def trigger(self, rng: random.Random) -> None:
        i = rng.randrange(len(self.key_states))
        self.key_states[i].generation += 1   # racy increments only need to move forward
        self.purgatory.check_and_complete(("key", i))

    def run(self, duration_s: float | None, show_progress: bool) -> Verdict:
        started = time.monotonic()
        bar = progress(total=self.count if self.count is not None else int(duration_s or 0),
                       desc="purgatory", enabled=show_progress, unit="op" if self.count is not None else "s")
        for w in self.workers:
            w.start()
        try:
            while any(w.is_alive() for w in self.workers):
                if duration_s is not None and time.monotonic() - started >= duration_s:
                    self.stop_event.set()
                bar.n = len(self.ops) if self.count is not None else min(int(time.monotonic() - started),
                                                                         int(duration_s or 0))
                bar.refresh()
                for w in self.workers:
                    w.join(0.05)
        finally:
            self.stop_event.set()
            for w in self.workers:
                w.join(10)
            bar.close()
        load_s = time.monotonic() - started
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline and not all(op.is_completed() for op in self.ops):
            time.sleep(0.01)
        reaper = self.purgatory.reaper
        reaper_errors = reaper.error_count if reaper is not None else 0
        leftover = self.purgatory.num_delayed()
        self.purgatory.shutdown()
        return self._verdict(load_s, leftover, reaper_errors)

    def _verdict(self, load_s: float, leftover: int, reaper_errors: int) -> Verdict:
        ops = self.ops
        never = sum(1 for op in ops if op.completions == 0)
        twice = sum(1 for op in ops if op.completions > 1)
        expired = sum(1 for op in ops if op.expirations)
        expired_twice = sum(1 for op in ops if op.expirations > 1)
        bad_trigger = sum(1 for op in ops if op.completions and not op.expirations
                          and not op.condition_met_at_completion)
        worker_errors = sum(w.errors for w in self.workers)
        v = Verdict("stress purgatory")
        v.check("operations created", len(ops), "> 0", len(ops) > 0)
        v.check("never completed", never, "0", never == 0)
        v.check("completed more than once", twice, "0", twice == 0)
        v.check("expired more than once", expired_twice, "0", expired_twice == 0)
        v.check("expiration_count vs on_expiration", f"{self.purgatory.expiration_count} vs {expired}", "equal",
                self.purgatory.expiration_count == expired)
        v.check("trigger completions without condition", bad_trigger, "0", bad_trigger == 0)
        v.check("left in timer", leftover, "0", leftover == 0)
        v.check("thread errors (workers, reaper)", worker_errors + reaper_errors, "0",
                worker_errors + reaper_errors == 0)
        v.stats = {"threads": len(self.workers), "keys": len(self.key_states), "seconds": round(load_s, 2),
                   "ops_per_s": round(len(ops) / load_s) if load_s > 0 else 0, "expired": expired,
                   "triggers": sum(w.triggers for w in self.workers)}
        return v


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import fraction, positive_int

    add_run_options(parser, default_duration=10.0)
    parser.add_argument("--threads", type=positive_int, default=16, help="worker threads")
    parser.add_argument("--keys", type=positive_int, default=8, help="shared keys every thread watches and triggers")
    parser.add_argument("--max-delay-ms", type=positive_int, default=50, help="operation timeouts are 1..this")
    parser.add_argument("--trigger-ratio", type=fraction, default=0.1,
                        help="share of steps that also trigger a key (lower: more operations expire)")


def run(args: argparse.Namespace) -> int:
    stress = PurgatoryStress(args.threads, args.keys, args.max_delay_ms, args.count, args.seed,
                             trigger_ratio=args.trigger_ratio)
    verdict = stress.run(run_duration(args), show_progress=progress_enabled(args))
    return verdict.emit(args.json)
