"""Time: ``--at`` start times, daily windows, and recurring submissions (``schedule add --cron``).

One clock wakes the queue: the QueueService's dispatcher. This module only does the arithmetic, with
APScheduler's triggers (``CronTrigger.get_next_fire_time``; no scheduler, no worker threads):

* ``--at``, windows and retry backoffs are task fields that placement checks; placement's ``Wait``
  carries the time the task can next start (``next_window_open`` for windows), and the dispatcher
  sleeps until the earliest of them.
* Recurring schedules live in ``schedules.sqlite3`` in the data dir (id, cron, task file, overrides,
  ``last_run_at``), owned by the one owner process. ``Timing`` is one of the dispatcher's timers:
  it tells the dispatcher when its next run is due (``next_due_s``) and submits what is due when
  woken (``run_due``).

Missed runs: at most one run per schedule, never one per missed slot. While the owner runs and the
machine sleeps, the dispatcher wakes late and ``run_due`` runs each overdue schedule once; while the
owner was not running at all, ``catch_up()`` at start does the same from ``last_run_at``.

A wall clock that is set (by hand, by NTP, a time zone change): each look at the plan compares how far
the wall clock and the monotonic clock moved since the last (``ClockJumps``). After a jump the next
runs are planned afresh from the new time: set back an hour, a ``*/5`` schedule runs at the next five
minutes of the new time, not an hour later; set forward, a run that became due runs once, as after
sleep. ``schedule list`` shows that same plan (``Timing.planned``: the dispatcher's and the listing's).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from gputray.scheduler.protocol import Refusal, check_epoch_s
from gputray.scheduler.replies import ScheduleView
from gputray.scheduler.tasks.records import TaskPatch, parse_window, window_open

log = logging.getLogger("gputray.timing")

CLOCK_JUMP_S = 2.0  # the wall clock moved this much more (or less) than the monotonic one: it was set

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedules (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    cron TEXT NOT NULL,
    task_file TEXT NOT NULL,
    overrides TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    last_run_at REAL,
    last_error TEXT
);
"""


_SELECT = "SELECT id, name, cron, task_file, overrides, created_at, last_run_at, last_error FROM schedules"


class TimingError(Refusal, ValueError):
    """A bad ``--at``, ``--window`` or ``--cron`` value, or an unknown schedule id."""


@dataclass(frozen=True)
class Schedule:
    id: int
    name: str
    cron: str
    task_file: str
    overrides: TaskPatch
    created_at: float
    last_run_at: float | None = None
    last_error: str | None = None

    def view(self, next_run_at: float | None = None) -> ScheduleView:
        """What a client is told of this schedule (``schedule list``)."""
        return ScheduleView(
            id=self.id,
            name=self.name,
            cron=self.cron,
            task_file=self.task_file,
            overrides=self.overrides,
            created_at=self.created_at,
            last_run_at=self.last_run_at,
            next_run_at=next_run_at,
            last_error=self.last_error,
        )


# --------------------------------------------------------------------------------------------------
# Pure parts (fake-clock friendly: every function takes ``now_s``)

_REL_RE = re.compile(r"^\s*(?:in\s+|\+)(.+)$", re.IGNORECASE)
_HHMM_RE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*$")


def local_zone() -> dt.tzinfo:
    """The local time zone with its DST rules (tzlocal, which APScheduler depends on), so that
    "0 3 * * *" stays at 03:00 across a DST change; a fixed offset only if tzlocal cannot tell."""
    try:
        import tzlocal

        zone: dt.tzinfo = tzlocal.get_localzone()
        return zone
    except Exception:
        tz = dt.datetime.now().astimezone().tzinfo
        assert tz is not None
        return tz


def parse_at(text: str, now_s: float) -> float:
    """``--at``: ``"HH:MM"`` (the next such local time), ``"+10m"`` / ``"in 2h"``, or an ISO date-time.

    Returns epoch seconds. A past ISO time is an error (a typo, most likely), not "now".
    """
    from gputray.scheduler.tasks.taskfile import parse_duration

    rel = _REL_RE.match(text)
    if rel:
        try:
            return _within_years(now_s + parse_duration(rel.group(1)), text)
        except TimingError:
            raise
        except ValueError as exc:
            raise TimingError(f"--at {text!r}: {exc}") from None
    hhmm = _HHMM_RE.match(text)
    if hhmm:
        hour, minute = int(hhmm.group(1)), int(hhmm.group(2))
        if hour > 23 or minute > 59:
            raise TimingError(f"--at {text!r}: expected a time between 00:00 and 23:59")
        now = dt.datetime.fromtimestamp(now_s)
        when = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if when.timestamp() <= now_s:
            when += dt.timedelta(days=1)
        return when.timestamp()
    try:
        stamp = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise TimingError(
            f"--at {text!r}: expected HH:MM, +DURATION (e.g. +10m) or a date-time like 2026-12-01T01:00"
        ) from None
    value = stamp.timestamp()
    if value < now_s - 60:
        raise TimingError(f"--at {text!r} is in the past")
    return _within_years(value, text)


