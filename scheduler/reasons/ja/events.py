"""Japanese words for what a queue event says (the tray's notifications, the owner's log)."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.ja.common import JA, _where
from gputray.scheduler.reasons.say import Say

says = JA.says


@says(c.Named)
def _named(r: c.Named, s: Say) -> str:
    where = f"（{r.machine}）" if r.machine else ""
    return f"{r.name}{where}: {s(r.why)}"


@says(c.Queued)
def _queued(r: c.Queued, s: Say) -> str:
    again = "再び" if r.again else ""
    return f"{r.name} を #{r.task_id} として{again}キューに追加しました"


def _ran_on(device: str | None, demo_for: str | None) -> str:
    return f"CPU（デモ：{demo_for} の代わり）" if demo_for else _where(device)


@says(c.JobStarted)
def _job_started(r: c.JobStarted, s: Say) -> str:
    return f"{r.name} を {_ran_on(r.device, r.demo_for)} で開始しました"


@says(c.JobFinished)
def _job_finished(r: c.JobFinished, s: Say) -> str:
    return f"{r.name} が {_ran_on(r.device, r.demo_for)} で完了しました"


@says(c.JobCancelled)
def _job_cancelled(r: c.JobCancelled, s: Say) -> str:
    return f"{r.name} をキャンセルしました"


@says(c.JobCouldNotStart)
def _job_could_not_start(r: c.JobCouldNotStart, s: Say) -> str:
    return f"{r.name} を開始できませんでした: {s.text(r.error)}"


@says(c.OfferMade)
def _offer_made(r: c.OfferMade, s: Say) -> str:
    if s.finished:
        free = f"{r.device} が空いていて {s.about(r.run_s)} で実行できました"
        return f"{r.name} は {s.about(r.waited_s)} 待っていました: {free}"
    free = f"{r.device} が空いていて {s.about(r.run_s)} で実行できます"
    return f"{r.name} は {s.about(r.waited_s)} 待っています: {free}"
