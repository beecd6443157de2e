"""Japanese words for what a monitor backend says about a device it cannot read, or reads only in part
(``Sample.reason``: the ``busy_why`` codes of ``SampleWhy``), and about itself (``BackendNote``). A
library's or the OS's own error text inside them is shown as written (``Say.text``); library names
(NVML, amdsmi, PDH) stay as they are. Inside a task's reason they read in the past once the task has
ended, and they bracket nothing (a task's reason may put them in brackets of its own)."""

from __future__ import annotations

from gputray.monitor import busy_why as b
from gputray.scheduler.reasons.ja.common import JA
from gputray.scheduler.reasons.say import Say

says = JA.says

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
