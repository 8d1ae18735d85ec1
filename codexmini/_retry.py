"""When and how long to wait before sending again a request codex rejected unprocessed.  Pure.

codex's app-server keeps bounded queues; when request ingress is full it
answers ``-32001`` "Server overloaded; retry later." *without processing the
request*, and asks clients to retry with exponential backoff and jitter
(codex-rs/app-server README, "Backpressure behavior").  A flood of a few
hundred requests provokes it on every supported codex (the ``overload``
scenario: the first rejection comes at about the 128th request in flight).
Since the request was never processed, sending it again is safe whatever the
method; no other error is retried (an error codex *did* process may have had
effects).

:class:`RetryPolicy` holds the numbers and the jitter source; the client
(:meth:`AppServerClient.request <codexmini.AppServerClient.request>`) does the
waiting with a sleep it is given, so tests need neither a clock nor luck.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ._errors import ConfigError, RpcError, ServerOverloaded

if TYPE_CHECKING:  # the checker sees the standard library; at run time, ._dataclasses (nothing compiled)
    from dataclasses import dataclass, field
else:
    from ._dataclasses import dataclass, field


def default_jitter() -> float:
    """:func:`random.random`, imported at the first retry rather than with the package."""
    import random

    return random.random()


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of a request codex rejected as overloaded (``-32001``).

    ``retries`` more attempts after the first (``0``: never retry -- the off
    switch, :data:`NO_RETRY`).  Before retry *n* (from 0) the client waits
    ``d/2 + jitter() * d/2`` seconds with ``d = min(max_delay, base_delay *
    2**n)``: exponential, capped, half of it random so that clients rejected
    together do not come back together ("equal jitter").  ``jitter`` returns a
    float in ``[0, 1)``; the default calls :func:`random.random` (``random``
    is imported at the first retry, not with the package).
    """

    retries: int = 5
    base_delay: float = 0.05
    max_delay: float = 2.0
    jitter: Callable[[], float] = field(default=default_jitter, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.retries < 0 or self.base_delay < 0 or self.max_delay < 0:
            raise ConfigError("retries and delays must not be negative")

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first)."""
        cap = min(self.max_delay, self.base_delay * 2.0 ** min(retry, 64))
        return cap / 2 + self.jitter() * cap / 2

    def should_retry(self, error: RpcError, retry: int) -> bool:
        """Whether to send again after ``error``, ``retry`` retries in."""
        return isinstance(error, ServerOverloaded) and retry < self.retries


#: Never retry: an overloaded answer is raised at once as ServerOverloaded.
NO_RETRY = RetryPolicy(retries=0)

__all__ = ["NO_RETRY", "RetryPolicy"]
