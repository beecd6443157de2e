"""The limits of task values, checked by msgspec wherever a spec or a patch is decoded (a task file, a
request, a cluster hand-over); ``records`` builds its field types from them and ``protocol`` its
request limits. Their own module so that the protocol has them without loading the task model."""

from __future__ import annotations

import math

from gputray.scheduler.reasons import taskfile_codes as t

MAX_RETRIES = 100
MAX_PRIORITY = 1_000_000  # SQLite stores 64-bit integers; the queue orders by priority
#: The words a choice key takes (``records`` types them as Literals, ``keys`` offers them).
KINDS: tuple[str, ...] = ("torch", "vulkan", "command")
ON_BUSY: tuple[str, ...] = ("wait", "redirect", "cpu")
AFTER_MAX_WAIT: tuple[str, ...] = ("redirect", "cpu", "fail")
PREFER: tuple[str, ...] = ("free", "fastest", "greenest")
ON_OOM: tuple[str, ...] = ("fail", "elsewhere")
ON_LATE: tuple[str, ...] = ("auto", "move", "stay")
# 1970-01-01 to 9999-12-31 UTC: what datetime (and so every time shown)
# can represent; durations up to 10 years; sizes up to 1 PiB.
MIN_EPOCH_S = 0.0
MAX_EPOCH_S = 253_402_300_799.0
MAX_DURATION_S = 10 * 365.25 * 86_400.0
MAX_SIZE_BYTES = 1 << 50  # 1 PiB
MAX_TASK_ID = 2**63 - 1
MAX_TEXT_CHARS = 131_072  # Linux refuses a single argument or environment string over 128 KiB
MAX_ITEMS = 10_000
MAX_ENV_KEYS = 4_096


class ValueProblem(ValueError):
    """A value a task key cannot take; ``said``: why, as a code (``reasons.taskfile_codes``), worded in
    the reader's language where it is shown. ``str()`` is its English, as it has always read; it is
    worded only when asked for, so that reading a value loads no catalogue."""

    def __init__(self, said: t.Problem) -> None:
        super().__init__(said)
        self.said: t.Problem = said

    def __str__(self) -> str:
        from gputray.scheduler.reasons.render import render

        return render(self.said)


def check_epoch_s(value: float, what: str | None = None) -> float:
    """Finite and within 1970–9999, or ValueProblem naming the limit (``what``: the key or option, as
    written; None: "the time")."""
    if not math.isfinite(value) or not MIN_EPOCH_S <= value <= MAX_EPOCH_S:
        raise ValueProblem(t.DateOutOfRange(what=what))
    return value


def check_duration_s(value: float) -> float:
    if not math.isfinite(value) or not 0 <= value <= MAX_DURATION_S:
        raise ValueProblem(t.TooLong(got_s=value, limit_s=MAX_DURATION_S))
    return value


def check_size_bytes(value: float) -> int:
    if not math.isfinite(value) or not 0 <= value <= MAX_SIZE_BYTES:
        raise ValueProblem(t.TooBig(got_bytes=value, limit_bytes=MAX_SIZE_BYTES))
    return int(value)
