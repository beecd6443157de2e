"""How durations, sizes and times are written, in a task file and on the command line: ``"10m"``,
``"4GiB"``, ``2026-12-01T01:00:00``. Their own module so that ``gputray run --timeout 2h`` reads its
options without loading the task-file reader (``taskfile`` re-exports them)."""

from __future__ import annotations

import datetime as dt
import math
import re

from gputray.scheduler.reasons import taskfile_codes as t
from gputray.scheduler.tasks.limits import ValueProblem, check_duration_s, check_epoch_s, check_size_bytes

_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|sec|min|hr|s|m|h|d)?", re.IGNORECASE)
_DURATION_UNITS = {"ms": 0.001, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600, "d": 86400}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)(b?)\s*$", re.IGNORECASE)
_SIZE_POW = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_duration(value: object) -> float:
    """``"10m"`` → 600.0; numbers are seconds. Raises ValueProblem (a ValueError) saying what is wrong."""
    if isinstance(value, bool):
        raise ValueProblem(t.UnreadableValue(form="duration_or_seconds", got=repr(value)))
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueProblem(t.Negative(what="duration", got=repr(value), number=True))
        return check_duration_s(float(value))
    if not isinstance(value, str):
        raise ValueProblem(t.UnreadableValue(form="duration", got=type(value).__name__, of_type=True))
    text = value.strip().replace(" ", "")
    if not text:
        raise ValueProblem(t.UnreadableValue(form="duration", got=None))
    if text.startswith("-"):
        raise ValueProblem(t.Negative(what="duration", got=f"{value!r:.80}"))
    total, pos = 0.0, 0
    for m in _DURATION_RE.finditer(text):
        if m.start() != pos or (m.group(2) is None and m.end() != len(text)):
            break
        total += float(m.group(1)) * _DURATION_UNITS[(m.group(2) or "s").lower()]
        pos = m.end()
    if pos != len(text):
        raise ValueProblem(t.UnreadableValue(form="duration_forms", got=f"{value!r:.80}"))
    return check_duration_s(total)


def parse_size(value: object) -> int:
    """``"4GiB"`` → 4294967296; ``"4GB"`` is SI (4e9); bare ``"4G"`` is binary. Numbers are bytes."""
    if isinstance(value, bool):
        raise ValueProblem(t.UnreadableValue(form="size_or_bytes", got=repr(value)))
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueProblem(t.Negative(what="size", got=repr(value), number=True))
        return check_size_bytes(value)
    if not isinstance(value, str):
        raise ValueProblem(t.UnreadableValue(form="size", got=type(value).__name__, of_type=True))
    if value.strip().startswith("-"):
        raise ValueProblem(t.Negative(what="size", got=f"{value!r:.80}"))
    m = _SIZE_RE.match(value)
    if not m or (not m.group(2) and (m.group(3))):
        raise ValueProblem(t.UnreadableValue(form="size_forms", got=f"{value!r:.80}"))
    number, prefix, binary, b = m.groups()
    prefix = prefix.lower()
    base = 1000 if (prefix and b and not binary) else 1024
    return check_size_bytes(float(number) * base ** _SIZE_POW[prefix])  # float("9" * 400) is inf


def parse_start_at(value: object) -> float:
    """A TOML datetime, an ISO string (local time without an offset) or epoch seconds → epoch seconds,
    within the years 1970–9999."""
    return check_epoch_s(_start_at(value), "start_at")


def _start_at(value: object) -> float:
    if isinstance(value, bool):
        raise ValueProblem(t.UnreadableValue(form="time", got=repr(value)))
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueProblem(t.UnreadableValue(form="time", got=repr(value))) from None
    if isinstance(value, dt.datetime):
        return value.timestamp()  # naive → local time, as a person means it
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day).timestamp()
    raise ValueProblem(t.UnreadableValue(form="time", got=type(value).__name__, of_type=True))