def _within_years(value: float, text: str) -> float:
    try:
        return check_epoch_s(value, f"--at {text!r}")
    except ValueError as exc:
        raise TimingError(str(exc)) from None


def next_window_open(window: str, now_s: float) -> float:
    """When the daily local window is next open: ``now_s`` itself if it is open now (DST-aware)."""
    if window_open(window, now_s):
        return now_s
    start_min, _ = parse_window(window)
    tz = local_zone()
    fire = _opening(start_min, tz).get_next_fire_time(None, _aware(now_s, tz))
    return float(fire.timestamp())


@functools.lru_cache(maxsize=64)
def _opening(start_min: int, tz: dt.tzinfo) -> Any:
    from apscheduler.triggers.cron import CronTrigger

    return CronTrigger(hour=start_min // 60, minute=start_min % 60, timezone=tz)


_WEEKDAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # cron's numbering: 0 (and 7) = Sunday


def _cron_weekday(day: str, expr: str) -> int:
    day = day.strip().lower()
    if day[:3] in _WEEKDAY_NAMES and len(day) >= 3:
        return _WEEKDAY_NAMES.index(day[:3])
    if day.isdigit() and 0 <= int(day) <= 7:
        return int(day) % 7
    raise TimingError(f"--cron {expr!r}: {day!r} is not a weekday (0-7 with 0 and 7 Sunday, or sun..sat)")


def weekdays_as_names(field: str, expr: str) -> str:
    """A crontab weekday field in names. APScheduler 3 numbers weekdays from Monday = 0, crontab from
    Sunday = 0 (and 7): handed over as numbers, "1-5" would run Tuesday to Saturday."""
    if field in ("*", "?"):
        return "*"
    days: set[int] = set()
    for part in field.split(","):
        base, _, step_text = part.partition("/")
        if (step_text and not step_text.isdigit()) or step_text == "0":
            raise TimingError(f"--cron {expr!r}: {part!r} has a bad step")
        step = int(step_text) if step_text else 1
        if base == "*":
            first, last = 0, 6
        elif "-" in base:
            a, b = base.split("-", 1)
            first, last = _cron_weekday(a, expr), _cron_weekday(b, expr)
            if b.strip() == "7":
                last = 7  # "5-7": Friday to Sunday
        else:
            first = _cron_weekday(base, expr)
            last = 6 if step_text else first
        if last < first:
            raise TimingError(f"--cron {expr!r}: the weekday range {base!r} runs backwards")
        days.update(d % 7 for d in range(first, last + 1, step))
    return ",".join(_WEEKDAY_NAMES[d] for d in sorted(days))


def cron_trigger(expr: str, tz: dt.tzinfo | None = None) -> Any:
    """A five-field crontab line (``"0 3 * * *"``) → APScheduler CronTrigger, or TimingError.

    Fields mean what they mean in crontab(5), weekdays included (0 or 7 = Sunday), and so does a day
    of the month together with a weekday: "30 4 1,15 * 5" runs on the 1st, the 15th *and* every Friday."""
    from apscheduler.triggers.cron import CronTrigger

    if not isinstance(expr, str) or len(expr.split()) != 5:
        raise TimingError(
            f"--cron {expr!r}: expected five fields 'minute hour day month weekday', e.g. \"0 3 * * *\""
        )
    minute, hour, day, month, weekday = expr.split()
    zone = tz or local_zone()

    def trigger(day: str, weekday: str) -> Any:
        return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=weekday, timezone=zone)

    try:
        days_of_week = weekdays_as_names(weekday, expr)
        # crontab(5): when both the day of the month and the weekday are restricted (neither starts
        # with "*"), a run is due when *either* matches; APScheduler alone would need both.
        if not day.startswith(("*", "?")) and not weekday.startswith(("*", "?")):
            from apscheduler.triggers.combining import OrTrigger

            return OrTrigger([trigger(day, "*"), trigger("*", days_of_week)])
        return trigger(day, days_of_week)
    except TimingError:
        raise  # already names the line
    except (ValueError, TypeError, KeyError) as exc:
        raise TimingError(f"--cron {expr!r}: {exc}") from None


def _aware(epoch_s: float, tz: dt.tzinfo) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch_s, tz=tz)


