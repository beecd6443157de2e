"""The owner killed (SIGKILL) at random 10 times while 40 jobs run: per task, what the queue says at the
end against what the job itself wrote (``bench/crash_kill.py`` runs the scenario and judges it; it
defaults to 20 kills and 80 jobs, the suite keeps to ten so it stays within CI's 15 minutes).

Today nothing acknowledged is lost, stored twice or left stuck, and an owner that is up records every
exit right. What still goes wrong needs a per-job supervisor that outlives the owner (issue 10, another
engineer): a job that ends while no owner is up loses its exit status (it is called "interrupted"
and, with retries left, runs again), and an owner killed between marking a task running and starting
its process counts a start that never happened. That assertion is an expected failure until then.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from crash_kill import OTHER, CrashReport, run_crash_test

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL of the owner is POSIX"),
]


@pytest.fixture(scope="module")
def crashes(tmp_path_factory: pytest.TempPathFactory) -> CrashReport:
    report = run_crash_test(tmp_path_factory.mktemp("crash"), jobs=40, kills=10, seed=1)
    print(report.summary())  # shown with -s, and in the report of a failing test
    return report


def test_ten_kills_lose_no_acknowledged_task(crashes: CrashReport) -> None:
    assert crashes.crashes >= 10 and crashes.acknowledged >= 40, crashes.summary()
    assert crashes.lost == [], crashes.summary()
    assert crashes.duplicated == [], crashes.summary()
    assert crashes.stuck == [], crashes.summary()


def test_an_owner_that_is_up_records_every_exit_right(crashes: CrashReport) -> None:
    wrong = {n: what for n, (cause, what) in crashes.misreported.items() if cause == OTHER}
    assert wrong == {}, crashes.summary()


def test_every_task_reports_what_its_job_did(crashes: CrashReport) -> None:
    assert crashes.misreported == {}, crashes.summary()
