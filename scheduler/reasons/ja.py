"""Reasons in Japanese: one wording per code (``reasons.codes`` and the monitor's ``busy_why``).

A list inside a reason is joined with "、", reasons in a row with "。"; brackets are the full-width
（）and never nest (an inner reason in brackets is joined with "、" instead). Names, sizes and
numbers stay as they are.
"""

from __future__ import annotations

from gputray.monitor import busy_why as b
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.say import Catalogue, Say

JA = Catalogue(
    "ja", joiner="、", sentences="。", unit_s="{n} 秒", unit_min="{m} 分", unit_h_min="{h} 時間 {m:02d} 分"
)
says = JA.says


def _where(device: str | None) -> str:
    return "CPU" if device is None else device


def _demo(demo_for: str | None) -> str:
    return f"（デモ：{demo_for} の代わり）" if demo_for else ""


def _pct(value: float) -> str:
    return f"{value:.0f} %"


def _who(who: b.Who) -> str:
    return f"{who.name} ほか {who.others} 件" if who.others else who.name


def _flat(text: str) -> str:
    """An inner reason put in brackets: its own brackets become "、" so that none nest."""
    return text.replace("（", "、").replace("）", "")


# -- the monitor's verdicts ---------------------------------------------------------------------------


@says(b.Lost)
def _lost(r: b.Lost, s: Say) -> str:
    why = s.text(r.why) if r.why else "バスから外れました"
    return f"{r.device} が失われました: {why}" if s.named else f"失われました: {why}"


@says(b.NoData)
def _no_data(r: b.NoData, s: Say) -> str:
    why = s.text(r.why) if r.why else "データなし"
    return f"{r.device} は利用できません: {why}" if s.named else f"利用できません: {why}"


@says(b.Asleep)
def _asleep(r: b.Asleep, s: Say) -> str:
    return f"{r.device} はスリープ中" if s.named else "スリープ中"


@says(b.Hot)
def _hot(r: b.Hot, s: Say) -> str:
    if s.named:
        return f"{r.device} が高温: {r.temp_c:.0f} °C（上限 {r.limit_c:.0f} °C）"
    return f"高温: {r.temp_c:.0f} °C、上限 {r.limit_c:.0f} °C"


@says(b.UtilHigh)
def _util_high(r: b.UtilHigh, s: Say) -> str:
    now = "現在 —" if r.util_pct is None else f"現在 {_pct(r.util_pct)}"
    if r.free_in_s is not None:
        now += f"、このまま低ければ {r.free_in_s} 秒後に空きます"
    rule = f"{r.window_s:.0f} 秒間 {_pct(r.threshold_pct)} 超、{now}"
    if r.who is None or not r.held_bytes:
        return rule
    return f"{_who(r.who)} が {s.size(r.held_bytes)} を使用中、{rule}"


@says(b.MemoryHeld)
def _memory_held(r: b.MemoryHeld, s: Say) -> str:
    return (
        f"{_who(r.who)} が {s.size(r.held_bytes)} を使用中で、GPU は {_pct(r.util_pct)}、"
        f"{_pct(r.threshold_pct)} 超で使用中"
    )


@says(b.MemoryHeldRecently)
def _memory_recent(r: b.MemoryHeldRecently, s: Say) -> str:
    return (
        f"{_who(r.who)} が {s.size(r.held_bytes)} を使用中で、GPU は {r.ago_s:.0f} 秒前に "
        f"{_pct(r.threshold_pct)} を超えていました、このまま低ければ {r.free_in_s} 秒後に空きます"
    )


@says(b.PausedOn)
def _paused_on(r: b.PausedOn, s: Say) -> str:
    return f"{r.machine} のキューは一時停止中" if r.whole_queue else f"{r.machine} で一時停止中"


@says(b.Words)
def _words(r: b.Words, s: Say) -> str:
    return s.text(r.text)


@says(c.Said)
def _said(r: c.Said, s: Say) -> str:
    return r.text  # as written, in every language


