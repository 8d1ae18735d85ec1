"""RetryPolicy, pure: the delays before each retry, which errors are retried, and the numbers it refuses.

The client's retries (the waiting it does with the sleep it is given, the
attempts counted, the stats) are tested against the fake app-server in
``test_client.py``; these are the policy's own.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from codexmini import NO_RETRY, RetryPolicy
from codexmini._errors import ConfigError, RpcError, ServerOverloaded
from codexmini._retry import default_jitter

OVERLOADED = ServerOverloaded(-32001, "Server overloaded; retry later.")


def test_retry_policy_delays_grow_to_the_cap_and_jitter_is_half() -> None:
    policy = RetryPolicy(retries=9, base_delay=0.05, max_delay=2.0, jitter=lambda: 0.0)
    assert [policy.delay(n) for n in range(8)] == [0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert RetryPolicy(jitter=lambda: 0.999).delay(0) == pytest.approx(0.05, abs=1e-4)
    assert RetryPolicy(max_delay=2.0, jitter=lambda: 1.0).delay(10**6) == 2.0  # no overflow
    assert 0.025 <= RetryPolicy().delay(0) < 0.05  # random.random by default
    overloaded = ServerOverloaded(-32001, "x")
    assert policy.should_retry(overloaded, 8) and not policy.should_retry(overloaded, 9)
    assert not policy.should_retry(RpcError(-32600, "x"), 0)
    assert not NO_RETRY.should_retry(overloaded, 0)


def test_retry_policy_delay_is_half_fixed_half_jitter() -> None:
    # d = 0.4 at retry 3: d/2 + jitter() * d/2, across the jitter's range.
    for jitter, expected in ((0.0, 0.2), (0.25, 0.25), (0.5, 0.3), (0.75, 0.35)):
        assert RetryPolicy(base_delay=0.05, jitter=lambda j=jitter: j).delay(3) == pytest.approx(expected)


def test_retry_policy_defaults_are_five_retries_from_fifty_milliseconds_to_two_seconds() -> None:
    policy = RetryPolicy()
    assert (policy.retries, policy.base_delay, policy.max_delay) == (5, 0.05, 2.0)
    assert policy.jitter is default_jitter
    random.seed(29)
    drawn = random.random()
    random.seed(29)
    assert default_jitter() == drawn  # random.random, imported at the first retry
    assert [policy.should_retry(OVERLOADED, n) for n in range(7)] == [True] * 5 + [False] * 2
    steady = RetryPolicy(jitter=lambda: 0.0)
    # d doubles from 0.05 until it meets the 2 s cap at the seventh retry.
    assert [steady.delay(n) for n in range(8)] == [0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert RetryPolicy(jitter=lambda: 1.0).delay(6) == 2.0


def test_retry_policy_zero_delays_retry_at_once() -> None:
    for policy in (
        RetryPolicy(retries=3, base_delay=0.0, jitter=lambda: 0.9),
        RetryPolicy(retries=3, max_delay=0.0, jitter=lambda: 0.9),
        RetryPolicy(retries=3, base_delay=0.0, max_delay=0.0, jitter=lambda: 0.9),
    ):
        assert [policy.delay(n) for n in range(5)] == [0.0] * 5
        assert [policy.should_retry(OVERLOADED, n) for n in range(4)] == [True, True, True, False]


def test_retry_policy_zero_retries_never_retries() -> None:
    assert NO_RETRY.retries == 0 and RetryPolicy(retries=0) == NO_RETRY
    assert not NO_RETRY.should_retry(OVERLOADED, 0)
    assert (NO_RETRY.base_delay, NO_RETRY.max_delay) == (0.05, 2.0)  # only the count differs from the default


def test_retry_policy_exponent_stops_doubling_at_64_so_huge_retries_do_not_overflow() -> None:
    # A base delay this small stays under the cap past 2**64: the doubling itself is what stops.
    policy = RetryPolicy(base_delay=2.0**-70, max_delay=1.0, jitter=lambda: 1.0)
    assert policy.delay(63) == 2.0**-7
    assert policy.delay(64) == 2.0**-6
    assert policy.delay(65) == policy.delay(1024) == policy.delay(10**9) == 2.0**-6
    # 2.0 ** 1024 alone would raise OverflowError; clamped, a big base delay meets the cap.
    assert RetryPolicy(base_delay=1e300, max_delay=3.0, jitter=lambda: 0.0).delay(10**6) == 1.5


def test_retry_policy_only_an_overloaded_answer_is_retried() -> None:
    policy = RetryPolicy(retries=9)
    assert policy.should_retry(OVERLOADED, 0)
    for error in (RpcError(-32600, "Invalid request"), RpcError(-32603, "Internal error")):
        assert not any(policy.should_retry(error, n) for n in range(10))


@pytest.mark.parametrize("field", ["retries", "base_delay", "max_delay"])
def test_retry_policy_refuses_negative_numbers(field: str) -> None:
    with pytest.raises(ConfigError, match="must not be negative"):
        RetryPolicy(**{field: -1})


@pytest.mark.parametrize("field, value", [("retries", -1), ("base_delay", -1e-9), ("max_delay", -0.5)])
def test_retry_policy_refuses_any_negative_number_not_only_minus_one(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match="^retries and delays must not be negative$"):
        RetryPolicy(**{field: value})


def test_retry_policy_is_a_frozen_value_compared_without_its_jitter() -> None:
    policy = RetryPolicy(retries=2, jitter=lambda: 0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.retries = 3  # type: ignore[misc]
    same = RetryPolicy(retries=2, jitter=lambda: 1.0)
    assert policy == same and hash(policy) == hash(same)
    assert policy != RetryPolicy(retries=3) and policy != RetryPolicy(retries=2, base_delay=0.1)
    assert repr(policy) == "RetryPolicy(retries=2, base_delay=0.05, max_delay=2.0)"
