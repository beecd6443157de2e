"""Japanese words for the monitor's verdicts on a device (``monitor/busy_why``), what happened to a
device, what a backend says about a device it cannot read, or reads only in part (``Sample.reason``: the
codes of ``SampleWhy``) and about itself (``BackendNote``), and words kept as written. A library's or the
OS's own error text inside a backend's reason is shown as written (``Say.text``); library names (NVML,
amdsmi, PDH) stay as they are. Inside a task's reason a backend's reason reads in the past once the task
has ended, and it brackets nothing (a task's reason may put it in brackets of its own). The Vulkan
enumeration's reasons (``monitor/vulkan_why``) are worded at the end; the loader's, the driver's and the
worker's own words are shown as written."""

from __future__ import annotations

from gputray.monitor import busy_why as b
from gputray.monitor import vulkan_why as v
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.ja.common import JA, _flat, _pct, _who
from gputray.scheduler.reasons.say import Say

says = JA.says


@says(b.Lost)
def _lost(r: b.Lost, s: Say) -> str:
    why = s(r.why) if r.why else "バスから外れました"
    return f"{r.device} が失われました: {why}" if s.named else f"失われました: {why}"


@says(b.NoData)
def _no_data(r: b.NoData, s: Say) -> str:
    why = s(r.why) if r.why else "データなし"
    return f"{r.device} は利用できません: {why}" if s.named else f"利用できません: {why}"


@says(b.Asleep)
def _asleep(r: b.Asleep, s: Say) -> str:
    asleep = s.tense("スリープ中", "スリープ中でした")
    return f"{r.device} は{asleep}" if s.named else asleep


@says(b.Hot)
def _hot(r: b.Hot, s: Say) -> str:
    if s.named:
        return f"{r.device} が高温: {r.temp_c:.0f} °C（上限 {r.limit_c:.0f} °C）"
    return f"高温: {r.temp_c:.0f} °C、上限 {r.limit_c:.0f} °C"


@says(b.UtilHigh)
def _util_high(r: b.UtilHigh, s: Say) -> str:
    now = "現在 —" if r.util_pct is None else f"現在 {_pct(r.util_pct)}"
    if s.finished:  # a task's reason, once it has ended: what it was then
        now = "" if r.util_pct is None else f"その時 {_pct(r.util_pct)}"
    elif r.free_in_s is not None:
        now += f"、このまま低ければ {r.free_in_s} 秒後に空きます"
    rule = f"{r.window_s:.0f} 秒間 {_pct(r.threshold_pct)} 超" + (f"、{now}" if now else "")
    if r.who is None or not r.held_bytes:
        return rule
    return f"{_who(r.who)} が {s.size(r.held_bytes)} を{s.tense('使用中', '使用')}、{rule}"


@says(b.MemoryHeld)
def _memory_held(r: b.MemoryHeld, s: Say) -> str:
    return (
        f"{_who(r.who)} が {s.size(r.held_bytes)} を使用中で、GPU は {_pct(r.util_pct)}、"
        f"{_pct(r.threshold_pct)} 超で{s.tense('使用中', '使用中でした')}"
    )


@says(b.MemoryHeldRecently)
def _memory_recent(r: b.MemoryHeldRecently, s: Say) -> str:
    if s.finished:
        return (
            f"{_who(r.who)} が {s.size(r.held_bytes)} を使用中で、GPU は少し前に "
            f"{_pct(r.threshold_pct)} を超えていました"
        )
    return (
        f"{_who(r.who)} が {s.size(r.held_bytes)} を使用中で、GPU は {r.ago_s:.0f} 秒前に "
        f"{_pct(r.threshold_pct)} を超えていました、このまま低ければ {r.free_in_s} 秒後に空きます"
    )


@says(b.PausedOn)
def _paused_on(r: b.PausedOn, s: Say) -> str:
    paused = s.tense("一時停止中", "一時停止中でした")
    return f"{r.machine} のキューは{paused}" if r.whole_queue else f"{r.machine} で{paused}"