# -- a device for a task ------------------------------------------------------------------------------


@says(c.Chain)
def _chain(r: c.Chain, s: Say) -> str:
    return s.catalogue.sentences.join(s(p) for p in r.parts)


@says(c.Each)
def _each(r: c.Each, s: Say) -> str:
    return s.join(r.parts)


@says(c.OnDevice)
def _on_device(r: c.OnDevice, s: Say) -> str:
    return f"{r.device}: {s(r.why)}"


def _needs(need: c.Need, s: Say) -> str:
    if need.predicted:
        return f"約 {s.size(need.bytes)}" + (f"（{need.source}）" if need.source else " ")
    return f"{s.size(need.bytes)} "


@says(c.TooBig)
def _too_big(r: c.TooBig, s: Say) -> str:
    return f"{_needs(r.need, s)}必要ですが {r.device} は {s.size(r.total_bytes)} です"


@says(c.LacksNeeds)
def _lacks(r: c.LacksNeeds, s: Say) -> str:
    return f"{r.device} は {'、'.join(r.needs)} に対応していません（診断による）"


@says(c.DeviceGone)
def _gone(r: c.DeviceGone, s: Say) -> str:
    if r.state == "lost":
        return f"失われました: {s.text(r.why) if r.why else 'バスから外れました'}"
    return f"利用できません: {s.text(r.why) if r.why else 'データなし'}"


@says(c.DevicePaused)
def _paused(r: c.DevicePaused, s: Say) -> str:
    return "一時停止中"


@says(c.HeldFor)
def _held(r: c.HeldFor, s: Say) -> str:
    return f"最も長く待っているタスク #{r.task_id} のために確保中"


@says(c.RunningTask)
def _running(r: c.RunningTask, s: Say) -> str:
    return f"「{r.name}」を実行中"


@says(c.QueuePaused)
def _queue_paused(r: c.QueuePaused, s: Say) -> str:
    return "キューは一時停止中です"


@says(c.NoRoom)
def _no_room(r: c.NoRoom, s: Say) -> str:
    return f"{s.text(r.problem)}。空きができるまで何も開始しません"


@says(c.SlotsTaken)
def _slots(r: c.SlotsTaken, s: Say) -> str:
    return "ジョブの枠がすべて使用中"


@says(c.DeviceBusy)
def _busy(r: c.DeviceBusy, s: Say) -> str:
    return s.catalogue.joiner.join(s.unnamed(w) for w in r.why) or "使用中"


@says(c.MemoryShort)
def _memory_short(r: c.MemoryShort, s: Say) -> str:
    where = {"vram": "VRAM", "shared": "GTT + カーブアウト", "ram": "RAM"}[r.where]
    return f"{_needs(r.need, s)}必要ですが {where} の空きは {s.size(r.free_bytes)} です"


@says(c.TooHot)
def _too_hot(r: c.TooHot, s: Say) -> str:
    return f"高温: {r.temp_c:.0f} °C、上限 {r.limit_c:.0f} °C"


# -- Python envs --------------------------------------------------------------------------------------


@says(c.EnvChecking)
def _env_checking(r: c.EnvChecking, s: Say) -> str:
    return f"{_where(r.device)} で環境 {r.env} を確認中{_demo(r.demo_for)}…"


@says(c.NoEnvWorks)
def _no_env_works(r: c.NoEnvWorks, s: Say) -> str:
    text = f"{_where(r.device)} で動く Python 環境がありません{_demo(r.demo_for)}"
    if r.failures:
        text += "：" + "、".join(f"{f.env}: {s.text(f.why)}" for f in r.failures)
    return text + (f"。対処：{s.text(r.fix)}" if r.fix else "")


@says(c.NoEnvKnown)
def _no_env_known(r: c.NoEnvKnown, s: Say) -> str:
    return f"{_where(r.device)} で動くと分かっている Python 環境がありません"


