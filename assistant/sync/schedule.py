"""Syncs on a schedule: one at a time, a run still going when the next is due skips it."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

from assistant.errors import AssistantError, ConfigError, IndexBusyError

__all__ = ["parse_interval", "run_every"]

logger = logging.getLogger(__name__)

_INTERVAL = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)")
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_interval(text: str) -> float:
    """Return ``15m``, ``1h``, ``30s`` or ``90`` (seconds) as seconds.

    Raises:
        ConfigError: Not such a duration, or under 10 seconds.
    """
    match = _INTERVAL.fullmatch(text.strip().lower())
    if match is None:
        raise ConfigError(f"--every takes a duration such as 15m, 1h or 90s, got {text!r}")
    seconds = float(match.group(1)) * _UNIT[match.group(2)]
    if seconds < 10:
        raise ConfigError(f"--every must be at least 10s, got {text!r}")
    return seconds


def run_every(
    interval: float,
    job: Callable[[], object],
    *,
    stop: threading.Event,
    clock: Callable[[], float] = time.monotonic,
    wait: Callable[[float], object] | None = None,
) -> int:
    """Run ``job`` now and then every ``interval`` seconds until ``stop`` is set.

    Runs never stack: when one takes longer than the interval, the runs that
    fell due meanwhile are skipped (logged), and the next starts on the grid.
    A failed run is logged and the schedule goes on.

    Returns:
        The number of runs that failed.
    """
    pause = stop.wait if wait is None else wait
    failed = 0
    start = clock()
    while not stop.is_set():
        began = clock()
        try:
            job()
        except IndexBusyError as exc:
            logger.warning("sync skipped: %s", exc)
        except AssistantError as exc:
            failed += 1
            logger.error("sync failed: %s", exc)
        now = clock()
        slots = int((now - start) // interval) + 1
        missed = slots - 1 - int((began - start) // interval)
        if missed > 0:
            logger.warning("a sync took %.0f s: skipped %d due run(s)", now - began, missed)
        pause(start + slots * interval - now)
    return failed
