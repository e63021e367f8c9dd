"""Client quota managers on MockTime: Kafka's ClientQuotaManagerTest, ClientRequestQuotaManagerTest,
ThrottledChannelExpirationTest and ControllerMutationQuotaManagerTest (4.0) ported, plus the
sampled statistics they stand on.

``maybe_record`` is BaseClientQuotaManagerTest.maybeRecord; Kafka's
ClientQuotaManagerConfig() default (11 samples of 1 s) is ``ClientQuotaConfig()``.
"""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from kafka_emu.broker.server.quota.client_quota_manager import (
    DEFAULT,
    NO_QUOTA,
    ClientQuotaConfig,
    ClientQuotaManager,
    QuotaEntity,
    QuotaType,
)
from kafka_emu.broker.server.quota.client_request_quota_manager import ClientRequestQuotaManager
from kafka_emu.broker.server.quota.controller_mutation_quota_manager import (
    UNBOUNDED,
    ControllerMutationQuotaManager,
    PermissiveControllerMutationQuota,
    StrictControllerMutationQuota,
)
from kafka_emu.broker.server.quota.stats import MetricConfig, QuotaSensor, Rate, TokenBucket
from kafka_emu.broker.server.quota.throttled_channel import (
    ThrottledChannel,
    ThrottledChannelQueue,
    ThrottledChannelReaper,
)
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.timer.time import MockTime

pytestmark = pytest.mark.timeout(30)

CONFIG = ClientQuotaConfig()


class Callback:
    def __init__(self) -> None:
        self.started = 0
        self.ended = 0

    def start_throttling(self) -> None:
        self.started += 1

    def end_throttling(self) -> None:
        self.ended += 1


@pytest.fixture()
def mock_time() -> MockTime:
    return MockTime()


def manager(mock_time: MockTime, quota_type: QuotaType = QuotaType.PRODUCE, config: ClientQuotaConfig = CONFIG
            ) -> ClientQuotaManager:
    m = ClientQuotaManager(config, quota_type, mock_time)
    m.throttled_channel_reaper.poll_timeout_s = 0.01   # do_work on the test thread, never started
    return m


def maybe_record(m: ClientQuotaManager, user: str, client_id: str, value: float, mock_time: MockTime) -> int:
    return m.maybe_record_and_get_throttle_time_ms(user, client_id, value, mock_time.milliseconds())


# ---------------------------------------------------------------- ClientQuotaManagerTest
def _quota_parsing(mock_time: MockTime, client1: tuple, client2: tuple, random_client: tuple, default: QuotaEntity) -> None:
    """testQuotaParsing: (user, client id, configured entity) per client."""
    m = manager(mock_time)
    (u1, c1, e1), (u2, c2, e2), (ur, cr) = client1, client2, random_client
    m.update_quota(e1, 2000)
    m.update_quota(e2, 4000)
    assert m.quota(ur, cr) == NO_QUOTA
    assert m.quota(u1, c1) == 2000 and m.quota(u2, c2) == 4000
    assert maybe_record(m, u1, c1, 2500 * CONFIG.num_quota_samples, mock_time) > 0
    m.update_quota(e1, 3000)   # the sensor exists: it takes the new bound
    assert m.quota(u1, c1) == 3000
    assert maybe_record(m, u1, c1, 0, mock_time) == 0
    m.update_quota(e1, 500)
    assert m.quota(u1, c1) == 500
    assert maybe_record(m, u1, c1, 0, mock_time) > 0
    m.update_quota(e1, None)
    m.update_quota(default, 4000)
    assert m.quota(u1, c1) == 4000
    assert maybe_record(m, u1, c1, 1000 * CONFIG.num_quota_samples, mock_time) == 0


def test_client_id_quota_parsing(mock_time: MockTime) -> None:
    _quota_parsing(mock_time, ("ANONYMOUS", "p1", QuotaEntity(None, "p1")), ("ANONYMOUS", "p2", QuotaEntity(None, "p2")),
                   ("ANONYMOUS", "random-client-id"), QuotaEntity(None, DEFAULT))


def test_user_quota_parsing(mock_time: MockTime) -> None:
    _quota_parsing(mock_time, ("User1", "p1", QuotaEntity("User1")), ("User2", "p2", QuotaEntity("User2")),
                   ("RandomUser", "random-client-id"), QuotaEntity(DEFAULT))