def next_cron_run(expr: str, after_s: float, tz: dt.tzinfo | None = None) -> float | None:
    """The first run strictly after ``after_s``."""
    tz = tz or local_zone()
    trigger = cron_trigger(expr, tz)
    # CronTrigger rounds ``now`` up to the next whole second and includes it: step past after_s.
    start = _aware(after_s + 1e-3, tz)
    fire = trigger.get_next_fire_time(None, start)
    return None if fire is None else float(fire.timestamp())


def missed_run(expr: str, last_run_s: float, now_s: float, tz: dt.tzinfo | None = None) -> float | None:
    """The first scheduled run after ``last_run_s`` that is already due at ``now_s`` (None if none)."""
    first = next_cron_run(expr, last_run_s, tz)
    if first is not None and first <= now_s:
        return first
    return None


class ClockJumps:
    """Notices the wall clock being set: since the last look it moved more than ``threshold_s`` away
    from the monotonic clock (which nobody sets). Waking from sleep reads as a jump forward (the
    monotonic clock stops while the machine sleeps). Thread-safe."""

    def __init__(
        self,
        wall: Callable[[], float],
        *,
        monotonic: Callable[[], float] = time.monotonic,
        threshold_s: float = CLOCK_JUMP_S,
    ) -> None:
        self.wall = wall
        self.monotonic = monotonic
        self.threshold_s = threshold_s
        self._last: tuple[float, float] | None = None
        self._lock = threading.Lock()

    def jumped(self) -> float | None:
        """Seconds the wall clock was set by since the last call (negative: back), else None."""
        wall, mono = self.wall(), self.monotonic()
        with self._lock:
            last, self._last = self._last, (wall, mono)
        if last is None:
            return None
        drift = (wall - last[0]) - (mono - last[1])
        return drift if abs(drift) > self.threshold_s else None


# --------------------------------------------------------------------------------------------------
# The store


