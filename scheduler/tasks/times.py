"""Task times as people and scripts read them: ISO 8601 UTC for ``--json``, local time for listings and
log headers. Their own module so that ``gputray queue`` prints times without loading the task model
(``tasks.records`` re-exports them)."""

from __future__ import annotations

import datetime as dt
import math
import time


def iso_utc(epoch_s: float | None) -> str | None:
    if epoch_s is None:
        return None
    whole = math.floor(epoch_s)
    millis = min(999, round((epoch_s - whole) * 1000))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def local_time(epoch_s: float | None, now_s: float | None = None, *, short: bool = False) -> str:
    """A time for listings, in local time: ``14:02`` today, ``11-30 14:02`` this year, else with the
    year (``short``: the date alone, ``11-30``); "-" for none. (``--json`` keeps ISO 8601 UTC.)"""
    if epoch_s is None:
        return "-"
    try:
        t = dt.datetime.fromtimestamp(epoch_s)
        now = dt.datetime.fromtimestamp(time.time() if now_s is None else now_s)
    except (OverflowError, OSError, ValueError):
        return "?"
    if t.date() == now.date():
        return t.strftime("%H:%M")
    if short:
        return t.strftime("%m-%d") if t.year == now.year else t.strftime("%Y-%m")
    return t.strftime("%m-%d %H:%M") if t.year == now.year else t.strftime("%Y-%m-%d %H:%M")


def local_iso(epoch_s: float) -> str:
    """``2026-11-30 14:02:03 +0100``: a local time with its offset, for a log header."""
    return dt.datetime.fromtimestamp(epoch_s).astimezone().strftime("%Y-%m-%d %H:%M:%S %z")


def about(seconds: float) -> str:
    """``~40 s``, ``~12 min``, ``~2 h 05 min``: an estimate, rounded as one."""
    s = max(0, round(seconds))
    if s < 90:
        return f"~{s} s"
    if s < 5400:
        return f"~{round(s / 60)} min"
    return f"~{s // 3600} h {s % 3600 // 60:02d} min"