def test_user_client_id_quota_parsing(mock_time: MockTime) -> None:
    _quota_parsing(mock_time, ("User1", "p1", QuotaEntity("User1", "p1")), ("User2", "p2", QuotaEntity("User2", "p2")),
                   ("RandomUser", "random-client-id"), QuotaEntity(DEFAULT, DEFAULT))


def check_quota(m: ClientQuotaManager, mock_time: MockTime, user: str, client_id: str, expected_bound: float,
                value: float, expect_throttle: bool) -> None:
    """ClientQuotaManagerTest.checkQuota."""
    assert m.quota(user, client_id) == expected_bound
    expected_max = (CONFIG.quota_window_size_seconds * (CONFIG.num_quota_samples - 1) * expected_bound
                    if expected_bound < NO_QUOTA else math.inf)
    assert m.get_max_value_in_quota_window(user, client_id) == pytest.approx(expected_max)
    throttle = maybe_record(m, user, client_id, value * CONFIG.num_quota_samples, mock_time)
    assert (throttle > 0) if expect_throttle else (throttle == 0), throttle


def test_get_max_value_in_quota_window_with_non_default_quota_window(mock_time: MockTime) -> None:
    m = manager(mock_time, QuotaType.FETCH, ClientQuotaConfig(num_quota_samples=4))
    assert m.get_max_value_in_quota_window("userA", "client1") == math.inf
    m.update_quota(QuotaEntity(DEFAULT), 10)
    assert m.get_max_value_in_quota_window("userA", "client1") == pytest.approx(30)


@pytest.mark.parametrize("entity", [QuotaEntity(DEFAULT), QuotaEntity("userA"), QuotaEntity("userA", "client1")])
def test_set_and_remove_quota(mock_time: MockTime, entity: QuotaEntity) -> None:
    """testSetAndRemoveDefaultUserQuota, testSetAndRemoveUserQuota, testSetAndRemoveUserClientQuota."""
    m = manager(mock_time)
    if entity.user is DEFAULT:
        check_quota(m, mock_time, "userA", "client1", NO_QUOTA, 1000, False)
    m.update_quota(entity, 10)
    check_quota(m, mock_time, "userA", "client1", 10, 1000, True)
    m.update_quota(entity, None)
    check_quota(m, mock_time, "userA", "client1", NO_QUOTA, 1000, False)


def test_quota_config_precedence(mock_time: MockTime) -> None:
    m = manager(mock_time)
    m.update_quota(QuotaEntity(DEFAULT), 1000)
    m.update_quota(QuotaEntity(None, DEFAULT), 2000)
    m.update_quota(QuotaEntity(DEFAULT, DEFAULT), 3000)
    m.update_quota(QuotaEntity("userA"), 4000)
    m.update_quota(QuotaEntity("userA", "client1"), 5000)
    m.update_quota(QuotaEntity("userB"), 6000)
    m.update_quota(QuotaEntity("userB", "client1"), 7000)
    m.update_quota(QuotaEntity("userB", DEFAULT), 8000)
    m.update_quota(QuotaEntity("userC"), 10000)
    m.update_quota(QuotaEntity(None, "client1"), 9000)
    check = lambda *args: check_quota(m, mock_time, *args)   # noqa: E731

    check("userA", "client1", 5000, 4500, False)   # <user, client> quota takes precedence over <user>
    check("userA", "client2", 4000, 4500, True)    # <user> quota takes precedence over <client> and defaults
    check("userA", "client3", 4000, 0, True)       # <user> quota is shared across clients of user
    check("userA", "client1", 5000, 0, False)      # <user, client> is exclusive use, unaffected by other clients
    check("userB", "client1", 7000, 8000, True)
    check("userB", "client2", 8000, 7000, False)   # default per-client quota for exclusive use of <user, client>
    check("userB", "client3", 8000, 7000, False)
    check("userD", "client1", 3000, 3500, True)    # default <user, client> quota
    check("userD", "client2", 3000, 2500, False)
    check("userE", "client1", 3000, 2500, False)

    m.update_quota(QuotaEntity(DEFAULT, DEFAULT), None)   # revert to the <user> default
    check("userD", "client1", 1000, 0, False)      # metric tags changed: the counter restarts
    check("userE", "client4", 1000, 1500, True)
    check("userF", "client4", 1000, 800, False)    # default <user> quota shared across clients of user
    check("userF", "client5", 1000, 800, True)

    m.update_quota(QuotaEntity(DEFAULT), None)     # revert to the <client-id> default
    check("userF", "client4", 2000, 0, False)      # default <client-id> quota shared across users
    check("userF", "client5", 2000, 0, False)
    check("userF", "client5", 2000, 2500, True)
    check("userG", "client5", 2000, 0, True)

    m.update_quota(QuotaEntity("userA"), 8000)
    m.update_quota(QuotaEntity("userA", "client1"), 10000)
    check("userA", "client2", 8000, 0, False)
    check("userA", "client2", 8000, 4500, True)    # throttled due to sum of new and earlier values
    check("userA", "client1", 10000, 0, False)
    check("userA", "client1", 10000, 6000, True)
    m.update_quota(QuotaEntity("userA", "client1"), None)
    check("userA", "client6", 8000, 0, True)       # throttled due to shared user quota
    m.update_quota(QuotaEntity("userA", "client6"), 11000)
    check("userA", "client6", 11000, 8500, False)
    m.update_quota(QuotaEntity("userA", DEFAULT), 12000)
    m.update_quota(QuotaEntity("userA", "client6"), None)
    check("userA", "client6", 12000, 4000, True)   # throttled due to sum of new and earlier values


