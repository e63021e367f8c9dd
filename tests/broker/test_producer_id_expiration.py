"""Producer-id expiration (KIP-854, ``producer.id.expiration.ms``) on MockTime: Kafka's
ProducerStateManagerTest cases testPidExpirationTimeout, testProducersWithOngoingTransactionsDontExpire
and testRemoveExpiredPidsOnReload (storage module, tag 4.0.0), through the manager and through the
log, plus the broker's ``PeriodicProducerExpirationCheck`` task and the config keys."""
import pytest

from kafka_emu.broker.server.config import KafkaConfig
from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.log_config import LogConfig
from kafka_emu.broker.storage.log_manager import LogManager
from kafka_emu.broker.storage.producer_state import AppendOrigin, ProducerStateManager
from kafka_emu.broker.storage.record_batch import BatchInfo, build_batch
from kafka_emu.timer.scheduler import KafkaScheduler
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.timer.time import MockTime

from log_batches import append_end_txn, append_txn

pytestmark = pytest.mark.timeout(30)

PID, EPOCH = 1, 5
EXPIRATION_MS = 60_000   # Kafka's test config (maxPidExpirationMs)


def append(psm: ProducerStateManager, pid: int, seq: int, offset: int, timestamp: int,
           transactional: bool = False) -> None:
    """Kafka's appendClientEntry: check, then apply, one client batch of one record."""
    info = BatchInfo(0, 0, offset, 0, 0, 0x10 if transactional else 0, timestamp, pid, EPOCH, seq, 1)
    guard = psm.maybe_start_transaction_verification(pid, EPOCH) if transactional else None
    psm.check_batch(info, {}, AppendOrigin.CLIENT, None, guard)
    psm.update(info, None)


def test_pid_expiration_timeout():
    """testPidExpirationTimeout: once expired, the producer is forgotten, and its next batch is
    accepted whatever its sequence (as from a producer never seen) and tracked again."""
    time = MockTime()
    psm = ProducerStateManager("t-0")
    append(psm, PID, 0, 1, time.milliseconds())
    time.advance(EXPIRATION_MS - 1)
    assert psm.remove_expired_producers(time.milliseconds(), EXPIRATION_MS) == []
    time.advance(2)
    assert psm.remove_expired_producers(time.milliseconds(), EXPIRATION_MS) == [PID]
    assert not psm.producers
    append(psm, PID, 1, 2, time.milliseconds())
    assert list(psm.producers) == [PID] and psm.producers[PID].last_seq == 1


def test_out_of_order_sequence_before_expiration():
    """The same gap before expiration is refused: what expiration changes."""
    time = MockTime()
    psm = ProducerStateManager("t-0")
    append(psm, PID, 0, 1, time.milliseconds())
    with pytest.raises(KafkaError) as err:
        append(psm, PID, 7, 2, time.milliseconds())
    assert err.value.code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_producers_with_ongoing_transactions_dont_expire():
    """testProducersWithOngoingTransactionsDontExpire: a producer with a transaction open on the
    partition is kept however old, and the first unstable offset stays."""
    time = MockTime()
    psm = ProducerStateManager("t-0")
    append(psm, PID, 0, 99, time.milliseconds(), transactional=True)
    assert psm.first_unstable_offset() == 99
    time.advance(EXPIRATION_MS + 1)
    assert psm.remove_expired_producers(time.milliseconds(), EXPIRATION_MS) == []
    assert PID in psm.producers and psm.first_unstable_offset() == 99


def make_log(time: MockTime, expiration_ms: int = EXPIRATION_MS, **topic_configs: object) -> UnifiedLog:
    broker = KafkaConfig({"producer.id.expiration.ms": expiration_ms})
    return UnifiedLog("t", 0, config=LogConfig.for_topic(topic_configs, broker), time=time)


def idempotent(pid: int, seq: int, timestamp: int) -> bytes:
    return build_batch([(b"k", b"v")], timestamp_ms=timestamp, producer_id=pid, producer_epoch=0,
                       base_sequence=seq)