@says(c.NoEnvConfigured)
def _no_env_configured(r: c.NoEnvConfigured, s: Say) -> str:
    add = f"追加：{r.command}（`pip install torch` を実行した venv）"
    if r.demo:
        return f"デモ：torch ジョブは torch のある環境で CPU 上で動きます。{add}"
    return f"torch ジョブ用の Python 環境が設定されていません。{add}"


@says(c.EnvUnproven)
def _env_unproven(r: c.EnvUnproven, s: Say) -> str:
    unproven = "その torch がこの GPU を使うことは確認できていません"
    anyway = "allow_unproven = true のタスクはそこで実行します"
    return f"環境 {r.env} は {_where(r.device)} で動きますが、{unproven}（{_flat(s.text(r.why))}）。{anyway}"


@says(c.EnvListUnreadable)
def _env_list(r: c.EnvListUnreadable, s: Say) -> str:
    return f"環境の一覧を読めません: {r.error}"


@says(c.EnvLookupFailed)
def _env_lookup(r: c.EnvLookupFailed, s: Say) -> str:
    return f"環境の検索に失敗しました（{r.error}）"


# -- placement's decisions ----------------------------------------------------------------------------


@says(c.FirstBusy)
def _first_busy(r: c.FirstBusy, s: Say) -> str:
    return f"{r.label} は使用中（{_flat(s(r.why))}）"


@says(c.FirstCannot)
def _first_cannot(r: c.FirstCannot, s: Say) -> str:
    return f"{r.label} では実行できません（{_flat(s(r.why))}）"


@says(c.FirstAbsent)
def _first_absent(r: c.FirstAbsent, s: Say) -> str:
    return f"{r.label} が見つかりません"


@says(c.NotPresent)
def _not_present(r: c.NotPresent, s: Say) -> str:
    return "見つかりません"


@says(c.Redirected)
def _redirected(r: c.Redirected, s: Say) -> str:
    after = f"{s.duration(r.waited_s)} 待った後 " if r.waited_s is not None else ""
    where = "CPU で実行" if r.to_cpu else f"{r.target} に振り替え"
    return f"{after}{where}: {s(r.first)}"


@says(c.NoDeviceCanRun)
def _no_device(r: c.NoDeviceCanRun, s: Say) -> str:
    return f"実行できるデバイスがありません: {s.join(r.why)}"


@says(c.GaveUp)
def _gave_up(r: c.GaveUp, s: Say) -> str:
    label = f"{r.label} を " if r.label is not None else ""
    return f"{label}{s.duration(r.waited_s)} 待って断念: {s(r.why)}"


@says(c.WaitingFor)
def _waiting_for(r: c.WaitingFor, s: Say) -> str:
    return f"{r.label} を待機中: {s(r.why)}"


@says(c.WaitingForAny)
def _waiting_any(r: c.WaitingForAny, s: Say) -> str:
    return f"空いているデバイスを待機中: {s.join(r.why)}"


@says(c.RetryIn)
def _retry_in(r: c.RetryIn, s: Say) -> str:
    return f"{s.duration(r.delay_s)} 後に再試行"


@says(c.StartsAt)
def _starts_at(r: c.StartsAt, s: Say) -> str:
    return f"{s.clock(r.at_s, r.with_date)} に開始"


@says(c.WindowWait)
def _window(r: c.WindowWait, s: Say) -> str:
    return f"実行時間帯 {r.window} を待機中"


_PREFER = {"fastest": "最速", "greenest": "省エネ"}


@says(c.Unestimated)
def _unestimated(r: c.Unestimated, s: Say) -> str:
    return f"{_PREFER.get(r.prefer, r.prefer)}: このジョブの過去の実行がなく見積もれません。{s(r.then)}"


