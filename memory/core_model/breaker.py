"""A circuit breaker for the core model: stop calling a model server that keeps failing.

    closed --N consecutive failures--> open --cool-down--> half_open --success--> closed
                                        ^                      |
                                        +------failure---------+

While open, `allow()` says no, so queued sessions wait instead of burning their retry
attempts on a server that is down. Half-open lets one probe through at a time; its outcome
decides. Used from one event loop, so it holds no lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    def __init__(
        self,
        *,
        failure_threshold: int = 5,
        cooldown_seconds: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        if cooldown_seconds < 0:
            raise ValueError("cooldown_seconds must not be negative")
        self.failure_threshold = failure_threshold
        self.cooldown_seconds = cooldown_seconds
        self._clock = clock
        self._consecutive_failures = 0
        self._opened_at: float | None = None
        self._probe_started_at: float | None = None

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at < self.cooldown_seconds:
            return "open"
        return "half_open"

    @property
    def retry_in(self) -> float:
        """Seconds until the breaker lets a call through again; 0 when it would now."""
        if self._opened_at is None:
            return 0.0
        return max(0.0, self._opened_at + self.cooldown_seconds - self._clock())

    def allow(self) -> bool:
        """May a call go to the core model now? In half-open, only one probe is let through;
        a probe whose outcome is never recorded (its task was cancelled) expires after
        another cool-down, so the breaker cannot stay shut forever."""
        state = self.state
        if state == "closed":
            return True
        if state == "open":
            return False
        now = self._clock()
        probe_in_flight = (
            self._probe_started_at is not None
            and now - self._probe_started_at < self.cooldown_seconds
        )
        if probe_in_flight:
            return False
        self._probe_started_at = now
        return True

    def record_success(self) -> None:
        self._consecutive_failures = 0
        self._opened_at = None
        self._probe_started_at = None

    def record_failure(self) -> None:
        self._consecutive_failures += 1
        self._probe_started_at = None
        # A failed probe re-opens at once; a closed breaker opens at the threshold.
        if self._opened_at is not None or self._consecutive_failures >= self.failure_threshold:
            self._opened_at = self._clock()