def test_quota_violation(mock_time: MockTime) -> None:
    """testQuotaViolation: 10.5 s of samples, a spike, its throttle time, the channel unmuted
    only once that time has passed, and no throttling once the spike rolled out."""
    m = manager(mock_time)
    callback = Callback()
    m.update_quota(QuotaEntity(None, DEFAULT), 500)
    for _ in range(10):
        assert maybe_record(m, "ANONYMOUS", "unknown", 400, mock_time) == 0
        mock_time.advance(1000)
    assert m.queue_size == 0
    # 400*10 + 2000 + 300 = 6300/10.5 = 600 bytes per second;
    # (600 - quota)/quota*window-size = (600-500)/500*10.5 seconds = 2100
    mock_time.advance(500)
    throttle = maybe_record(m, "ANONYMOUS", "unknown", 2300, mock_time)
    assert throttle == 2100
    m.throttle("ANONYMOUS", "unknown", callback, throttle)
    assert m.queue_size == 1 and callback.started == 1
    m.throttled_channel_reaper.do_work()
    assert callback.ended == 0           # not before the delay has passed
    mock_time.advance(throttle)
    m.throttled_channel_reaper.do_work()
    assert m.queue_size == 0 and callback.ended == 1
    for _ in range(10):
        maybe_record(m, "ANONYMOUS", "unknown", 400, mock_time)
        mock_time.advance(1000)
    assert maybe_record(m, "ANONYMOUS", "unknown", 0, mock_time) == 0   # the bursty sample rolled over


def test_client_id_not_sanitized_in_metrics(mock_time: MockTime) -> None:
    """testClientIdNotSanitized: the metrics carry the raw client id."""
    m = manager(mock_time)
    m.update_quota(QuotaEntity(None, DEFAULT), 500)
    maybe_record(m, "ANONYMOUS", "client@#$%", 100, mock_time)
    assert [(c.user, c.client_id) for c in m.snapshot().clients] == [("", "client@#$%")]


def test_idle_sensors_expire(mock_time: MockTime) -> None:
    """testExpireQuotaSensors' premise: sensors idle for an hour go (and come back on use)."""
    m = manager(mock_time)
    m.update_quota(QuotaEntity(None, DEFAULT), 500)
    maybe_record(m, "ANONYMOUS", "client1", 100, mock_time)
    mock_time.advance(3_600_001)
    assert m.snapshot().clients == ()
    assert maybe_record(m, "ANONYMOUS", "client1", 10_000 * CONFIG.num_quota_samples, mock_time) > 0


def test_nothing_is_recorded_before_a_first_quota(mock_time: MockTime) -> None:
    m = manager(mock_time)
    assert maybe_record(m, "ANONYMOUS", "c", 10**12, mock_time) == 0 and m.snapshot().clients == ()