def _outlook(o: c.Outlook, s: Say, energy: bool) -> str:
    kj = f"、{o.energy_j / 1000:.1f} kJ" if energy and o.energy_j is not None else ""
    if o.wait_s is None:
        text = f"{o.device} は使用中、空く時刻は不明"
    elif o.wait_s > 0:
        text = f"{o.device} は {s.about(o.wait_s)} 後に空き、{s.about(o.wait_s + o.run_s)} 後に完了{kj}"
    else:
        text = f"{o.device} なら {s.about(o.run_s)} で完了{kj}"
    return text + (f"、最速の {o.past_factor:g} 倍を超える" if o.past_factor is not None else "")


@says(c.Preferred)
def _preferred(r: c.Preferred, s: Say) -> str:
    mine = f"{_outlook(r.chosen, s, r.energy)}: {'そこで実行します' if r.starts else '空くのを待ちます'}"
    others = "。".join(_outlook(o, s, r.energy) for o in r.others)
    return f"{_PREFER.get(r.prefer, r.prefer)}: " + (f"{others}。{mine}" if others else mine)


# -- a job's start and end ----------------------------------------------------------------------------


@says(c.JobPaused)
def _job_paused(r: c.JobPaused, s: Say) -> str:
    who = f"#{r.for_task}（優先度 {r.priority}）のため " if r.for_task is not None else ""
    who = f"{r.app} が GPU を使っている間 " if r.app is not None else who
    paused = f"{who}{s.clock(r.at_s, False)} に一時停止しました"
    if r.memory == "held":
        return f"{paused}。GPU メモリは確保されたままです（cuda-checkpoint: {s.text(r.problem or '')}）"
    if r.memory == "moved":
        return f"{paused}。GPU メモリはホストのメモリに移しました（cuda-checkpoint）"
    return paused


@says(c.RoomMade)
def _room_made(r: c.RoomMade, s: Say) -> str:
    held, idle = s.size(r.held_bytes), f"アイドル {s.duration(r.idle_s)}"
    if r.step == "holds":
        command = f"`gputray free-resident {r.resident.lower()}`"
        return f"{r.resident} が {held} を確保しています（{idle}）。{command} でこのタスクのために解放します"
    if r.step == "asked":
        return f"{r.resident}（{idle}）に {held} の解放を依頼しました"
    if r.step == "freed":
        return f"{r.resident}（{idle}）が確保していた {s.size(r.freed_bytes)} を解放しました。開始します"
    if r.step == "not_freed":
        within = s.seconds(r.bound_s)
        asked = f"{r.resident} に {held} の解放を依頼しましたが"
        return f"{asked}、{within}以内にデバイスの使用メモリが減りませんでした"
    return f"{r.resident} に {held} の解放を依頼しましたが、拒否されたか応答がありません（{s.text(r.said)}）"


@says(c.JobResumed)
def _job_resumed(r: c.JobResumed, s: Say) -> str:
    who = f"#{r.for_task}（優先度 {r.priority}）のため " if r.for_task is not None else ""
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
    return f"{s(r.why)}。再試行します（残り {r.total - r.n + 1} 回）"


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
    return f"予定を立てられません: {r.problem}"


# -- dependencies -------------------------------------------------------------------------------------

_STATES = {
    "queued": "キュー内",
    "waiting": "待機中",
    "running": "実行中",
    "succeeded": "成功",
    "failed": "失敗",
    "cancelled": "キャンセル済み",
    "interrupted": "中断",
}


def _dep(d: c.DepState) -> str:
    return f"#{d.task_id}「{d.name}」"


@says(c.WaitsForDeps)
def _waits_for_deps(r: c.WaitsForDeps, s: Say) -> str:
    deps = "、".join(
        f"#{d.task_id}（キューにありません。`gputray edit {r.task_id} --after …` で待つ先を変えられます）"
        if d.state == "removed"
        else f"{_dep(d)}（{_STATES.get(d.state, d.state)}）"
        for d in r.deps
    )
    return f"{deps}の{'終了' if r.any_end else '成功'}を待機中"


