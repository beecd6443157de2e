"""Japanese words for a job's start and end: pauses, starts held, exits, interruptions, retries, requeues."""

from __future__ import annotations

from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.ja.common import JA, _where
from gputray.scheduler.reasons.say import Say

says = JA.says


@says(c.JobPaused)
def _job_paused(r: c.JobPaused, s: Say) -> str:
    who = f"#{r.for_task}（優先度 {r.priority}）のため " if r.for_task is not None else ""
    who = f"{r.app} が GPU を使うため " if r.app is not None else who
    paused = f"{who}{s.clock(r.at_s, False)} に一時停止しました"
    if r.memory == "held":
        return f"{paused}。GPU メモリは確保されたままです（cuda-checkpoint: {s.text(r.problem or '')}）"
    if r.memory == "moved":
        return f"{paused}。GPU メモリはホストのメモリに移しました（cuda-checkpoint）"
    return paused


@says(c.JobResumed)
def _job_resumed(r: c.JobResumed, s: Say) -> str:
    who = f"#{r.for_task}（優先度 {r.priority}）のため " if r.for_task is not None else ""
    who = f"{r.app} が GPU を使っていたため " if r.app is not None else who
    text = f"{who}{s.clock(r.paused_at_s, False)} に一時停止、{s.clock(r.at_s, False)} に再開"
    return text + (f"。cuda-checkpoint で復元できませんでした: {s.text(r.problem)}" if r.problem else "")


@says(c.DemoOnCpu)
def _demo_on_cpu(r: c.DemoOnCpu, s: Say) -> str:
    return f"デモ：{r.device} の代わりに CPU で{'実行しました' if s.finished else '実行中'}"


@says(c.CouldNotStart)
def _could_not_start(r: c.CouldNotStart, s: Say) -> str:
    return f"開始できませんでした: {s.text(r.error)}"


@says(c.StartHeld)
def _start_held(r: c.StartHeld, s: Say) -> str:
    tries = f"（これまで {r.tries} 回）" if r.tries > 1 else ""
    if s.finished:
        return f"開始できませんでした: {s.text(r.error)}{tries}"
    return f"今は開始できません: {s.text(r.error)}。{max(1, round(r.delay_s))} 秒後にもう一度試します{tries}"


@says(c.Cancelled)
def _cancelled(r: c.Cancelled, s: Say) -> str:
    if r.offline:
        return "実行中にキャンセル（オーナーは起動していませんでした）"
    return "実行中にキャンセル" if r.while_running else "キャンセル済み"


@says(c.LostWhileRunning)
def _lost_while_running(r: c.LostWhileRunning, s: Say) -> str:
    return f"中断: 実行中に {r.device} が失われました"


@says(c.OwnerStopped)
def _owner_stopped(r: c.OwnerStopped, s: Say) -> str:
    return "中断: 実行中に gputray が終了しました" + (
        "（残っていたプロセスを停止しました）" if r.stopped_leftover else ""
    )


@says(c.StartCutShort)
def _start_cut_short(r: c.StartCutShort, s: Say) -> str:
    return "再キュー: ジョブの開始前に gputray が終了しました" + (
        "（残っていたプロセスを停止しました）" if r.stopped_leftover else ""
    )


@says(c.SupervisorKilled)
def _supervisor_killed(r: c.SupervisorKilled, s: Say) -> str:
    stopped = f"。ジョブのプロセス {r.stopped} 個を停止しました" if r.stopped else ""
    if r.at_start:
        return f"中断: ジョブの開始時に監視プロセスが強制終了されました{stopped}"
    if r.unanswering:
        unanswered = "監視プロセスが何度も停止され（SIGSTOP）何も応答しなかったため"
        return f"中断: {unanswered}、終了状態は不明です{stopped}"
    return f"中断: 監視プロセスが強制終了されたため、終了状態は不明です{stopped}"


