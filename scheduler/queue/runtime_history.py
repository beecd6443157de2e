"""What the queue learns from its own jobs: how long each job family ran on each device (and the energy
it used, whether the device throttled), and how long external use of a device (an LLM server holding
the GPU) has lasted before. A few recent entries each (``KEEP_RUNS`` per family and device,
``KEEP_SPELLS`` per device): recent runs say more about the next one than old ones, and the books stay
small enough to keep in memory whole.

``RunBook`` and ``SpellBook`` are plain in-memory books (the placement bench drives them with a fake
clock); ``RuntimeHistory`` keeps them in the queue's SQLite file (the ``job_runs`` and ``busy_spells``
tables, schema 4), loaded when the owner starts and written as runs end.
"""

from __future__ import annotations

import logging
import sqlite3
import statistics
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping

import msgspec

from gputray.monitor.records import Snapshot
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.queue.store_errors import StoreError

log = logging.getLogger(__name__)

KEEP_RUNS = 20  # runs kept per family and device
KEEP_SPELLS = 20  # external-busy spells kept per device
KEEP_FAMILIES = 1_000  # families kept at most (the most recently seen), whatever [retention] says
MIN_SPELL_S = 5.0  # shorter external use (a desktop blip) is not a spell worth learning from
MIN_STEADY_RUNS = 3  # runs that did not throttle, enough to estimate from alone


class JobRun(msgspec.Struct, frozen=True, kw_only=True):
    """One finished run of a job family on a device."""

    family: str
    device_key: str
    env: str | None = None
    duration_s: float
    energy_j: float | None = None
    throttled: bool | None = None
    ended_at: float = 0.0
    peak_bytes: int | None = None  # the most GPU memory its processes held at once (``job_peaks``)


class RunBook:
    """The recent runs per (family, device), newest last."""

    def __init__(self, keep: int = KEEP_RUNS) -> None:
        self.keep = keep
        self._runs: dict[str, dict[str, deque[JobRun]]] = {}

    def add(self, run: JobRun) -> None:
        per_device = self._runs.setdefault(run.family, {})
        per_device.setdefault(run.device_key, deque(maxlen=self.keep)).append(run)

    def last_seen(self) -> dict[str, float]:
        """Family → when its newest run ended (the queue's wall clock)."""
        return {
            family: max((r.ended_at for runs in per_device.values() for r in runs), default=0.0)
            for family, per_device in self._runs.items()
        }

    def recent_peak(self, family: str) -> int | None:
        """The most GPU memory the family's recent runs reached, on any device; None when none says."""
        peaks = [r.peak_bytes for runs in self._runs.get(family, {}).values() for r in runs if r.peak_bytes]
        return max(peaks) if peaks else None

    def forget(self, families: Collection[str]) -> None:
        for family in families:
            self._runs.pop(family, None)

    def runs(self, family: str) -> Mapping[str, tuple[JobRun, ...]]:
        """Device key → the family's recent runs there."""
        return {k: tuple(v) for k, v in self._runs.get(family, {}).items()}

    def basis(self, family: str) -> dict[str, tuple[JobRun, ...]]:
        """Device key → the recent runs there that the estimates rest on: those during which the device
        did not throttle, when there are at least ``MIN_STEADY_RUNS`` of them (a run slowed by heat says
        little about the next one on a cool device), else all of them (throttling is then what that
        device does under this job). A run whose device could not say whether it throttled counts as
        one that did not."""
        out: dict[str, tuple[JobRun, ...]] = {}
        for key, runs in self._runs.get(family, {}).items():
            steady = tuple(r for r in runs if not r.throttled)
            out[key] = steady if len(steady) >= MIN_STEADY_RUNS else tuple(runs)
        return out

    def median_run_s(self, family: str) -> dict[str, float]:
        """Device key → the median duration of the family's recent runs there (``basis``)."""
        return {k: statistics.median(r.duration_s for r in v) for k, v in self.basis(family).items()}

    def median_energy_j(self, family: str) -> dict[str, float]:
        """Device key → the median energy of the runs there that measured it, of the ``basis`` where any
        of those did, else of all recent runs (None: none did)."""
        out: dict[str, float] = {}
        every = self._runs.get(family, {})
        for key, runs in self.basis(family).items():
            joules = [r.energy_j for r in runs if r.energy_j is not None]
            joules = joules or [r.energy_j for r in every[key] if r.energy_j is not None]
            if joules:
                out[key] = statistics.median(joules)
        return out