@says(c.DependencyFailed)
def _dependency_failed(r: c.DependencyFailed, s: Say) -> str:
    why = s(r.why) if r.why is not None else _STATES.get(r.dep.state, r.dep.state)
    if isinstance(r.why, c.DependencyFailed):
        why = f"その依存先のため: {why}"
    if len(why) > 120:
        why = why[:119] + "…"
    what = "キャンセルされました" if r.dep.state == "cancelled" else "失敗しました"
    return f"依存先 {_dep(r.dep)}が{what}: {why}"


# -- the cluster --------------------------------------------------------------------------------------


@says(c.Sending)
def _sending(r: c.Sending, s: Say) -> str:
    if r.not_here:
        return f"{r.machine} へ送信中（ここでは開始できませんでした）"
    return f"{r.machine} へ送信中" + (f"（{_flat(s(r.why))}）" if r.why is not None else "")


@says(c.HandedTo)
def _handed_to(r: c.HandedTo, s: Say) -> str:
    return f"{r.machine} で #{r.remote_id} として待機"


@says(c.OnMachine)
def _on_machine(r: c.OnMachine, s: Say) -> str:
    where = f"{r.machine}（#{r.remote_id}）"
    return f"{where}: {s(r.why)}" if r.why is not None else f"{where} で実行"


@says(c.RefusedBy)
def _refused_by(r: c.RefusedBy, s: Say) -> str:
    return f"{r.machine} に拒否されました: {s.text(r.refusal)}"


@says(c.TakenBack)
def _taken_back(r: c.TakenBack, s: Say) -> str:
    if r.by:
        if r.free is None:
            return f"編集を反映するため {r.machine} が引き戻しました"
        return f"{r.machine} が引き戻しました: ここで待っていて、{r.free or 'このマシン'} が空いています"
    if r.free is None:
        return f"編集を反映するため {r.machine} から引き戻しました"
    return f"{r.machine} から引き戻しました: そこで待っていて、{r.free} が空いています"


@says(c.LeftCluster)
def _left_cluster(r: c.LeftCluster, s: Say) -> str:
    return f"{r.machine} がクラスターから外れました" + ("（実行中）" if r.while_running else "")


@says(c.StartedBeforeEdit)
def _started_before_edit(r: c.StartedBeforeEdit, s: Say) -> str:
    return f"{r.machine}（#{r.remote_id}）: 編集の前にそこで始まったため、送ったとおりに実行します"


@says(c.Unanswered)
def _unanswered(r: c.Unanswered, s: Say) -> str:
    return (
        f"{r.machine}（#{r.remote_id}）: {r.machine} が {s.clock_s(r.since_s)} から応答しません"
        "（gputray が止まった？）。そこのキューがタスクを保持し、応答が戻れば再び追跡します"
    )


# -- queue events -------------------------------------------------------------------------------------


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
    free = f"{r.device} が空いていて {s.about(r.run_s)} で実行できます"
    return f"{r.name} は {s.about(r.waited_s)} 待っています: {free}"


# -- what happened to a device (the tray's notices) ------------------------------------------------


@says(b.Appeared)
def _appeared(r: b.Appeared, s: Say) -> str:
    return f"{r.device} が現れました"


@says(b.Vanished)
def _vanished(r: b.Vanished, s: Say) -> str:
    return f"{r.device} が見えなくなりました"


@says(b.WasLost)
def _waslost(r: b.WasLost, s: Say) -> str:
    return f"{r.device} が失われました: {s.text(r.why) if r.why else 'バスから外れました'}"


@says(b.Back)
def _back(r: b.Back, s: Say) -> str:
    return f"{r.device} が復帰しました"


@says(b.WentToSleep)
def _wenttosleep(r: b.WentToSleep, s: Say) -> str:
    return f"{r.device} がスリープしました"


@says(b.WokeUp)
def _wokeup(r: b.WokeUp, s: Say) -> str:
    return f"{r.device} がスリープから復帰しました"


@says(b.Cooled)
def _cooled(r: b.Cooled, s: Say) -> str:
    return f"{r.device} は {r.temp_c:.0f} °C まで下がりました"
