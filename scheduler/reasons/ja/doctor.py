"""Japanese words for the doctor's findings and fixes (``reasons/doctor_codes.py``): the tray's doctor
table and a torch task's reason when no env works on its device. Commands, variables and paths stay as
they are written (they are pasted into a shell)."""

from __future__ import annotations

from gputray.scheduler.reasons import doctor_codes as d
from gputray.scheduler.reasons.ja.common import JA, _flat
from gputray.scheduler.reasons.say import Say

says = JA.says

ROCM_BUILD = f"ROCm 版 torch（インデックス URL は {d.ROCM_INDEX_PAGE}）"


# -- findings -----------------------------------------------------------------------------------------


@says(d.Passed)
def _passed(r: d.Passed, s: Say) -> str:
    return "実際の演算とすべてのベンチ項目に成功" if r.benched else "実際の演算が動作（ベンチマークは未実施）"


@says(d.RanUnder)
def _ran_under(r: d.RanUnder, s: Say) -> str:
    return f"{r.selection} で実際の演算が動作（ベンチマークは未実施）"


@says(d.WorksBut)
def _works_but(r: d.WorksBut, s: Say) -> str:
    return f"動作しますが {'、'.join(r.failed)} は失敗：{s(r.why)}"


@says(d.BasicOpFailed)
def _basic_op(r: d.BasicOpFailed, s: Say) -> str:
    return "基本演算が動きませんでした"


@says(d.OtherVendorBuild)
def _other_vendor(r: d.OtherVendorBuild, s: Say) -> str:
    if r.build == "cuda":
        return f"この環境の torch は CUDA 版（CUDA {r.version}）です。AMD の GPU は使えません"
    return f"この環境の torch は ROCm 版（HIP {r.version}）です。NVIDIA の GPU は使えません"


@says(d.GpuNotSeen)
def _not_seen(r: d.GpuNotSeen, s: Say) -> str:
    return "この環境の torch からこの GPU が見えません"


@says(d.ProbeHung)
def _hung(r: d.ProbeHung, s: Say) -> str:
    where = "このデバイスで" if r.on_device else "デバイスに届く前に"
    return f"検査が{where}止まったため {r.after_s:.0f} 秒で中止しました"


@says(d.InterpreterGone)
def _gone(r: d.InterpreterGone, s: Say) -> str:
    return f"インタープリター {r.python} はもうありません"


@says(d.ProbeFailed)
def _probe_failed(r: d.ProbeFailed, s: Say) -> str:
    return f"検査を実行できませんでした：{r.message}"


@says(d.WhileProbing)
def _while_probing(r: d.WhileProbing, s: Say) -> str:
    return f"{s(r.why)}（{_flat(r.during)}）"


def _arch(arch: str | None) -> str:
    return arch or "この GPU"


@says(d.NoKernelsCuda)
def _no_kernels_cuda(r: d.NoKernelsCuda, s: Say) -> str:
    hint = "（RTX 50 シリーズ / Blackwell には CUDA 12.8 以上が必要）" if r.blackwell else ""
    return f"この torch には {f'sm_{r.sm}' if r.sm else 'この GPU'} 用のカーネルがありません{hint}"


_ROCM_SEEN = {
    "invalid_isa": "ROCm ランタイムが GPU コードを拒否しました、不正な ISA",
    "invalid_device_function": "HIP エラー、不正なデバイス関数",
    "no_code_object": "ROCm ライブラリにこの GPU 用のコードがありません",
}


@says(d.NoKernelsRocm)
def _no_kernels_rocm(r: d.NoKernelsRocm, s: Say) -> str:
    even = f"HSA_OVERRIDE_GFX_VERSION={r.override} でも " if r.override else ""
    return f"{_ROCM_SEEN[r.seen]}。この ROCm 版 torch には {even}{_arch(r.arch)} 用のカーネルがありません"


@says(d.OverrideMisfits)
def _override_misfits(r: d.OverrideMisfits, s: Say) -> str:
    return (
        f"HSA_OVERRIDE_GFX_VERSION={r.value} で ROCm ランタイムが GPU コードを拒否しました（不正な ISA）。"
        "この値はこの GPU に合いません"
    )