def test_remove_expired_pids_on_reload():
    """testRemoveExpiredPidsOnReload, through a log's truncation (Kafka's loadFromSnapshot):
    a producer restored from a snapshot is dropped if it expired meanwhile, so its next batch
    is accepted at any sequence; a producer replayed from the batches after the snapshot stays."""
    time = MockTime()
    size = len(idempotent(1, 0, 0))
    log = make_log(time, **{"segment.bytes": size})
    old = time.milliseconds()
    log.append_as_leader(idempotent(1, 0, old), 0)          # offset 0; snapshot at 1 holds producer 1
    log.append_as_leader(idempotent(1, 1, old), 0)          # offset 1
    time.advance(EXPIRATION_MS + 1)
    log.append_as_leader(idempotent(2, 0, time.milliseconds()), 0)   # offset 2, after the snapshot at 2
    log.append_as_leader(idempotent(2, 1, time.milliseconds()), 0)   # offset 3
    assert sorted(log.producers) == [1, 2]
    log.truncate_to(3)                                      # restores the snapshot at 2, replays offset 2
    assert list(log.producers) == [2] and log.producers[2].last_seq == 0
    log.append_as_leader(idempotent(1, 2, time.milliseconds()), 0)   # a gap, accepted after expiration
    assert log.producers[1].last_seq == 2 and log.log_end_offset == 4


def test_open_transaction_survives_expiration_check_until_its_marker():
    """An open transaction keeps its producer past the expiration; after its marker the
    producer expires like any other (the marker's timestamp is its last)."""
    time = MockTime()
    log = make_log(time)
    append_txn(log, PID, 0, 1, 0, time.milliseconds())
    time.advance(EXPIRATION_MS + 1)
    assert log.remove_expired_producers(time.milliseconds()) == []
    append_end_txn(log, PID, True, 0, 0, time.milliseconds())
    time.advance(EXPIRATION_MS - 1)
    assert log.remove_expired_producers(time.milliseconds()) == []
    time.advance(1)
    assert log.remove_expired_producers(time.milliseconds()) == [PID]
    assert not log.producers


def test_periodic_check_runs_on_the_scheduler_every_interval():
    """The ``PeriodicProducerExpirationCheck`` task (UnifiedLog's, here one per broker over every
    log): due every ``producer.id.expiration.check.interval.ms``; a producer expires at the
    first check after ``producer.id.expiration.ms``."""
    time = MockTime()
    config = KafkaConfig({"producer.id.expiration.ms": 1000, "producer.id.expiration.check.interval.ms": 300})
    manager = LogManager(config, time=time)
    log = manager.get_or_create_log(("t", 0))
    log.append_as_leader(idempotent(PID, 0, time.milliseconds()), 0)
    scheduler = KafkaScheduler(0, time)
    scheduler.schedule("PeriodicProducerExpirationCheck", manager.remove_expired_producers,
                       config["producer.id.expiration.check.interval.ms"])
    time.advance(900)
    scheduler.run_due()                     # checks at 300, 600, 900: not expired yet
    assert PID in log.producers
    time.advance(300)
    assert scheduler.run_due() and not log.producers


def test_dynamic_expiration_reaches_existing_logs():
    """ProducerIdExpirationTest.testDynamicProducerIdExpirationMs, on one broker's logs: a new
    ``producer.id.expiration.ms`` applies to the logs already there (the broker's dynamic
    config recomputes each log's config)."""
    time = MockTime()
    manager = LogManager(KafkaConfig({"producer.id.expiration.ms": 100_000}), time=time)
    log = manager.get_or_create_log(("t", 0))
    log.append_as_leader(idempotent(PID, 0, time.milliseconds()), 0)
    time.advance(200)
    assert manager.remove_expired_producers() == 0
    manager.config = KafkaConfig({"producer.id.expiration.ms": 100})
    log.update_config(manager.log_config(None))
    assert manager.remove_expired_producers() == 1 and not log.producers


def test_config_keys_are_kafkas():
    """Both keys are Kafka's broker configs (TransactionLogConfig): defaults one day and ten
    minutes, at least 1; only ``producer.id.expiration.ms`` is dynamic."""
    from kafka_emu.broker.server.config import KAFKA_CONFIG_DEF
    from kafka_emu.common.config_def import ConfigException, Dynamic

    config = KafkaConfig({"emulator.strict.config": True})
    assert config["producer.id.expiration.ms"] == 86_400_000
    assert config["producer.id.expiration.check.interval.ms"] == 600_000
    assert KAFKA_CONFIG_DEF.keys["producer.id.expiration.ms"].dynamic is Dynamic.APPLIED
    assert KAFKA_CONFIG_DEF.keys["producer.id.expiration.check.interval.ms"].dynamic is Dynamic.READ_ONLY
    with pytest.raises(ConfigException):
        KafkaConfig({"producer.id.expiration.ms": 0})
