"""``late_move.decide`` on a fake clock: a running job its own progress shows ending late is moved to
the device where it would finish clearly earlier, only while little is done, once, never for a pinned
task or one that says ``on_late = "stay"``; the outlook is the real ``estimator.build_outlook`` over
the real run and spell books, and the reason says the arithmetic in both languages."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.monitor.records import Sample, Verdict
from gputray.scheduler.queue.estimator import build_outlook
from gputray.scheduler.queue.late_move import MAX_DONE, MIN_WORK_S, LateJob, Move, decide, moved_step
from gputray.scheduler.queue.placement import DeviceState
from gputray.scheduler.queue.runtime_history import JobRun, RunBook, SpellBook
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.render import render, render_for
from gputray.scheduler.tasks import lifecycle as life
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec

NV, AMD = RTX_5060_TI.key, RADEON_780M.key
NOW = 1_764_576_000.0  # the fake clock


def _spec(**changes: object) -> TaskSpec:
    base = TaskSpec(kind="command", name="diffuse", argv=("x",), family="diffusion",
                    device_prefs=("5060ti", "780m"), on_busy="redirect", prefer="fastest")  # fmt: skip
    return base.replace(**changes)


def _running(task_id: int, device: str, worked_s: float, **changes: object) -> TaskRecord:
    at = NOW - worked_s
    return TaskRecord(task_id, _spec(**changes), "running", submitted_at=at, queued_at=at, position=task_id,
                      device=device, started_at=at)  # fmt: skip


def _devices(running: Sequence[TaskRecord], *, llm: bool = False) -> list[DeviceState]:
    out = []
    for info in (RTX_5060_TI, RADEON_780M):
        ours = [r for r in running if r.device == info.key]
        busy = llm and info.key == NV
        reasons = ("llama-server uses 14.2 GiB, 97 %",) if busy else ()
        verdict = Verdict(info.key, busy, reasons)
        out.append(DeviceState(info, Sample(info.key, NOW), verdict, running=len(ours),
                               running_names=tuple(r.name for r in ours)))  # fmt: skip
    return out


def _decide(
    jobs: Sequence[LateJob],
    *,
    llm: bool = False,
    runs: RunBook | None = None,
    spells: SpellBook | None = None,
) -> list[Move]:
    running = [j.task for j in jobs]
    devices = _devices(running, llm=llm)
    paced = {j.task.id: j.paced_s for j in jobs if j.paced_s is not None}
    outlook = build_outlook(runs or RunBook(), spells or SpellBook(), (), devices, running, NOW,
                            progress={j.task.id: j.done for j in jobs}, paced=paced)  # fmt: skip
    return decide(jobs, devices, outlook)


def test_a_never_run_family_on_the_igpu_is_moved_to_the_free_dgpu_with_the_arithmetic() -> None:
    """1 % after 90 s on the 780M: ~2 h 28 min left there; the 5060 Ti (4x, the class default) free."""
    job = LateJob(_running(7, AMD, 90.0), done=0.01, worked_s=90.0, paced_s=90.0)
    [move] = _decide([job])
    assert move.task_id == 7 and move.device == NV
    r = move.reason
    assert (r.to_device, r.from_device, r.wait_s) == ("GeForce RTX 5060 Ti", "Radeon 780M", 0.0)
    assert r.left_s == pytest.approx(90.0 * 99) and r.there_s == pytest.approx(9000.0 / 4)
    assert render(r) == (
        "moved to GeForce RTX 5060 Ti: on Radeon 780M it would end in ~2 h 28 min (1 % after 1 min); "
        "there in ~38 min"
    )
    assert render(r, "ja") == (
        "GeForce RTX 5060 Ti に移しました。Radeon 780M では終了まで ~2 時間 28 分（1 分 で 1 %）、"
        "移した先では ~38 分 で完了"
    )
    assert render_for("succeeded", r).startswith(
        "moved to GeForce RTX 5060 Ti: on Radeon 780M it would have ended"
    )
    # run again there alone, waiting for it, and never moved again
    assert move.spec.device_prefs == (NV,) and move.spec.on_busy == "wait" and move.spec.on_late == "stay"
    again = LateJob(_running(7, NV, 90.0, **_pinned(move.spec)), done=0.01, worked_s=90.0, paced_s=90.0)
    assert _decide([again]) == []


def _pinned(spec: TaskSpec) -> dict[str, object]:
    return {"device_prefs": spec.device_prefs, "on_busy": spec.on_busy, "on_late": spec.on_late}


@pytest.mark.parametrize(
    ("why", "job"),
    [
        (
            "more than MAX_DONE done",
            LateJob(_running(1, AMD, 900.0), done=MAX_DONE + 0.01, worked_s=900.0, paced_s=900.0),
        ),
        (
            "too early to tell",
            LateJob(
                _running(1, AMD, MIN_WORK_S - 1), done=0.01, worked_s=MIN_WORK_S - 1, paced_s=MIN_WORK_S - 1
            ),
        ),
        (
            "prefer free, on_late auto",
            LateJob(_running(1, AMD, 90.0, prefer="free"), done=0.01, worked_s=90.0, paced_s=90.0),
        ),
        (
            "on_late stay: not restartable",
            LateJob(_running(1, AMD, 90.0, on_late="stay"), done=0.01, worked_s=90.0, paced_s=90.0),
        ),
        (
            "pinned",
            LateJob(_running(1, AMD, 90.0, device_prefs=("780m",)), done=0.01, worked_s=90.0, paced_s=90.0),
        ),
        (
            "paused",
            LateJob(
                _running(1, AMD, 90.0).replace(paused_at=NOW - 5), done=0.01, worked_s=90.0, paced_s=90.0
            ),
        ),
        (
            "handed here by another machine",
            LateJob(_running(1, AMD, 90.0, origin="desk#12.1"), 0.01, 90.0, 90.0),
        ),
        ("no pace kept yet", LateJob(_running(1, AMD, 90.0), done=0.01, worked_s=90.0)),
        (
            "a short job: under a minute saved",
            LateJob(_running(1, AMD, 6.0), done=0.1, worked_s=6.0, paced_s=6.0),
        ),
    ],
)
def test_a_job_stays_where_it_runs(why: str, job: LateJob) -> None:
    assert _decide([job]) == [], why


def test_the_pace_since_its_first_progress_line_counts_not_its_quiet_start() -> None:
    """Its family ran in 25 s on the 5060 Ti. This one loaded for 30 s before its bar began, then did
    10 % in 5 s: 45 s left at its pace (not 5 min 15 s from its start), 20 s later than a restart on the
    free 5060 Ti: it stays, where counting its quiet start would have moved it."""
    runs = RunBook()
    runs.add(JobRun(family="diffusion", device_key=NV, duration_s=25.0, energy_j=None))
    quiet = LateJob(_running(1, AMD, 35.0), done=0.10, worked_s=35.0, paced_s=5.0)
    assert _decide([quiet], runs=runs) == []
    assert [m.device for m in _decide([LateJob(quiet.task, 0.10, 35.0, paced_s=35.0)], runs=runs)] == [NV]


def test_on_late_move_moves_whatever_it_prefers() -> None:
    job = LateJob(
        _running(1, AMD, 90.0, prefer="free", on_late="move"), done=0.01, worked_s=90.0, paced_s=90.0
    )
    assert [m.device for m in _decide([job])] == [NV]


def test_a_busy_dgpu_counts_when_it_frees_and_unknown_never_counts() -> None:
    job = LateJob(_running(1, AMD, 90.0), done=0.01, worked_s=90.0, paced_s=90.0)
    assert _decide([job], llm=True) == []  # llama-server, no spell ever seen to end: unknown
    guessed = SpellBook()
    guessed.note(NV, True, NOW - 10 * 60)  # its first spell, 10 min so far: "as long again" is a guess
    assert _decide([job], llm=True, spells=guessed) == []
    spells = SpellBook()
    spells.add(NV, 40 * 60.0)  # spells of the LLM lasted 40 min before
    spells.note(NV, True, NOW - 10 * 60)  # this one began 10 min ago
    [move] = _decide([job], llm=True, spells=spells)
    assert move.reason.wait_s == pytest.approx(30 * 60, rel=0.05)
    assert move.reason.there_s == pytest.approx(move.reason.wait_s + 9000 / 4)
    assert render(move.reason).endswith("there in ~68 min, as it frees in ~30 min")


def test_a_family_that_ran_on_the_dgpu_is_estimated_there_from_its_runs() -> None:
    runs = RunBook()
    runs.add(JobRun(family="diffusion", device_key=NV, duration_s=900.0, energy_j=None))
    job = LateJob(_running(1, AMD, 300.0), done=0.03, worked_s=300.0, paced_s=300.0)
    [move] = _decide([job], runs=runs)
    assert move.reason.there_s == pytest.approx(900.0)


def test_one_move_per_device_per_look() -> None:
    jobs = [LateJob(_running(i, AMD, 90.0), done=0.01, worked_s=90.0, paced_s=90.0) for i in (1, 2)]
    assert [m.task_id for m in _decide(jobs)] == [1]


def test_the_end_of_a_moved_job_is_run_elsewhere_in_the_store(tmp_path: object) -> None:
    """Through a real store: the lifecycle's ``RunElsewhere`` queues it at once, whatever its retries,
    then its spec points at the device; an owner that no longer knows the move lets the retry policy
    decide."""
    from pathlib import Path

    store = TaskStore(Path(str(tmp_path)) / "q.db")
    rec = store.add(_spec())
    store.must_apply(rec.id, life.Start(device=AMD, env=None, reason=None, attempts=1, started_at=NOW,
                                        log_path="x.log"))  # fmt: skip
    [move] = _decide(
        [LateJob(store.get(rec.id).replace(started_at=NOW - 90), done=0.01, worked_s=90.0, paced_s=90.0)]
    )
    end = life.JobEnd(exit_code=-15, ended_at=NOW)
    step, spec, why = moved_step(move, end=end, now=NOW, left=None)
    assert isinstance(step, life.RunElsewhere) and why == move.reason
    store.must_apply(rec.id, step)
    assert spec is not None
    moved = store.replace_spec(rec.id, spec, only_states=("queued",))
    assert moved is not None and moved.state == "queued" and moved.spec.device_prefs == (NV,)
    assert (moved.attempts, moved.attempts_before) == (1, 1)  # the move used none of its retries
    assert isinstance(moved.reason, c.MovedLate)
    step, spec, why = moved_step(None, end=end, now=NOW, left=None)
    assert isinstance(step, life.RetryOrFail) and spec is None and why == c.OwnerStopped()
    store.close()


def test_a_moved_task_waiting_for_its_device_still_says_why_it_was_moved() -> None:
    """Each pass writes a waiting task's reason afresh: the move's arithmetic stays in front of it."""
    from gputray.scheduler.queue.late_move import with_move_notes
    from gputray.scheduler.queue.placement import Wait

    [move] = _decide([LateJob(_running(7, AMD, 90.0), done=0.01, worked_s=90.0, paced_s=90.0)])
    queued = TaskRecord(
        7, move.spec, "queued", submitted_at=NOW, queued_at=NOW, position=7, reason=move.reason
    )
    busy = Wait(c.WaitingFor(label="GeForce RTX 5060 Ti", why=c.RunningTask(name="hold (#1)")), device=NV)
    [(_, said)] = with_move_notes([(queued, busy)])
    assert said.reason == c.chain(move.reason, busy.reason) and said.device == NV
    assert render(said.reason).startswith(
        "moved to GeForce RTX 5060 Ti: on Radeon 780M it would end in ~2 h 28"
    )
    waiting = queued.replace(state="waiting", reason=said.reason)
    assert with_move_notes([(waiting, busy)]) == [(waiting, said)]  # the next pass: the same words
    plain = queued.replace(reason=None)
    assert with_move_notes([(plain, busy)]) == [(plain, busy)]