@says(d.DriverTooOld)
def _driver_too_old(r: d.DriverTooOld, s: Say) -> str:
    wheel = f"この torch（CUDA {r.cuda}）" if r.cuda else "この torch"
    found = f"（対応は CUDA {r.supported} まで）" if r.supported else ""
    return f"NVIDIA ドライバーが{wheel}には古すぎます{found}"


@says(d.NoNvidiaDriver)
def _no_driver(r: d.NoNvidiaDriver, s: Say) -> str:
    return "NVIDIA ドライバーが読み込まれていません"


@says(d.CpuOnlyTorch)
def _cpu_only(r: d.CpuOnlyTorch, s: Say) -> str:
    return "この環境の torch は CPU 専用版です"


@says(d.NoTorch)
def _no_torch(r: d.NoTorch, s: Say) -> str:
    return "この環境には torch が入っていません"


@says(d.OutOfMemoryInProbe)
def _oom(r: d.OutOfMemoryInProbe, s: Say) -> str:
    return "検査中に GPU のメモリーが足りなくなりました"


@says(d.WrongResults)
def _wrong_results(r: d.WrongResults, s: Say) -> str:
    return "デバイスの計算結果が間違っていました"


@says(d.TorchBroken)
def _broken(r: d.TorchBroken, s: Say) -> str:
    return f"この環境の torch は壊れています。{r.lib} がありません"


@says(d.ErrorLine)
def _error_line(r: d.ErrorLine, s: Say) -> str:
    return r.text  # torch's own words, as written


@says(d.WrongDevice)
def _wrong_device(r: d.WrongDevice, s: Say) -> str:
    return f"別のデバイスです：{r.selection} では {r.sight}"


@says(d.KernelFailsUnder)
def _kernel_fails(r: d.KernelFailsUnder, s: Say) -> str:
    return f"{r.selection} ではカーネルが失敗します：{r.error}"


@says(d.CheckRaised)
def _check_raised(r: d.CheckRaised, s: Say) -> str:
    return f"確認を実行できませんでした（{_flat(r.error)}）"


@says(d.Written)
def _written(r: d.Written, s: Say) -> str:
    return r.text  # an earlier gputray's words, as written


# -- fixes --------------------------------------------------------------------------------------------


@says(d.InstallCu128)
def _install_cu128(r: d.InstallCu128, s: Say) -> str:
    command = f"{r.python} -m {d.CU128_INSTALL}"
    return f"この環境に cu128 以上の wheel を入れてください：{command}" if r.say_why else command


@says(d.UseCu128Env)
def _use_cu128(r: d.UseCu128Env, s: Say) -> str:
    return f"この GPU には cu128 以上の CUDA 版を入れた環境を使ってください：{d.CU128_INSTALL}"


@says(d.UseRocmEnv)
def _use_rocm(r: d.UseRocmEnv, s: Say) -> str:
    return f"この GPU には {ROCM_BUILD} を入れた環境を使ってください"


@says(d.InstallRocm)
def _install_rocm(r: d.InstallRocm, s: Say) -> str:
    if r.arch is None:
        return f"この環境に {ROCM_BUILD} を入れてください"
    return f"{r.arch} に対応した {ROCM_BUILD} を入れてください"


@says(d.RocmWithArch)
def _rocm_with_arch(r: d.RocmWithArch, s: Say) -> str:
    return f"{_arch(r.arch)} を対象に含む ROCm 版 torch を入れるか、別の上書き値を試してください"


@says(d.TryOverride)
def _try_override(r: d.TryOverride, s: Say) -> str:
    return f"この環境だけに HSA_OVERRIDE_GFX_VERSION={r.value} を試してください：{r.command}"


@says(d.UseGfx1103Override)
def _gfx1103(r: d.UseGfx1103Override, s: Say) -> str:
    return "gfx1103（Radeon 780M）には HSA_OVERRIDE_GFX_VERSION=11.0.0 を使うか、上書きを外してください"