class SpellBook:
    """Spells of external use per device: when one began (while it lasts) and how long past ones lasted.

    ``note(key, busy, now)`` follows the monitor's verdict each tick; ``free_in_s`` estimates how long
    a current spell has left from the past spells that lasted longer than this one has so far (their
    median, minus the time already spent). When none lasted that long (or none was seen yet), it
    guesses as long again as the spell has lasted so far, at least ``MIN_SPELL_S``: use that has gone
    on an hour is likely to go on a while, one that began a minute ago may end soon; each tick the
    guess grows, so a task waiting on it moves elsewhere once waiting stops paying. None when the
    device is not in a spell."""

    def __init__(self, keep: int = KEEP_SPELLS) -> None:
        self.keep = keep
        self.since: dict[str, float] = {}
        self._past: dict[str, deque[float]] = {}

    def note(self, key: str, busy: bool, now_s: float) -> float | None:
        """The verdict of one tick; the length of a spell that just ended (worth keeping), else None."""
        if busy:
            self.since.setdefault(key, now_s)
            return None
        began = self.since.pop(key, None)
        if began is None or now_s - began < MIN_SPELL_S:
            return None
        self.add(key, now_s - began)
        return now_s - began

    def add(self, key: str, duration_s: float) -> None:
        self._past.setdefault(key, deque(maxlen=self.keep)).append(duration_s)

    def past(self, key: str) -> tuple[float, ...]:
        return tuple(self._past.get(key, ()))

    def guessing(self, key: str, now_s: float) -> bool:
        """Whether ``free_in_s`` is a guess ("as long again as so far"): no earlier spell lasted longer."""
        began = self.since.get(key)
        return began is not None and not any(d > now_s - began for d in self._past.get(key, ()))

    def free_in_s(self, key: str, now_s: float) -> float | None:
        began = self.since.get(key)
        if began is None:
            return None
        so_far = now_s - began
        longer = [d for d in self._past.get(key, ()) if d > so_far]
        return statistics.median(longer) - so_far if longer else max(so_far, MIN_SPELL_S)


