"""Japanese words for the queue's refusals (``reasons/refusals.py``): the tray's message box."""

from __future__ import annotations

from gputray.scheduler.reasons import refusals as f
from gputray.scheduler.reasons.ja.common import _STATES, JA
from gputray.scheduler.reasons.say import Say

says = JA.says


def _state(state: str) -> str:
    return _STATES.get(state, state)


@says(f.AlreadyEnded)
def _already_ended(r: f.AlreadyEnded, s: Say) -> str:
    return f"タスク #{r.task_id} はすでに{_state(r.state)}です。キャンセルするものはありません"


@says(f.ChangedMeanwhile)
def _changed(r: f.ChangedMeanwhile, s: Say) -> str:
    return f"タスク #{r.task_id} の状態が途中で変わりました。もう一度お試しください"


@says(f.RetryIsForEnded)
def _retry_is_for_ended(r: f.RetryIsForEnded, s: Say) -> str:
    return f"タスク #{r.task_id} は{_state(r.state)}です。再試行は終わったタスクにだけ使えます"


@says(f.OnlyPendingMove)
def _only_pending_move(r: f.OnlyPendingMove, s: Say) -> str:
    return f"タスク #{r.task_id} は{_state(r.state)}です。移動できるのは待機中のタスクだけです"


@says(f.MoveNextToItself)
def _next_to_itself(r: f.MoveNextToItself, s: Say) -> str:
    return f"タスク #{r.task_id} は自分自身の隣には移動できません"


@says(f.OwnerStarting)
def _starting(r: f.OwnerStarting, s: Say) -> str:
    return "gputray のキュー管理がまだ起動中です。もう一度お試しください"


@says(f.OwnerGoing)
def _going(r: f.OwnerGoing, s: Say) -> str:
    return "gputray のキュー管理は終了処理中です"


@says(f.NoSuchFiles)
def _no_such_files(r: f.NoSuchFiles, s: Say) -> str:
    return f"ファイルがありません：{'、'.join(r.files)}"


@says(f.AnchorNotPending)
def _anchor(r: f.AnchorNotPending, s: Say) -> str:
    among = "移動できるのはキュー内または待機中のタスクの間だけです"
    return f"タスク #{r.task_id} は{_state(r.state)}です。{among}"
