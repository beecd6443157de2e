"""Time: ``--at`` start times, daily windows, and recurring submissions (``schedule add --cron``).

Why our own SQLite table and APScheduler's MemoryJobStore, not its SQLAlchemyJobStore:
SQLAlchemy is a heavy extra dependency for one table, and APScheduler 3.x pickles job state into
that store, which ties stored rows to our function signatures. Instead, recurring schedules live in
``schedules.sqlite3`` in the data dir (id, cron, task file, overrides, ``last_run_at``), owned by the
one owner process, and the BackgroundScheduler's memory store is rebuilt from it at every start.
Job callables are ``module:function`` text references (``gputray.scheduler.timing:fire_schedule``),
as a persistent store would need them.

Missed runs: while the owner runs and the machine sleeps, APScheduler sees the job's run time in the
past on wake-up; with ``coalesce=True`` and ``misfire_grace_time=None`` (no limit) it runs it once,
however many runs were missed. While the owner was not running at all, ``catch_up()`` at start does
the same from ``last_run_at``: at most one run per schedule, never one per missed slot.

``--at`` and windows are task fields checked by placement (a task never starts before ``start_at`` or
outside its window); here they only become precise wake-ups (``wake_at``) so the queue dispatches at
that moment instead of at the next monitor tick.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
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

from gputray.scheduler.tasks import parse_window, window_open

log = logging.getLogger("gputray.timing")

FIRE_SCHEDULE_REF = "gputray.scheduler.timing:fire_schedule"
WAKE_REF = "gputray.scheduler.timing:fire_wake"

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


class TimingError(ValueError):
    """A bad ``--at``, ``--window`` or ``--cron`` value, or an unknown schedule id."""

    user_error = True


@dataclass(frozen=True)
class Schedule:
    id: int
    name: str
    cron: str
    task_file: str
    overrides: dict[str, Any]
    created_at: float
    last_run_at: float | None = None
    last_error: str | None = None

    def to_json(self, next_run_at: float | None = None) -> dict[str, Any]:
        from gputray.scheduler.tasks import iso_utc

        return {
            "id": self.id,
            "name": self.name,
            "cron": self.cron,
            "task_file": self.task_file,
            "overrides": self.overrides,
            "created_at": iso_utc(self.created_at),
            "last_run_at": iso_utc(self.last_run_at),
            "next_run_at": iso_utc(next_run_at),
            "last_error": self.last_error,
        }


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
    from gputray.scheduler.taskfile import parse_duration

    rel = _REL_RE.match(text)
    if rel:
        try:
            return now_s + parse_duration(rel.group(1))
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
    return value


def next_window_open(window: str, now_s: float) -> float:
    """When the daily local window is next open: ``now_s`` itself if it is open now."""
    if window_open(window, now_s):
        return now_s
    start_min, _ = parse_window(window)
    opening = dt.datetime.fromtimestamp(now_s).replace(
        hour=start_min // 60, minute=start_min % 60, second=0, microsecond=0
    )
    if opening.timestamp() <= now_s:
        opening += dt.timedelta(days=1)
    return opening.timestamp()


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

    Fields mean what they mean in crontab(5), weekdays included (0 or 7 = Sunday)."""
    from apscheduler.triggers.cron import CronTrigger

    if not isinstance(expr, str) or len(expr.split()) != 5:
        raise TimingError(
            f"--cron {expr!r}: expected five fields 'minute hour day month weekday', e.g. \"0 3 * * *\""
        )
    minute, hour, day, month, weekday = expr.split()
    try:
        return CronTrigger(
            minute=minute,
            hour=hour,
            day=day,
            month=month,
            day_of_week=weekdays_as_names(weekday, expr),
            timezone=tz or local_zone(),
        )
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
        try:
            overrides = json.loads(row[4])
        except ValueError:
            overrides = {}
        return Schedule(
            row[0], row[1], row[2], row[3], overrides if isinstance(overrides, dict) else {}, *row[5:]
        )

    def add(self, name: str, cron: str, task_file: str, overrides: dict[str, Any], now_s: float) -> Schedule:
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO schedules (name, cron, task_file, overrides, created_at) VALUES (?, ?, ?, ?, ?)",
                (name, cron, task_file, json.dumps(overrides), now_s),
            )
            row_id = cur.lastrowid
        assert row_id is not None
        return self.get(row_id)

    def get(self, schedule_id: int) -> Schedule:
        with self._lock:
            row = self._db.execute(
                "SELECT id, name, cron, task_file, overrides, created_at, last_run_at, last_error "
                "FROM schedules WHERE id = ?",
                (schedule_id,),
            ).fetchone()
        if row is None:
            raise TimingError(f"no schedule with id {schedule_id}; see `gputray schedule list`")
        return self._row(row)

    def all(self) -> list[Schedule]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, name, cron, task_file, overrides, created_at, last_run_at, last_error "
                "FROM schedules ORDER BY id"
            ).fetchall()
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

#: Live Timing objects by token, so text job references can find them.
_INSTANCES: dict[str, Timing] = {}
_TOKENS = itertools.count(1)