@says(b.Words)
def _words(r: b.Words, s: Say) -> str:
    return s.text(r.text)


@says(c.Said)
def _said(r: c.Said, s: Say) -> str:
    return r.text  # as written, in every language


@says(b.Appeared)
def _appeared(r: b.Appeared, s: Say) -> str:
    return f"{r.device} が現れました"


@says(b.Vanished)
def _vanished(r: b.Vanished, s: Say) -> str:
    return f"{r.device} が見えなくなりました"


@says(b.WasLost)
def _waslost(r: b.WasLost, s: Say) -> str:
    return f"{r.device} が失われました: {s(r.why) if r.why else 'バスから外れました'}"


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


# -- what a backend says about a device, and about itself ----------------------------------------

#: The figures a backend may not report, in Japanese.
METRICS: dict[b.Metric, str] = {
    "load": "負荷",
    "temperature": "温度",
    "power": "電力",
    "memory": "メモリ",
    "memory total": "メモリ総量",
    "core clock": "コアクロック",
    "memory clock": "メモリクロック",
    "throttle": "スロットル",
}


@says(b.FellOffBus)
def _fell_off(r: b.FellOffBus, s: Say) -> str:
    return "バスから外れました"


@says(b.NeedsReset)
def _needs_reset(r: b.NeedsReset, s: Say) -> str:
    return s.tense(
        "リセットが必要です: NVML が使用不能と報告しています",
        "リセットが必要でした: NVML が使用不能と報告しました",
    )


@says(b.NotWoken)
def _not_woken(r: b.NotWoken, s: Say) -> str:
    return s.tense(
        "省電力で休止しているため、起こして読むことはしません",
        "省電力で休止していたため、起こして読みませんでした",
    )


@says(b.LetGo)
def _let_go(r: b.LetGo, s: Say) -> str:
    return f"{s.tense('アイドル', 'アイドルでした')}: スリープできるよう {r.api} を閉じました"


@says(b.OtherDriver)
def _other_driver(r: b.OtherDriver, s: Say) -> str:
    if s.finished:
        return f"NVIDIA ドライバーではなく {r.driver} で動いていたため、{r.api} では読み取れませんでした"
    return f"NVIDIA ドライバーではなく {r.driver} で動いているため、{r.api} では読み取れません"


@says(b.ApiFailed)
def _api_failed(r: b.ApiFailed, s: Say) -> str:
    return f"{r.api} でエラーが起きました: {s.text(r.error)}"


@says(b.ApiStartFailed)
def _api_start_failed(r: b.ApiStartFailed, s: Say) -> str:
    return f"{r.api} を開始できません: {s.text(r.error)}"


@says(b.ApiRefusedDevice)
def _api_refused(r: b.ApiRefusedDevice, s: Say) -> str:
    return f"{r.api} はこの GPU を{s.tense('使えません', '使えませんでした')}: {s.text(r.error)}"


@says(b.NoHandles)
def _no_handles(r: b.NoHandles, s: Say) -> str:
    return f"{r.api} から GPU ハンドルを得られません: {s.text(r.error)}"


@says(b.NotInstalled)
def _not_installed(r: b.NotInstalled, s: Say) -> str:
    missing = s.tense("インストールされていません", "インストールされていませんでした")
    return f"{r.package} が{missing}: {s.text(r.error)}"


@says(b.NoApi)
def _no_api(r: b.NoApi, s: Say) -> str:
    return f"{r.api} を{s.tense('利用できません', '利用できませんでした')}"


@says(b.NvmlMissing)
def _nvml_missing(r: b.NvmlMissing, s: Say) -> str:
    found = s.tense("見つかりません", "見つかりませんでした")
    return f"NVIDIA ドライバーのライブラリ libnvidia-ml / nvml.dll が{found}"


@says(b.DriverNotLoaded)
def _driver_not_loaded(r: b.DriverNotLoaded, s: Say) -> str:
    return f"NVIDIA ドライバーが{s.tense('読み込まれていません', '読み込まれていませんでした')}"


