"""RetryPolicy, pure: the delays before each retry, which errors are retried, and the numbers it refuses.

The client's retries (the waiting it does with the sleep it is given, the
attempts counted, the stats) are tested against the fake app-server in
``test_lifecycle.py``; these are the policy's own.
"""

from __future__ import annotations

import pytest

from codexmini import NO_RETRY, RetryPolicy
from codexmini._errors import ConfigError, RpcError, ServerOverloaded


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


@pytest.mark.parametrize("field", ["retries", "base_delay", "max_delay"])
def test_retry_policy_refuses_negative_numbers(field: str) -> None:
    with pytest.raises(ConfigError, match="must not be negative"):
        RetryPolicy(**{field: -1})