@says(d.CheckVisibleDevices)
def _visible(r: d.CheckVisibleDevices, s: Say) -> str:
    return (
        "この環境の設定の CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES を"
        "確認してください"
    )


@says(d.ChangeOverride)
def _change_override(r: d.ChangeOverride, s: Say) -> str:
    return f"この環境の HSA_OVERRIDE_GFX_VERSION={r.value} を外すか変えてください"


@says(d.RemoveOverride)
def _remove_override(r: d.RemoveOverride, s: Say) -> str:
    return f"この環境から HSA_OVERRIDE_GFX_VERSION={r.value} を外してください"


@says(d.RefreshWhenIdle)
def _refresh(r: d.RefreshWhenIdle, s: Say) -> str:
    return (
        "GPU が空いてから gputray doctor --refresh を実行するか、--timeout で時間を延ばしてください"
        "（初回の CUDA 実行はカーネルのコンパイルに数分かかることがあります）"
    )


@says(d.ReAddEnv)
def _re_add(r: d.ReAddEnv, s: Say) -> str:
    what = "本物の Python" if r.real_python else "正しいパス"
    return f"gputray envs remove {r.name} の後、{what}を追加してください"


@says(d.CheckInterpreter)
def _check_interpreter(r: d.CheckInterpreter, s: Say) -> str:
    return f"{r.python} が Python インタープリターか確認してください"


@says(d.UpdateDriver)
def _update_driver(r: d.UpdateDriver, s: Say) -> str:
    return (
        "NVIDIA ドライバーを更新するか（CUDA 12.8 と RTX 50 シリーズには 570 以降）、"
        "古い GPU では古い CUDA 向けの torch を使ってください"
    )


@says(d.InstallDriver)
def _install_driver(r: d.InstallDriver, s: Say) -> str:
    return "NVIDIA ドライバーを入れてください（RTX 50 シリーズには 570 以降）"


@says(d.InstallTorch)
def _install_torch(r: d.InstallTorch, s: Say) -> str:
    return f"{r.python} -m pip install torch（NVIDIA には cu128 版、AMD には ROCm 版）"


@says(d.FreeGpuMemory)
def _free_memory(r: d.FreeGpuMemory, s: Say) -> str:
    return "GPU メモリーを使っているものを閉じてから gputray doctor --refresh を実行してください"


@says(d.ReinstallTorch)
def _reinstall(r: d.ReinstallTorch, s: Say) -> str:
    return f"torch を入れ直してください：{r.python} -m pip install --force-reinstall torch"


@says(d.NoSelectionLands)
def _no_selection(r: d.NoSelectionLands, s: Say) -> str:
    tried = "、".join(_flat(t) for t in r.tried)
    return (
        f"この環境では gputray の知るどの選び方でもこの GPU に届きません（試したもの：{tried}）。"
        "この GPU を選べる torch の環境を使ってください"
    )


# -- a doctor run's progress --------------------------------------------------------------------------

_MARK = {"works": "✅", "limited": "⚠", "fails": "❌"}
_VERDICT = {"works": "動作", "limited": "制限あり", "fails": "失敗"}


@says(d.ProbingEnv)
def _probing(r: d.ProbingEnv, s: Say) -> str:
    return f"{r.env}: {r.python} を検査中（torch を読み込んでから各デバイス）…"


@says(d.PairProbed)
def _pair_probed(r: d.PairProbed, s: Say) -> str:
    notes = [f"{r.took_s:.1f} 秒" if r.took_s else "", "キャッシュ" if r.cached else ""]
    note = "、".join(n for n in notes if n)
    text = f"{r.env} × {r.device}: {_MARK[r.verdict]} {_VERDICT[r.verdict]}" + (f"（{note}）" if note else "")
    if r.verdict == "fails" and r.why is not None:
        return f"{text} — {s(r.why)}"
    return f"{text} — {'、'.join(r.figures)}" if r.figures else text


@says(d.PairSelected)
def _pair_selected(r: d.PairSelected, s: Say) -> str:
    return f"{r.env} × {r.device}: 選び方 {r.selected_by}"
