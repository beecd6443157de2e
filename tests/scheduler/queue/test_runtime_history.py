"""The runtime history in the queue file (real SQLite): bounded per family and device, read back by
the next owner; external-busy spells and what they say about when a device frees up."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gputray.monitor.records import HostSample, Snapshot, Verdict
from gputray.scheduler.queue.runtime_history import KEEP_RUNS, JobRun, RuntimeHistory, SpellBook
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.tasks.family import family_of
from gputray.scheduler.tasks.records import TaskSpec


def test_runs_are_kept_bounded_in_the_queue_file_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "queue.sqlite3"
    store = TaskStore(path)
    history = RuntimeHistory(store)
    for i in range(KEEP_RUNS + 5):
        history.record_run(JobRun(family="cnn", device_key="nv", duration_s=float(i), ended_at=float(i)))
    history.record_run(
        JobRun(family="cnn", device_key="amd", duration_s=70.0, energy_j=2100.0, throttled=True)
    )
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM job_runs WHERE device = 'nv'").fetchone()[0] == KEEP_RUNS
    again = RuntimeHistory(TaskStore(path))
    assert [r.duration_s for r in again.runs.runs("cnn")["nv"]] == [float(i) for i in range(5, KEEP_RUNS + 5)]
    assert again.runs.median_run_s("cnn") == {"nv": 14.5, "amd": 70.0}
    assert again.runs.median_energy_j("cnn") == {"amd": 2100.0}
    assert again.runs.runs("cnn")["amd"][0].throttled is True


def test_a_spell_of_external_use_estimates_its_end_from_longer_ones_before() -> None:
    spells = SpellBook()
    for start, length in ((0.0, 600.0), (1000.0, 1200.0), (3000.0, 1800.0)):
        spells.note("nv", True, start)
        spells.note("nv", False, start + length)
    assert spells.past("nv") == (600.0, 1200.0, 1800.0)
    spells.note("nv", True, 10_000.0)
    assert spells.free_in_s("nv", 10_000.0 + 300) == 1200.0 - 300  # median of all three, minus 300 s
    assert spells.free_in_s("nv", 10_000.0 + 900) == 1500.0 - 900  # of the two that lasted longer
    assert spells.free_in_s("nv", 10_000.0 + 2400) == 2400.0  # longer than any: as long again
    assert spells.free_in_s("amd", 10_000.0) is None  # not in a spell
    spells.note("nv", False, 10_000.0 + 2.0)  # a blip is not a spell worth keeping
    assert spells.past("nv") == (600.0, 1200.0, 1800.0)


def test_spells_are_timed_by_the_queue_clock_not_the_monitor_samples(tmp_path: Path) -> None:
    """The monitor stamps samples with its monotonic clock; the queue asks at wall-clock times. A spell
    begun on the one and measured on the other read "frees in ~498960 h" in `gputray queue`."""
    wall = [1_800_000_000.0]
    history = RuntimeHistory(TaskStore(tmp_path / "queue.sqlite3"), clock=lambda: wall[0])

    def tick(busy: bool) -> None:
        verdict = Verdict(key="nv", busy=busy)
        history.note_snapshot(Snapshot(timestamp_s=1234.5, readings=(), host=HostSample(None, None, None),
                                       verdicts=(verdict,)))  # fmt: skip

    tick(True)
    wall[0] += 60.0
    assert history.spells.free_in_s("nv", wall[0]) == 60.0  # as long again as it has lasted
    tick(False)
    assert history.spells.past("nv") == (60.0,)


def test_a_family_is_the_recipe_and_script_not_the_files_or_name() -> None:
    a = TaskSpec(kind="command", name="a", argv=("python3", "sub/infer.py", "x.png"), cwd="/work")
    b = TaskSpec(kind="command", name="b", argv=("python3", "sub/infer.py", "y.png"), cwd="/work")
    assert family_of(a) == family_of(b) == "command:/work/sub/infer.py"
    assert family_of(a.replace(family="resnet")) == "resnet"
    assert family_of(TaskSpec(kind="vulkan", name="u", argv=("realesrgan", "{file}"), recipe="upscale")) == (
        "upscale:realesrgan"
    )