class ScheduleStore:
    """The recurring schedules (one small SQLite file; WAL; each call its own short transaction)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=10)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.close()

    @staticmethod
    def _row(row: tuple[Any, ...]) -> Schedule:
        return Schedule(row[0], row[1], row[2], row[3], _overrides(row[4], f"schedule #{row[0]}"), *row[5:])

    def add(self, name: str, cron: str, task_file: str, overrides: TaskPatch, now_s: float) -> Schedule:
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO schedules (name, cron, task_file, overrides, created_at) VALUES (?, ?, ?, ?, ?)",
                (name, cron, task_file, msgspec.json.encode(overrides).decode(), now_s),
            )
            row_id = cur.lastrowid
        assert row_id is not None
        return self.get(row_id)

    def get(self, schedule_id: int) -> Schedule:
        with self._lock:
            row = self._db.execute(f"{_SELECT} WHERE id = ?", (schedule_id,)).fetchone()
        if row is None:
            raise TimingError(f"no schedule with id {schedule_id}; see `gputray schedule list`")
        return self._row(row)

    def all(self) -> list[Schedule]:
        with self._lock:
            rows = self._db.execute(f"{_SELECT} ORDER BY id").fetchall()
        return [self._row(r) for r in rows]

    def remove(self, schedule_id: int) -> Schedule:
        entry = self.get(schedule_id)
        with self._lock:
            self._db.execute("DELETE FROM schedules WHERE id = ?", (schedule_id,))
        return entry

    def mark_run(self, schedule_id: int, when_s: float, error: str | None) -> None:
        with self._lock:
            self._db.execute(
                "UPDATE schedules SET last_run_at = ?, last_error = ? WHERE id = ?",
                (when_s, error, schedule_id),
            )


# --------------------------------------------------------------------------------------------------
# The live part

SubmitSchedule = Callable[[Schedule], object]


class Timing:
    """The recurring submissions: one of the dispatcher's timers (``next_due_s``, ``run_due``).

    ``submit(schedule)`` submits a schedule's task file (the owner passes QueueService-backed code);
    it is called from the dispatcher thread, outside its lock.
    """

    def __init__(
        self,
        db_path: Path,
        *,
        submit: SubmitSchedule,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        tz: dt.tzinfo | None = None,
    ) -> None:
        self.store = ScheduleStore(db_path)
        self._submit = submit
        self.clock = clock
        self.tz = tz or local_zone()
        self._next: dict[int, float | None] = {}  # schedule id → its next run
        self._lock = threading.Lock()
        self._jumps = ClockJumps(clock, monotonic=monotonic)

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> list[int]:
        """Catch up missed runs once, then plan every recurring entry. Returns ids caught up."""
        caught_up = self.catch_up()
        self._jumps.jumped()  # the reference the next look compares with
        now = self.clock()
        for entry in self.store.all():
            self._plan(entry, now)
        return caught_up

    def stop(self) -> None:
        self.store.close()

    def _plan(self, entry: Schedule, after_s: float) -> None:
        try:
            nxt = next_cron_run(entry.cron, after_s, self.tz)
        except TimingError as exc:
            log.error("schedule %s has a bad cron line: %s", entry.id, exc)
            nxt = None
        with self._lock:
            self._next[entry.id] = nxt

    # --- the dispatcher's timer ------------------------------------------------------------------

    def planned(self) -> dict[int, float | None]:
        """Each schedule's next run: what the dispatcher waits for and ``schedule list`` shows. Planned
        afresh from the new time when the wall clock was set since the last look (see the module
        docstring): a run planned later than the new time's next one moves to it; one that became
        due stays due (it runs once)."""
        jump = self._jumps.jumped()
        if jump is not None:
            now = self.clock()
            log.info("the wall clock was set %+.0f s: planning the schedules' next runs afresh", jump)
            for entry in self.store.all():
                try:
                    fresh = next_cron_run(entry.cron, now, self.tz)
                except TimingError:
                    continue
                with self._lock:
                    old = self._next.get(entry.id)
                    if fresh is not None and (old is None or fresh < old):
                        self._next[entry.id] = fresh
        with self._lock:
            return dict(self._next)

    def next_due_s(self) -> float | None:
        times = [t for t in self.planned().values() if t is not None]
        return min(times) if times else None

    def run_due(self, now_s: float) -> list[int]:
        """Submit each schedule whose run is due (once, however many runs were missed); plan the next."""
        due = [sid for sid, t in self.planned().items() if t is not None and t <= now_s]
        for schedule_id in due:
            self.run_schedule(schedule_id)
            with contextlib.suppress(TimingError):
                self._plan(self.store.get(schedule_id), now_s)
        return due

    # --- recurring -------------------------------------------------------------------------------

    def add(
        self, cron: str, task_file: str, *, overrides: TaskPatch | None = None, name: str | None = None
    ) -> Schedule:
        now = self.clock()
        if next_cron_run(cron, now, self.tz) is None:  # also checks the line itself
            raise TimingError(f"--cron {cron!r}: that never happens (no such date)")
        entry = self.store.add(name or Path(task_file).name, cron, task_file, overrides or TaskPatch(), now)
        self._plan(entry, now)
        return entry

    def remove(self, schedule_id: int) -> Schedule:
        entry = self.store.remove(schedule_id)
        with self._lock:
            self._next.pop(schedule_id, None)
        return entry

    def entries(self) -> list[tuple[Schedule, float | None]]:
        """Every schedule with its next run as the dispatcher plans it (``planned``)."""
        plan = self.planned()
        out = []
        for entry in self.store.all():
            if entry.id not in plan:  # added by another process meanwhile: plan it now
                self._plan(entry, self.clock())
                plan = self.planned()
            out.append((entry, plan.get(entry.id)))
        return out

    def catch_up(self) -> list[int]:
        """Run once each schedule whose run fell due while no owner was running (coalesced)."""
        now = self.clock()
        done = []
        for entry in self.store.all():
            since = entry.last_run_at if entry.last_run_at is not None else entry.created_at
            try:
                due = missed_run(entry.cron, since, now, self.tz)
            except TimingError:
                continue
            if due is not None:
                log.info("schedule %s (%s): catching up the run due at %s", entry.id, entry.name, due)
                self.run_schedule(entry.id)
                done.append(entry.id)
        return done

    def run_schedule(self, schedule_id: int) -> None:
        try:
            entry = self.store.get(schedule_id)
        except TimingError:
            return
        error: str | None = None
        try:
            self._submit(entry)
        except Exception as exc:  # a broken task file must not stop the schedule
            error = f"{type(exc).__name__}: {exc}"
            log.error(
                "schedule %s (%s) could not submit %s: %s", entry.id, entry.name, entry.task_file, error
            )
        self.store.mark_run(schedule_id, self.clock(), error)


def _overrides(text: object, source: str) -> TaskPatch:
    """A schedule's stored options (``{}`` for none). Rows of older versions may use task-file keys
    (``vram = "4GiB"``): they are read as a task file's; a row that cannot be read adds nothing."""
    from gputray.scheduler.tasks.taskfile import TaskFileError, patch_from_table

    try:
        data = json.loads(text) if isinstance(text, str) else None
        return patch_from_table(data, source=source) if isinstance(data, dict) else TaskPatch()
    except (ValueError, TaskFileError) as exc:
        log.warning("%s: its options are left out: %s", source, exc)
        return TaskPatch()