@says(b.DriverDenied)
def _driver_denied(r: b.DriverDenied, s: Say) -> str:
    return f"NVIDIA ドライバーと通信する権限が{s.tense('ありません', 'ありませんでした')}"


@says(b.NoNvidiaGpu)
def _no_nvidia(r: b.NoNvidiaGpu, s: Say) -> str:
    return f"PCI バスに NVIDIA GPU が{s.tense('ありません', 'ありませんでした')}"


@says(b.AllAsleep)
def _all_asleep(r: b.AllAsleep, s: Say) -> str:
    if s.finished:
        return "すべての NVIDIA GPU がスリープしていたため、起こさないよう NVML を閉じていました"
    return "すべての NVIDIA GPU がスリープしているため、起こさないよう NVML を閉じています"


@says(b.NoneOnDriver)
def _none_on_driver(r: b.NoneOnDriver, s: Say) -> str:
    if s.finished:
        return "起きていた NVIDIA GPU に NVIDIA ドライバーで動くものはありませんでした"
    return "起きている NVIDIA GPU に NVIDIA ドライバーで動くものがありません"


@says(b.ClosedAfterLoss)
def _closed_after_loss(r: b.ClosedAfterLoss, s: Say) -> str:
    return f"GPU が失われたため、次に検出し直すまで NVML を{s.tense('閉じています', '閉じていました')}"


@says(b.PausedAfterLoss)
def _paused_after_loss(r: b.PausedAfterLoss, s: Say) -> str:
    if s.finished:
        return "GPU が失われたため NVML を止めていました"
    return f"GPU が失われたため NVML を止めています。{s.seconds(r.retry_in_s)}後にもう一度試します"


@says(b.WouldWake)
def _would_wake(r: b.WouldWake, s: Say) -> str:
    if s.finished:
        return "止めていました: AMD GPU がランタイム電源管理を使っていて、amdsmi を開くと起こしてしまうため"
    return "止めています: AMD GPU がランタイム電源管理を使っていて、amdsmi を開くと起こしてしまいます"


@says(b.NotReported)
def _not_reported(r: b.NotReported, s: Say) -> str:
    what = "、".join(METRICS[m] for m in r.metrics)
    return f"{r.by} が報告しない値: {what}" if r.by else f"報告されない値: {what}"  # facts: no tense


@says(b.NoFigures)
def _no_figures(r: b.NoFigures, s: Say) -> str:
    label = f"仮想 GPU の {r.driver}" if r.virtual else f"{r.driver} ドライバー"
    return f"{label}: {'・'.join(METRICS[m] for m in r.metrics)}の値がありません"


@says(b.NeedsSecondCollection)
def _second_collection(r: b.NeedsSecondCollection, s: Say) -> str:
    return f"GPU 使用率には 2 回目の PDH 収集が{s.tense('必要です', '必要でした')}"


@says(b.NoGpuCounters)
def _no_counters(r: b.NoGpuCounters, s: Say) -> str:
    if s.finished:
        return "この Windows には GPU のパフォーマンスカウンター \\GPU Engine がありませんでした"
    return (
        "この Windows には GPU のパフォーマンスカウンター \\GPU Engine がありません。"
        "WDDM 2.0 以降のディスプレイドライバー、Windows 10 1709 以降で使えます。"
        "これがないと GPU の負荷とメモリは分かりません"
    )


@says(b.CountersFailed)
def _counters_failed(r: b.CountersFailed, s: Say) -> str:
    return f"PDH カウンターを{s.tense('読めません', '読めませんでした')}: {s.text(r.error)}"


@says(b.BackendCrashed)
def _crashed(r: b.BackendCrashed, s: Say) -> str:
    return f"エラー: {s.text(r.error)}"


@says(b.BackendNote)
def _note(r: b.BackendNote, s: Say) -> str:
    return f"{r.backend}: {s(r.why)}"


# -- the Vulkan enumeration (``monitor/vulkan_why``) ------------------------------------------------