# ---------------------------------------------------------------- ClientRequestQuotaManagerTest
def test_request_percentage_quota_violation(mock_time: MockTime) -> None:
    m = ClientRequestQuotaManager(CONFIG, mock_time)
    m.throttled_channel_reaper.poll_timeout_s = 0.01
    callback = Callback()
    m.update_quota(QuotaEntity("ANONYMOUS", "test-client"), 1)   # 1%: 10 ms per second

    def record_ms(millis: float) -> int:
        return m.maybe_record_request_time("ANONYMOUS", "test-client", int(millis * 1_000_000), mock_time.milliseconds())

    for _ in range(10):
        assert record_ms(4) == 0
        mock_time.advance(1000)
    assert m.queue_size == 0
    # 4*10 + 67.1 = 107.1/10.5 = 10.2ms per second; (10.2 - quota)/quota*window-size = 210 ms
    mock_time.advance(500)
    throttle = record_ms(67.1)
    assert throttle == 210
    m.throttle("ANONYMOUS", "test-client", callback, throttle)
    m.throttled_channel_reaper.do_work()
    assert callback.ended == 0
    mock_time.advance(throttle)
    m.throttled_channel_reaper.do_work()
    assert m.queue_size == 0 and callback.ended == 1
    for _ in range(11):
        record_ms(4)
        mock_time.advance(1000)
    assert record_ms(0) == 0
    # a very large spike needs more than one quota window: the throttle time is capped at one
    assert record_ms(500) == 1000
    for _ in range(10):
        mock_time.advance(1000)
        assert record_ms(0) == 1000
    mock_time.advance(1000)
    assert record_ms(0) == 0


# ---------------------------------------------------------------- ThrottledChannelExpirationTest
def test_callback_invocation_after_expiration(mock_time: MockTime) -> None:
    """Four channels added out of order, two with the same end: each reaper round ends the
    ones due, once each."""
    callback = Callback()
    queue = ThrottledChannelQueue(mock_time)
    reaper = ThrottledChannelReaper(queue, "ThrottledChannelReaper-Produce", lambda: None, mock_time, poll_timeout_s=0.01)
    for ms in (10, 30, 30, 20):
        queue.add(ThrottledChannel(mock_time, ms, callback))
    assert callback.started == 4
    for itr in range(1, 4):
        mock_time.advance(10)
        reaper.do_work()
        assert callback.ended == itr
    reaper.do_work()
    assert callback.ended == 4 and len(queue) == 0
    reaper.do_work()
    assert callback.ended == 4


def test_reaper_thread_is_named_and_stops(mock_time: MockTime) -> None:
    m = ClientQuotaManager(CONFIG, QuotaType.FETCH, mock_time, "broker-3-")
    m.start()
    assert m.throttled_channel_reaper.name == "broker-3-ThrottledChannelReaper-Fetch"
    m.shutdown()
    assert not m.throttled_channel_reaper.is_alive()


# ---------------------------------------------------------------- ControllerMutationQuotaManagerTest
def _mutation_sensor() -> QuotaSensor:
    return QuotaSensor(MetricConfig(samples=10, window_ms=1000, bound=10), token_bucket=True)


def test_strict_controller_mutation_quota(mock_time: MockTime) -> None:
    """StrictControllerMutationQuotaTest.testControllerMutationQuotaViolation: accepted while the
    bucket (burst 100) is not negative, refused once it is, with the time to refill it."""
    quota = StrictControllerMutationQuota(mock_time, _mutation_sensor())
    quota.record(90)       # 10 tokens left
    assert quota.throttle_time() == 0
    quota.record(90)       # -80: accepted, the bucket was not exhausted yet
    assert quota.throttle_time() == 0
    with pytest.raises(KafkaError) as exc:
        quota.record(90)
    assert exc.value.code == Errors.THROTTLING_QUOTA_EXCEEDED
    assert quota.throttle_time() == 8000
    mock_time.advance(5000)       # the throttle time counts down
    assert quota.throttle_time() == 3000


