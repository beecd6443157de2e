"""``prefer = "fastest" | "greenest"``: the pure decision over an ``Outlook`` (learned runtimes, when each
device frees), through the real ``placement.plan``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.monitor.busy_why import Words
from gputray.monitor.records import Sample, Verdict
from gputray.scheduler.queue.estimates import Outlook
from gputray.scheduler.queue.estimator import Estimator, build_outlook
from gputray.scheduler.queue.placement import DeviceState, Placement, Wait, plan
from gputray.scheduler.queue.placement_policy import OutlookPolicy
from gputray.scheduler.queue.runtime_history import JobRun, RunBook, SpellBook
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec

NOW = 10_000.0
NV, AMD = RTX_5060_TI.key, RADEON_780M.key
KINDS = {NV: "discrete", AMD: "integrated"}


def dev(info: Any, busy: str | None = None, **kw: Any) -> DeviceState:
    return DeviceState(
        info,
        Sample(info.key, NOW),
        Verdict(info.key, busy is not None, (Words(text=busy),) if busy else ()),
        **kw,
    )


def task(task_id: int = 1, **spec: Any) -> TaskRecord:
    spec.setdefault("device_prefs", ("5060ti", "780m"))
    s = TaskSpec(kind="command", name=f"job{task_id}", argv=("x",), family="cnn", **spec)
    return TaskRecord(task_id, s, "queued", submitted_at=NOW, queued_at=NOW, position=task_id)


def outlook(runs: dict[str, float], free_in: dict[str, float | None], **kw: Any) -> Outlook:
    return Outlook(run_medians={"cnn": runs}, kinds=KINDS, free_in=free_in, **kw)


def test_fastest_runs_on_the_idle_igpu_when_the_busy_gpu_frees_too_late() -> None:
    view = outlook({NV: 60.0, AMD: 240.0}, {NV: 720.0, AMD: 0.0})
    devices = [dev(RTX_5060_TI, busy="llama-server"), dev(RADEON_780M)]
    ((_, decision),) = plan(
        [task(prefer="fastest")], devices, now_s=NOW, policy=OutlookPolicy(view)
    ).decisions
    assert isinstance(decision, Placement) and decision.device == AMD
    assert render(decision.reason) == (
        "fastest: GeForce RTX 5060 Ti frees in ~12 min, finishes in ~13 min; "
        "Radeon 780M finishes in ~4 min: running there"
    )
    # the same task under `free` (today's rule: wait for the first choice) waits
    ((_, plain),) = plan([task()], devices, now_s=NOW, policy=OutlookPolicy(view)).decisions
    assert isinstance(plain, Wait) and plain.device == NV
    # a family that never ran: the `free` rules, and the reason says why the preference did not decide
    unknown = outlook({}, {NV: 720.0, AMD: 0.0})
    never = OutlookPolicy(unknown)
    ((_, first),) = plan([task(prefer="fastest")], devices, now_s=NOW, policy=never).decisions
    assert isinstance(first, Wait) and first.device == NV
    assert render(first.reason) == "fastest: no earlier run of this job to estimate from; " + render(
        plain.reason
    )


def test_fastest_waits_for_the_fast_gpu_when_it_frees_soon_and_counts_the_work_queued_there() -> None:
    view = outlook({NV: 60.0, AMD: 600.0}, {NV: 30.0, AMD: 0.0})
    devices = [dev(RTX_5060_TI, busy="llama-server"), dev(RADEON_780M)]
    tasks = [task(i, prefer="fastest") for i in range(1, 13)]
    decisions = [d for _, d in plan(tasks, devices, now_s=NOW, policy=OutlookPolicy(view)).decisions]
    first = decisions[0]
    assert isinstance(first, Wait) and first.device == NV and render(first.reason).endswith("waiting for it")
    # nine wait for the 5060 Ti (the ninth finishes at 30 s + 9 × 60 s = 570 s < 600 s), the tenth
    # runs on the 780M (600 s < 630 s), and the rest wait for the 5060 Ti again (the 780M is taken)
    where = [d.device for d in decisions]
    assert where == [NV] * 9 + [AMD] + [NV] * 2 and isinstance(decisions[9], Placement)


def test_greenest_takes_the_igpu_within_the_slowdown_limit_and_not_beyond() -> None:
    devices = [dev(RTX_5060_TI), dev(RADEON_780M)]
    near = outlook({NV: 100.0, AMD: 140.0}, {NV: 0.0, AMD: 0.0})
    ((_, green),) = plan([task(prefer="greenest")], devices, now_s=NOW, policy=OutlookPolicy(near)).decisions
    assert isinstance(green, Placement) and green.device == AMD and "kJ" in render(green.reason)
    far = outlook({NV: 100.0, AMD: 400.0}, {NV: 0.0, AMD: 0.0})
    ((_, fast),) = plan([task(prefer="greenest")], devices, now_s=NOW, policy=OutlookPolicy(far)).decisions
    assert isinstance(fast, Placement) and fast.device == NV
    # the greener iGPU was passed over for its finish, and the reason says so
    assert "Radeon 780M finishes in ~7 min, 10.0 kJ, past 1.5× the fastest finish;" in render(fast.reason)
    ((_, wide),) = plan(
        [task(prefer="greenest", max_slowdown=5.0)], devices, now_s=NOW, policy=OutlookPolicy(far)
    ).decisions
    assert isinstance(wide, Placement) and wide.device == AMD


def test_a_family_that_ran_on_one_device_is_scaled_by_the_doctors_measured_speed() -> None:
    view = outlook({NV: 60.0}, {NV: None, AMD: 0.0}, measured_gflops={NV: 20_000.0, AMD: 2_000.0})
    assert view.run_s("cnn", AMD) == 600.0  # measured 10x, not the 4x class default
    assert outlook({NV: 60.0}, {}).run_s("cnn", AMD) == 240.0
    # the 5060 Ti's spell of external use has no known end: the 780M is the only finish known
    devices = [dev(RTX_5060_TI, busy="llama-server"), dev(RADEON_780M)]
    ((_, decision),) = plan(
        [task(prefer="fastest")], devices, now_s=NOW, policy=OutlookPolicy(view)
    ).decisions
    assert isinstance(decision, Placement) and decision.device == AMD
    assert "free time unknown" in render(decision.reason)


def test_estimates_prefer_runs_that_did_not_throttle_and_say_how_many_did() -> None:
    book = RunBook()
    for seconds, throttled in ((90.0, True), (95.0, True), (60.0, False), (61.0, None)):
        book.add(JobRun(family="cnn", device_key=AMD, duration_s=seconds, throttled=throttled))
    devices = [dev(RTX_5060_TI), dev(RADEON_780M)]

    def estimates() -> dict[str, tuple[float, int, int]]:
        view = build_outlook(book, SpellBook(), ["cnn"], devices, [], NOW)
        return {
            e.device_key: (e.run_s, e.runs, e.throttled_runs)
            for e in Estimator.estimates(task(), devices, view)
        }

    # two runs without throttling (one whose device could not say) are too few: all four count
    assert estimates() == {AMD: (75.5, 4, 2), NV: (75.5 / 4, 0, 0)}
    book.add(JobRun(family="cnn", device_key=AMD, duration_s=62.0, throttled=False))
    assert estimates() == {AMD: (61.0, 3, 0), NV: (61.0 / 4, 0, 0)}  # three did not: only they count


def test_no_history_falls_back_to_the_plain_rules() -> None:
    view = Outlook(kinds=KINDS, free_in={NV: None, AMD: 0.0})
    devices = [dev(RTX_5060_TI, busy="llama-server"), dev(RADEON_780M)]
    ((_, decision),) = plan(
        [task(prefer="fastest")], devices, now_s=NOW, policy=OutlookPolicy(view)
    ).decisions
    assert isinstance(decision, Wait) and decision.device == NV and "waiting for" in render(decision.reason)


def test_offers_one_task_per_free_device_once_and_never_a_declined_one(tmp_path: Path) -> None:
    """The estimator over a real queue file: tasks waiting for the busy 5060 Ti longer than their run
    on the free 780M; the first in queue order gets the offer, once; a declined one never."""
    store = TaskStore(tmp_path / "queue.sqlite3")
    emitted: list[tuple[int, str]] = []
    estimator = Estimator(
        store, speeds=dict, emit_offer=lambda rec, text, offer: emitted.append((rec.id, text))
    )
    estimator.history.record_run(JobRun(family="cnn", device_key=AMD, duration_s=60.0))
    devices = [dev(RTX_5060_TI, busy="llama-server"), dev(RADEON_780M)]
    waiting = [task(i, on_busy="wait") for i in (1, 2, 3)]
    declined = [task(1, on_busy="wait", offer_declined=True), *waiting[1:]]
    estimator.plan(waiting, devices, NOW + 30, running=[])  # waited 30 s < 60 s: no offer yet
    assert emitted == []
    estimator.plan(declined, devices, NOW + 90, running=[])
    assert [(i, render(m)) for i, m in emitted] == [
        (2, "job2 has waited ~2 min: Radeon 780M is free and would run it in ~60 s")
    ]
    estimator.plan(waiting, devices, NOW + 120, running=[])
    assert [i for i, _ in emitted] == [2, 1]  # task 1 (no longer declined) comes first now; 2 not again
    (view,) = [v for v in estimator.views(waiting, NOW + 120) if v.id == 1]
    assert view.offer is not None and view.offer.device_key == AMD and view.offer.waited_s == 120.0
    store.close()