_LACKS = {
    "vkGetInstanceProcAddr": "ローダーのライブラリに vkGetInstanceProcAddr がありません",
    "vkCreateInstance": "ローダーに vkCreateInstance がありません",
    "physical-device": "ローダーに物理デバイスの関数がありません",
}
_BROKEN = "（Vulkan ドライバーの不具合かもしれません）"


def _stderr(lines: tuple[str, ...], s: Say) -> str:
    return (": " + " | ".join(s.text(line) for line in lines)) if lines else ""


@says(v.NoLoader)
def _no_loader(r: v.NoLoader, s: Say) -> str:
    tried = "、".join(_flat(s.text(t)) for t in r.tried)
    return f"Vulkan を使えません: Vulkan ローダーを読み込めませんでした（{tried}）"


@says(v.LoaderLacks)
def _loader_lacks(r: v.LoaderLacks, s: Say) -> str:
    return f"Vulkan を使えません: {_LACKS[r.entry]}"


@says(v.OldLoader)
def _old_loader(r: v.OldLoader, s: Say) -> str:
    return (
        "Vulkan を使えません: ローダーが Vulkan 1.0 で、VK_KHR_get_physical_device_properties2 がありません"
    )


@says(v.CallFailed)
def _call_failed(r: v.CallFailed, s: Say) -> str:
    hint = "（Vulkan のドライバー ICD が見つかりません）" if r.no_driver else ""
    return f"Vulkan を使えません: {r.call} が {r.result} で失敗しました{hint}"


@says(v.WorkerNotStarted)
def _worker_not_started(r: v.WorkerNotStarted, s: Say) -> str:
    return f"Vulkan の列挙で {r.program} を起動できませんでした: {s.text(r.error)}"


@says(v.WorkerHung)
def _worker_hung(r: v.WorkerHung, s: Say) -> str:
    return f"Vulkan の列挙が {r.timeout_s:g} 秒応答しないため終了させました{_BROKEN}"


@says(v.WorkerDied)
def _worker_died(r: v.WorkerDied, s: Say) -> str:
    how = (
        f"シグナル {r.signal} で強制終了しました"
        if r.signal is not None
        else f"終了コード {r.status} で終了しました"
    )
    return f"Vulkan の列挙が{how}{_BROKEN}{_stderr(r.stderr, s)}"


@says(v.NoResult)
def _no_result(r: v.NoResult, s: Say) -> str:
    hint = ""
    if r.list_mode:
        hint = "（MESA_VK_DEVICE_SELECT=list では Mesa のデバイス選択レイヤーがデバイスを一覧して終了します）"
    return f"Vulkan の列挙が結果を出さずに終了しました{hint}{_stderr(r.stderr, s)}"


@says(v.UnreadableResult)
def _unreadable_result(r: v.UnreadableResult, s: Say) -> str:
    return f"Vulkan の列挙の出力を読めません: {s.text(r.error)}{_stderr(r.stderr, s)}"


@says(v.NotEnumerated)
def _not_enumerated(r: v.NotEnumerated, s: Say) -> str:
    return "デモモードでは列挙しません"


@says(v.BacksSimulated)
def _backs_simulated(r: v.BacksSimulated, s: Say) -> str:
    return f"シミュレートされた {r.device} を担当します（デモのシナリオの [[vulkan]]）"


@says(v.SoftwareRenderer)
def _software_renderer(r: v.SoftwareRenderer, s: Say) -> str:
    return "CPU 上のソフトウェアレンダラーで、GPU ではありません"


@says(v.NoMatch)
def _no_match(r: v.NoMatch, s: Say) -> str:
    more = "（照合する GPU の一覧がありません）" if r.no_gpus else ""
    return f"PCI アドレスがなく、UUID もどの GPU とも一致しません{more}"


@says(v.SecondDriver)
def _second_driver(r: v.SecondDriver, s: Say) -> str:
    return (
        f"Vulkan デバイス {r.first_index}（{r.first_driver}）と同じ GPU です: 2 つ目のドライバー {r.driver}"
    )