def test_permissive_controller_mutation_quota(mock_time: MockTime) -> None:
    """PermissiveControllerMutationQuotaTest.testControllerMutationQuotaViolation: never refused,
    throttled once the bucket is negative."""
    quota = PermissiveControllerMutationQuota(mock_time, _mutation_sensor())
    quota.record(90)
    assert quota.throttle_time() == 0
    quota.record(90)
    assert quota.throttle_time() == 8000
    quota.record(90)
    assert quota.throttle_time() == 17000
    mock_time.advance(5000)
    assert quota.throttle_time() == 12000


def test_controller_mutation_quota_violation(mock_time: MockTime) -> None:
    """ControllerMutationQuotaManagerTest.testControllerMutationQuotaViolation."""
    m = ControllerMutationQuotaManager(ClientQuotaConfig(10, 1), mock_time)
    m.throttled_channel_reaper.poll_timeout_s = 0.01
    callback = Callback()
    m.update_quota(QuotaEntity("ANONYMOUS", "test-client"), 10)
    for _ in range(10):
        assert maybe_record(m, "ANONYMOUS", "test-client", 10, mock_time) == 0
        mock_time.advance(1000)
    assert m.queue_size == 0
    assert maybe_record(m, "ANONYMOUS", "test-client", 110, mock_time) == 0   # 100 tokens: accepted
    throttle = maybe_record(m, "ANONYMOUS", "test-client", 110, mock_time)   # -10: refused, 1 s to refill
    assert throttle == 1000
    m.throttle("ANONYMOUS", "test-client", callback, throttle)
    assert m.queue_size == 1
    m.throttled_channel_reaper.do_work()
    assert callback.ended == 0
    mock_time.advance(throttle)
    m.throttled_channel_reaper.do_work()
    assert m.queue_size == 0 and callback.ended == 1
    assert maybe_record(m, "ANONYMOUS", "test-client", 110, mock_time) == 0


def test_new_quota_for(mock_time: MockTime) -> None:
    """testNewStrictQuotaForReturnsUnboundedQuotaWhenQuotaIsDisabled and the strict/permissive
    choice by version."""
    m = ControllerMutationQuotaManager(ClientQuotaConfig(10, 1), mock_time)
    assert m.new_quota_for("u", "c", 6, 6) is UNBOUNDED and m.new_permissive_quota_for("u", "c") is UNBOUNDED
    m.update_quota(QuotaEntity(None, "c"), 2)
    assert isinstance(m.new_quota_for("u", "c", 6, strict_since_version=6), StrictControllerMutationQuota)
    assert isinstance(m.new_quota_for("u", "c", 5, strict_since_version=6), PermissiveControllerMutationQuota)


# ---------------------------------------------------------------- the statistics
def test_rate_measures_over_at_least_samples_minus_one_windows() -> None:
    """Kafka's Rate.windowSize: a first burst is divided by (samples - 1) full windows."""
    config = MetricConfig(samples=11, window_ms=1000)
    rate = Rate()
    rate.record(config, 1000, 0)
    assert rate.window_size(config, 0) == 10_000 and rate.measure(config, 0) == 100


def test_token_bucket_refills_up_to_its_burst() -> None:
    config = MetricConfig(samples=10, window_ms=1000, bound=2)
    bucket = TokenBucket()
    bucket.record(config, 0, 0)
    assert bucket.measure(config, 100_000) == 20     # burst = 10 * 1 s * 2
    bucket.record(config, 30, 100_000)
    assert bucket.measure(config, 100_000) == -10 and bucket.measure(config, 105_000) == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 5000)), min_size=1, max_size=60),
       st.integers(1, 12), st.integers(1, 3000))
def test_rate_keeps_recent_values_and_invents_none(events: list[tuple[int, int]], samples: int, window_ms: int) -> None:
    """Property (SampledStat's rotation): what a Rate measures, times its window, is never more
    than was recorded, and never less than what was recorded in the last samples - 1 windows."""
    config = MetricConfig(samples=samples, window_ms=window_ms)
    rate = Rate()
    now = 0
    recorded: list[tuple[int, int]] = []
    for gap, value in events:
        now += gap
        rate.record(config, value, now)
        recorded.append((now, value))
        measured = rate.measure(config, now) * rate.window_size(config, now) / 1000
        recent = sum(v for t, v in recorded if now - t < (samples - 1) * window_ms)
        assert recent - 1e-6 <= measured <= sum(v for _, v in recorded) + 1e-6