class RuntimeHistory:
    """The two books, kept in the queue file. Thread-safe through the store's lock and the GIL: the
    books are only appended to; a failed write is logged and the book keeps the entry in memory.

    Its times are the queue's wall clock (``clock``), as the tasks' ``started_at`` and the dispatcher's
    ``now`` are, never the monitor's monotonic sample timestamps: a spell begun at a monotonic instant
    and measured against the wall clock would read as decades old."""

    def __init__(self, store: TaskStore, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        self.runs = RunBook()
        self.spells = SpellBook()
        self.throttled_at: dict[str, float] = {}  # device key → when a sample last showed throttling
        self.throttle_read: set[str] = set()  # devices whose samples say whether they throttle
        self._load()

    def _load(self) -> None:
        try:
            rows = self.store.read_side(
                "SELECT family, device, env, duration_s, energy_j, throttled, ended_at, peak_bytes"
                " FROM job_runs ORDER BY id"
            )
            spells = self.store.read_side("SELECT device, duration_s FROM busy_spells ORDER BY id")
        except sqlite3.Error as exc:  # an unreadable history costs estimates, never the queue
            log.warning("the runtime history cannot be read: %s", exc)
            return
        for family, device, env, duration_s, energy_j, throttled, ended_at, peak_bytes in rows:
            self.runs.add(
                JobRun(
                    family=str(family), device_key=str(device), env=env, duration_s=float(duration_s),
                    energy_j=energy_j, throttled=None if throttled is None else bool(throttled),
                    ended_at=float(ended_at), peak_bytes=peak_bytes if isinstance(peak_bytes, int) else None,
                )
            )  # fmt: skip
        for device, duration_s in spells:
            self.spells.add(str(device), float(duration_s))

    def record_run(self, run: JobRun) -> None:
        self.runs.add(run)
        throttled = None if run.throttled is None else int(run.throttled)
        self._write(
            [
                (
                    "INSERT INTO job_runs (family, device, env, duration_s, energy_j, throttled, ended_at,"
                    " peak_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run.family,
                        run.device_key,
                        run.env,
                        run.duration_s,
                        run.energy_j,
                        throttled,
                        run.ended_at,
                        run.peak_bytes,
                    ),
                ),
                (
                    "DELETE FROM job_runs WHERE family = ? AND device = ? AND id NOT IN"
                    " (SELECT id FROM job_runs WHERE family = ? AND device = ? ORDER BY id DESC LIMIT ?)",
                    (run.family, run.device_key, run.family, run.device_key, KEEP_RUNS),
                ),
            ]
        )

    def forget_unseen(self, seen_since_s: float | None, *, keep_families: int = KEEP_FAMILIES) -> int:
        """Forget the families not seen since ``seen_since_s`` (no run ended since; None: no age limit)
        and those beyond the ``keep_families`` seen last: each distinct script is a family, so without
        this the table grows with every script ever run. Retention calls it (``[retention] keep_days``).
        Returns how many families went."""
        seen = self.runs.last_seen()
        newest_first = sorted(seen, key=lambda f: seen[f], reverse=True)
        gone = newest_first[keep_families:]
        if seen_since_s is not None:
            gone += [f for f in newest_first[:keep_families] if seen[f] < seen_since_s]
        if not gone:
            return 0
        self.runs.forget(gone)
        self._write([("DELETE FROM job_runs WHERE family = ?", (family,)) for family in gone])
        return len(gone)

    def note_snapshot(self, snapshot: Snapshot) -> None:
        """A monitor tick: follow each device's external use, and remember when one throttled."""
        now = self.clock()
        for reading in snapshot.readings:
            if reading.sample.throttle is not None:
                self.throttle_read.add(reading.info.key)
            if reading.sample.throttle:
                self.throttled_at[reading.info.key] = now
        ended = [
            (v.key, spell)
            for v in snapshot.verdicts
            if (spell := self.spells.note(v.key, v.busy, now)) is not None
        ]
        self._write_spells(ended, now)

    def throttled_since(self, device_key: str, started_at: float) -> bool | None:
        """Whether the device throttled since ``started_at``; None when its samples do not say."""
        if device_key not in self.throttle_read:
            return None
        return self.throttled_at.get(device_key, -1.0) >= started_at

    def _write_spells(self, ended: list[tuple[str, float]], now_s: float) -> None:
        statements: list[tuple[str, tuple[object, ...]]] = []
        for key, spell in ended:
            statements.append(
                (
                    "INSERT INTO busy_spells (device, started_at, duration_s) VALUES (?, ?, ?)",
                    (key, now_s - spell, spell),
                )
            )
            statements.append(
                (
                    "DELETE FROM busy_spells WHERE device = ? AND id NOT IN (SELECT id FROM busy_spells"
                    " WHERE device = ? ORDER BY id DESC LIMIT ?)",
                    (key, key, KEEP_SPELLS),
                )
            )
        self._write(statements)

    def _write(self, statements: list[tuple[str, tuple[object, ...]]]) -> None:
        if not statements:
            return
        try:
            self.store.write_side(statements)
        except (sqlite3.Error, StoreError, OSError) as exc:
            log.warning("the runtime history could not be saved: %s", exc)
