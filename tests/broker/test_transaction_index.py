"""TransactionIndex: Kafka's TransactionIndexTest (storage module, tag 4.0.0) ported; the file
cases (position on open, rename, sanity check of a file) have no in-memory counterpart."""
import pytest

from kafka_emu.broker.storage.transaction_index import AbortedTxn, TransactionIndex

pytestmark = pytest.mark.timeout(30)


def test_last_offset_must_increase():
    """testLastOffsetMustIncrease."""
    index = TransactionIndex(0)
    index.append(AbortedTxn(1, 5, 15, 13))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(0, 0, 15, 11))


def test_last_offset_cannot_decrease():
    """testLastOffsetCannotDecrease."""
    index = TransactionIndex(0)
    index.append(AbortedTxn(1, 5, 15, 13))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(0, 0, 10, 11))


def test_collect_aborted_transactions():
    """testCollectAbortedTransactions: overlap with [fetch offset, upper bound); complete once an
    entry's LSO reaches the upper bound."""
    txns = [AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 18, 35, 25),
            AbortedTxn(3, 21, 100, 100)]
    index = TransactionIndex(0)
    for t in txns:
        index.append(t)
    assert index.all_aborted_txns() == txns
    result = index.collect_aborted_txns(0, 100)
    assert result.aborted == txns and result.complete
    result = index.collect_aborted_txns(0, 32)
    assert result.aborted == txns[:3] + [txns[3]] and result.complete   # 21 < 32; LSO 100 >= 32
    result = index.collect_aborted_txns(0, 12)
    assert result.aborted == txns[:2] and result.complete               # LSO 13 >= 12
    result = index.collect_aborted_txns(16, 200)
    assert result.aborted == txns[2:] and not result.complete


def test_truncate():
    """testTruncate: entries whose last offset is at or past the point go."""
    txns = [AbortedTxn(0, 0, 10, 2), AbortedTxn(1, 5, 15, 16), AbortedTxn(2, 18, 35, 25)]
    index = TransactionIndex(0)
    for t in txns:
        index.append(t)
    index.truncate_to(50)
    assert index.all_aborted_txns() == txns
    index.truncate_to(35)
    assert index.all_aborted_txns() == txns[:2]
    index.truncate_to(11)
    assert index.all_aborted_txns() == txns[:1]
    index.truncate_to(0)
    assert len(index) == 0
