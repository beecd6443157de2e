"""Start times, daily windows and recurring schedules, on a fake clock; one live APScheduler wake-up."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from gputray.scheduler.queue import timing
from gputray.scheduler.queue.timing import Schedule, Timing, TimingError
from gputray.scheduler.tasks.records import TaskPatch


def local(y: int, mo: int, d: int, h: int, mi: int = 0, s: int = 0) -> float:
    return dt.datetime(y, mo, d, h, mi, s).timestamp()


class FakeClock:
    def __init__(self, now_s: float) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s


def test_parse_at_forms() -> None:
    now = local(2026, 11, 30, 10, 15)
    assert timing.parse_at("+10m", now) == now + 600
    assert timing.parse_at("in 1h30m", now) == now + 5400
    assert timing.parse_at("11:00", now) == local(2026, 11, 30, 11, 0)
    assert timing.parse_at("09:00", now) == local(2026, 12, 1, 9, 0)  # passed today → tomorrow
    assert timing.parse_at("2026-12-24T18:00", now) == local(2026, 12, 24, 18, 0)
    for bad in ("25:00", "soon", "+ten minutes", "2020-01-01T00:00"):
        with pytest.raises(TimingError):
            timing.parse_at(bad, now)


def test_next_window_open_including_across_midnight() -> None:
    assert timing.next_window_open("01:00-07:00", local(2026, 11, 30, 3, 0)) == local(2026, 11, 30, 3, 0)
    assert timing.next_window_open("01:00-07:00", local(2026, 11, 30, 7, 0)) == local(2026, 12, 1, 1, 0)
    assert timing.next_window_open("01:00-07:00", local(2026, 11, 30, 0, 30)) == local(2026, 11, 30, 1, 0)
    # 22:00-06:00 crosses midnight: open at 23:30 and 05:00, closed at 12:00
    assert timing.next_window_open("22:00-06:00", local(2026, 11, 30, 23, 30)) == local(2026, 11, 30, 23, 30)
    assert timing.next_window_open("22:00-06:00", local(2026, 12, 1, 5, 0)) == local(2026, 12, 1, 5, 0)
    assert timing.next_window_open("22:00-06:00", local(2026, 11, 30, 12, 0)) == local(2026, 11, 30, 22, 0)


def test_cron_validation_and_next_run() -> None:
    with pytest.raises(TimingError):
        timing.cron_trigger("0 3 * *")
    with pytest.raises(TimingError):
        timing.cron_trigger("99 3 * * *")
    tz = timing.local_zone()
    assert timing.next_cron_run("0 3 * * *", local(2026, 11, 30, 2, 0), tz) == local(2026, 11, 30, 3, 0)
    # strictly after: a run exactly at 03:00 is not due again at 03:00
    assert timing.next_cron_run("0 3 * * *", local(2026, 11, 30, 3, 0), tz) == local(2026, 12, 1, 3, 0)


@pytest.mark.parametrize(
    ("weekdays", "expected"),
    [
        ("0", ["Sunday"]),
        ("7", ["Sunday"]),
        ("1-5", ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]),
        ("mon-fri", ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]),
        ("*/2", ["Sunday", "Tuesday", "Thursday", "Saturday"]),
        ("5-7", ["Friday", "Saturday", "Sunday"]),
        ("sat,0", ["Saturday", "Sunday"]),
    ],
)
def test_cron_weekdays_mean_what_crontab_says(weekdays: str, expected: list[str]) -> None:
    """crontab numbers weekdays from Sunday = 0 (or 7); APScheduler 3 from Monday = 0, so "1-5" handed
    over as is ran Tuesday to Saturday."""
    tz = timing.local_zone()
    after, days = local(2026, 11, 29, 12, 0), set()  # a Sunday noon; one week of runs
    while True:
        nxt = timing.next_cron_run(f"0 3 * * {weekdays}", after, tz)
        assert nxt is not None
        if nxt > local(2026, 12, 6, 12, 0):
            break
        days.add(dt.datetime.fromtimestamp(nxt).strftime("%A"))
        after = nxt
    assert days == set(expected)


def test_cron_lines_that_never_run_or_name_no_weekday_are_refused(tmp_path: Path) -> None:
    for bad in ("0 3 * * 8", "0 3 * * funday", "0 3 * * 5-1", "0 3 * * */0"):
        with pytest.raises(TimingError, match="--cron") as refused:
            timing.cron_trigger(bad)
        assert str(refused.value).count("--cron") == 1, refused.value  # named once, not twice
    t = make_timing(tmp_path, FakeClock(local(2026, 11, 30, 1, 0)), [])
    with pytest.raises(TimingError, match="never happens"):
        t.add("0 3 31 2 *", "/x.toml")  # 31 February
    assert t.entries() == []
    t.stop()


def test_missed_run() -> None:
    tz = timing.local_zone()
    last = local(2026, 11, 28, 3, 0)
    assert timing.missed_run("0 3 * * *", last, local(2026, 11, 28, 20, 0), tz) is None
    assert timing.missed_run("0 3 * * *", last, local(2026, 11, 30, 9, 0), tz) == local(2026, 11, 29, 3, 0)


def make_timing(tmp_path: Path, clock: FakeClock, submitted: list[Schedule]) -> Timing:
    return Timing(tmp_path / "schedules.sqlite3", submit=submitted.append, clock=clock)


def test_runs_missed_while_off_are_caught_up_once(tmp_path: Path) -> None:
    clock = FakeClock(local(2026, 11, 27, 12, 0))
    submitted: list[Schedule] = []
    t = make_timing(tmp_path, clock, submitted)
    entry = t.add("0 3 * * *", "/jobs/nightly.toml", overrides=TaskPatch(priority=2))
    assert t.start() == []  # nothing due yet
    t.stop()

    clock.now_s = local(2026, 11, 30, 9, 0)  # three 03:00 runs missed while the owner was off
    t = make_timing(tmp_path, clock, submitted)
    assert t.start() == [entry.id]
    assert [s.task_file for s in submitted] == ["/jobs/nightly.toml"]
    assert submitted[0].overrides == TaskPatch(priority=2)
    assert t.store.get(entry.id).last_run_at == clock.now_s
    t.stop()

    t = make_timing(tmp_path, clock, submitted)  # a restart right after: not again
    assert t.start() == []
    assert len(submitted) == 1
    t.stop()


def test_a_failing_submit_is_recorded_and_the_schedule_stays(tmp_path: Path) -> None:
    clock = FakeClock(local(2026, 11, 29, 12, 0))

    def broken(entry: Schedule) -> None:
        raise ValueError(f"{entry.task_file}: no such task file")

    t = Timing(tmp_path / "s.sqlite3", submit=broken, clock=clock)
    entry = t.add("0 3 * * *", "/gone.toml")
    clock.now_s = local(2026, 11, 30, 12, 0)
    assert t.start() == [entry.id]
    stored = t.store.get(entry.id)
    assert stored.last_error is not None and "no such task file" in stored.last_error
    assert [e.id for e, _ in t.entries()] == [entry.id]
    t.remove(entry.id)
    assert t.entries() == []
    with pytest.raises(TimingError):
        t.remove(entry.id)
    t.stop()


def test_bad_cron_is_refused_before_it_is_stored(tmp_path: Path) -> None:
    t = make_timing(tmp_path, FakeClock(local(2026, 11, 30, 1, 0)), [])
    with pytest.raises(TimingError):
        t.add("every night", "/x.toml")
    assert t.entries() == []
    t.stop()


def test_the_next_run_is_the_dispatchers_due_time_and_missed_runs_coalesce(tmp_path: Path) -> None:
    clock = FakeClock(local(2026, 11, 29, 12, 0))
    submitted: list[Schedule] = []
    t = make_timing(tmp_path, clock, submitted)
    t.start()
    assert t.next_due_s() is None
    entry = t.add("0 3 * * *", "/jobs/nightly.toml")
    assert t.next_due_s() == local(2026, 11, 30, 3, 0)
    assert t.run_due(local(2026, 11, 30, 2, 59)) == [] and submitted == []
    # the machine slept through three runs: the dispatcher wakes late and submits once
    clock.now_s = local(2026, 12, 3, 9, 0)
    assert t.run_due(clock.now_s) == [entry.id]
    assert len(submitted) == 1
    assert t.next_due_s() == local(2026, 12, 4, 3, 0)
    t.remove(entry.id)
    assert t.next_due_s() is None
    t.stop()


def test_day_of_month_and_weekday_combine_with_or_as_in_crontab() -> None:
    """crontab(5): "30 4 1,15 * 5" runs at 4:30 on the 1st and 15th of each month, *plus* every Friday.
    When one of the two fields is "*", only the other one restricts the days."""
    after = local(2026, 1, 1, 5, 0)  # a Thursday, past 4:30
    runs = []
    for _ in range(7):
        after = timing.next_cron_run("30 4 1,15 * 5", after)  # type: ignore[assignment]
        runs.append(dt.datetime.fromtimestamp(after).strftime("%a %m-%d %H:%M"))
    assert runs == [
        "Fri 01-02 04:30",
        "Fri 01-09 04:30",
        "Thu 01-15 04:30",
        "Fri 01-16 04:30",
        "Fri 01-23 04:30",
        "Fri 01-30 04:30",
        "Sun 02-01 04:30",
    ]
    fridays = timing.next_cron_run("30 4 * * 5", local(2026, 1, 1, 5, 0))
    assert fridays is not None and dt.datetime.fromtimestamp(fridays).strftime("%a %d") == "Fri 02"
    firsts = timing.next_cron_run("30 4 1,15 * *", local(2026, 1, 1, 5, 0))
    assert firsts is not None and dt.datetime.fromtimestamp(firsts).strftime("%a %d") == "Thu 15"