@says(c.Leftovers)
def _leftovers(r: c.Leftovers, s: Say) -> str:
    return f"ジョブの終了後も {r.count} 個のプロセスが動いていたので停止しました"


@says(c.OutputLost)
def _output_lost(r: c.OutputLost, s: Say) -> str:
    return f"ディスクが一杯だったため、ジョブの出力 {r.bytes:,} バイトが失われました"


@says(c.RanOutOfMemory)
def _ran_out_of_memory(r: c.RanOutOfMemory, s: Say) -> str:
    on = "CPU" if r.on_cpu else r.device or "そのデバイス"
    said = f"{on} でメモリ不足" + (f"（{s.size(r.at_bytes)} の時点）" if r.at_bytes else "")
    if r.moved_to is not None:
        where = {"vram": "VRAM", "shared": "共有メモリ", "ram": "RAM"}[r.where]
        free = f"{where} の空き {s.size(r.moved_to.free_bytes)}"
        runs = "実行しました" if s.finished else "実行します"
        return f"{said}。{_where(r.moved_to.device)} で{runs}（{free}）"
    if r.no_other:
        how = "--device で追加し、--on-busy redirect でそちらへ移れます"
        return f"{said}。ほかに使えるデバイスがありません（{how}）"
    tried = "、".join(f"{_where(t.device)} の空き {s.size(max(0, t.free_bytes))}" for t in r.tried)
    return f"{said}。使えるデバイスにそれだけの空きがありません" + (f"（{tried}）" if tried else "")


@says(c.MovedLate)
def _moved_late(r: c.MovedLate, s: Say) -> str:
    moved = "移して実行しました" if s.finished else "移しました"
    frees = f"、空くまで {s.about(r.wait_s)}" if r.wait_s > 0 else ""
    done = f"{s.duration(r.after_s)} で {r.done * 100:.0f} %"
    return (
        f"{_where(r.to_device)} に{moved}。{_where(r.from_device)} では終了まで {s.about(r.left_s)}"
        f"（{done}）、移した先では {s.about(r.there_s)} で完了{frees}"
    )


@says(c.TimedOut)
def _timed_out(r: c.TimedOut, s: Say) -> str:
    return f"{r.timeout_s:g} 秒でタイムアウト"


@says(c.KilledBy)
def _killed_by(r: c.KilledBy, s: Say) -> str:
    return f"シグナル {r.signal} で強制終了"


@says(c.ExitedWith)
def _exited(r: c.ExitedWith, s: Say) -> str:
    return f"終了コード {r.status} で終了"


@says(c.RetryPlanned)
def _retry_planned(r: c.RetryPlanned, s: Say) -> str:
    if r.delay_s >= 1:
        return f"{s(r.why)}。{r.delay_s:.0f} 秒後に再試行（{r.n}/{r.total}）"
    return f"{s(r.why)}。{s.tense('再試行します', '再試行する予定でした')}（残り {r.total - r.n + 1} 回）"


@says(c.NoRetriesLeft)
def _no_retries(r: c.NoRetriesLeft, s: Say) -> str:
    return f"{s(r.why)}。再試行はもうありません"


@says(c.RequeuedByRequest)
def _requeued(r: c.RequeuedByRequest, s: Say) -> str:
    return "要求によりキューに再追加"


@says(c.RequeuedWith)
def _requeued_with(r: c.RequeuedWith, s: Say) -> str:
    return f"再びキューへ: #{r.task_id} が再びキューに入りました"


@says(c.RecordUnreadable)
def _unreadable(r: c.RecordUnreadable, s: Say) -> str:
    return f"保存された記録を読めません: {r.problem}。キューのファイルにはそのまま残してあります"


@says(c.Unplannable)
def _unplannable(r: c.Unplannable, s: Say) -> str:
    if r.which is None:
        return f"予定を立てられません: {s.text(r.problem)}"
    which = "開始時刻" if r.which == "start" else "再試行の時刻"
    return f"予定を立てられません: {which}が 1970 年から 9999 年の範囲にありません"