def fire_schedule(token: str, schedule_id: int) -> None:
    """APScheduler job target (by reference): one recurring run is due."""
    timing = _INSTANCES.get(token)
    if timing is not None:
        timing.run_schedule(schedule_id)


def fire_wake(token: str) -> None:
    """APScheduler job target (by reference): a start time or a window opened; dispatch now."""
    timing = _INSTANCES.get(token)
    if timing is not None:
        timing.wake()


SubmitSchedule = Callable[[Schedule], object]


class Timing:
    """Runs recurring submissions and precise wake-ups on an APScheduler 3.11 BackgroundScheduler.

    ``submit(schedule)`` submits a schedule's task file (the owner passes QueueService-backed code);
    ``wake()`` asks the queue to dispatch. Both are called from APScheduler's worker threads.
    """

    def __init__(
        self,
        db_path: Path,
        *,
        submit: SubmitSchedule,
        wake: Callable[[], object],
        clock: Callable[[], float] = time.time,
        tz: dt.tzinfo | None = None,
    ) -> None:
        self.store = ScheduleStore(db_path)
        self._submit = submit
        self._wake = wake
        self.clock = clock
        self.tz = tz or local_zone()
        self._token = f"t{next(_TOKENS)}"
        self._scheduler: Any = None
        self._wake_times: set[float] = set()
        self._lock = threading.Lock()

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self, *, run_scheduler: bool = True) -> list[int]:
        """Catch up missed runs once, then schedule every recurring entry. Returns ids caught up."""
        _INSTANCES[self._token] = self
        caught_up = self.catch_up()
        if run_scheduler:
            from apscheduler.schedulers.background import BackgroundScheduler

            self._scheduler = BackgroundScheduler(
                timezone=self.tz,
                job_defaults={"coalesce": True, "misfire_grace_time": None, "max_instances": 1},
            )
            self._scheduler.start()
            for entry in self.store.all():
                self._add_job(entry)
        return caught_up

    def stop(self) -> None:
        _INSTANCES.pop(self._token, None)
        if self._scheduler is not None:
            # APScheduler 3.x race: shutdown() marks the scheduler stopped before it takes the job-store
            # lock, so a _process_jobs pass in flight then fails to remove a finished date job
            # (JobLookupError in its thread). Pause, let the pass in flight finish, then shut down.
            with contextlib.suppress(Exception):
                self._scheduler.pause()
                with getattr(self._scheduler, "_jobstores_lock", contextlib.nullcontext()):
                    pass
            with contextlib.suppress(Exception):
                self._scheduler.shutdown(wait=False)
            self._scheduler = None
        self.store.close()

    def _add_job(self, entry: Schedule) -> None:
        if self._scheduler is None:
            return
        try:
            trigger = cron_trigger(entry.cron, self.tz)
        except TimingError as exc:
            log.error("schedule %s has a bad cron line: %s", entry.id, exc)
            return
        self._scheduler.add_job(
            FIRE_SCHEDULE_REF,
            trigger,
            args=[self._token, entry.id],
            id=f"schedule-{entry.id}",
            name=entry.name,
            replace_existing=True,
        )

    # --- recurring -------------------------------------------------------------------------------

    def add(
        self, cron: str, task_file: str, *, overrides: dict[str, Any] | None = None, name: str | None = None
    ) -> Schedule:
        if next_cron_run(cron, self.clock(), self.tz) is None:  # also checks the line itself
            raise TimingError(f"--cron {cron!r}: that never happens (no such date)")
        entry = self.store.add(name or Path(task_file).name, cron, task_file, overrides or {}, self.clock())
        self._add_job(entry)
        return entry

    def remove(self, schedule_id: int) -> Schedule:
        entry = self.store.remove(schedule_id)
        if self._scheduler is not None:
            with contextlib.suppress(Exception):
                self._scheduler.remove_job(f"schedule-{schedule_id}")
        return entry

    def entries(self) -> list[tuple[Schedule, float | None]]:
        now = self.clock()
        out = []
        for entry in self.store.all():
            try:
                nxt = next_cron_run(entry.cron, now, self.tz)
            except TimingError:
                nxt = None
            out.append((entry, nxt))
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

    # --- wake-ups --------------------------------------------------------------------------------

    def wake_at(self, when_s: float) -> None:
        """Dispatch at ``when_s`` (start_at, a window opening, a retry backoff). Past times are ignored."""
        if self._scheduler is None or when_s <= self.clock():
            return
        key = round(when_s, 1)
        with self._lock:
            if key in self._wake_times:
                return
            self._wake_times.add(key)
        self._scheduler.add_job(
            WAKE_REF,
            "date",
            run_date=_aware(when_s + 0.05, self.tz),
            args=[self._token],
            misfire_grace_time=None,
        )

    def wake_for_window(self, window: str) -> None:
        with contextlib.suppress(ValueError):
            self.wake_at(next_window_open(window, self.clock()))

    def wake(self) -> None:
        now = self.clock()
        with self._lock:
            self._wake_times = {t for t in self._wake_times if t > now}
        try:
            self._wake()
        except Exception:
            log.exception("dispatch after a timed wake-up failed")
