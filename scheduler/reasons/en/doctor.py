"""English words for the doctor's findings and fixes (``reasons/doctor_codes.py``): the ``gputray doctor``
table, its ``--json`` text and a torch task's reason when no env works on its device."""

from __future__ import annotations

from gputray.scheduler.reasons import doctor_codes as d
from gputray.scheduler.reasons.en.common import EN, _aside
from gputray.scheduler.reasons.say import Say

says = EN.says

ROCM_BUILD = f"a ROCm build of torch (index URL on {d.ROCM_INDEX_PAGE})"


# -- findings -----------------------------------------------------------------------------------------


@says(d.Passed)
def _passed(r: d.Passed, s: Say) -> str:
    return "a real op and every bench item passed" if r.benched else "a real op ran (not benchmarked)"


@says(d.RanUnder)
def _ran_under(r: d.RanUnder, s: Say) -> str:
    return f"a real op ran under {r.selection} (not benchmarked)"


@says(d.WorksBut)
def _works_but(r: d.WorksBut, s: Say) -> str:
    return f"works, but {', '.join(r.failed)} failed: {s(r.why)}"


@says(d.BasicOpFailed)
def _basic_op(r: d.BasicOpFailed, s: Say) -> str:
    return "the basic op did not run"


@says(d.OtherVendorBuild)
def _other_vendor(r: d.OtherVendorBuild, s: Say) -> str:
    if r.build == "cuda":
        return f"this env has a CUDA build of torch (CUDA {r.version}); it cannot use AMD GPUs"
    return f"this env has a ROCm build of torch (HIP {r.version}); it cannot use NVIDIA GPUs"


@says(d.GpuNotSeen)
def _not_seen(r: d.GpuNotSeen, s: Say) -> str:
    return "torch in this env does not see this GPU"


@says(d.ProbeHung)
def _hung(r: d.ProbeHung, s: Say) -> str:
    where = "on this device" if r.on_device else "before it reached any device"
    return f"the probe hung {where} and was stopped after {r.after_s:.0f} s"


@says(d.InterpreterGone)
def _gone(r: d.InterpreterGone, s: Say) -> str:
    return f"the interpreter {r.python} does not exist any more"


@says(d.ProbeFailed)
def _probe_failed(r: d.ProbeFailed, s: Say) -> str:
    return r.message


@says(d.WhileProbing)
def _while_probing(r: d.WhileProbing, s: Say) -> str:
    return f"{s(r.why)}{_aside(r.during)}"


def _arch(arch: str | None) -> str:
    return arch or "this GPU"


@says(d.NoKernelsCuda)
def _no_kernels_cuda(r: d.NoKernelsCuda, s: Say) -> str:
    hint = " (RTX 50-series / Blackwell needs CUDA 12.8+)" if r.blackwell else ""
    return f"this torch build has no kernels for {f'sm_{r.sm}' if r.sm else 'this GPU'}{hint}"


_ROCM_SEEN = {
    "invalid_isa": "the ROCm runtime rejected the GPU code (invalid ISA)",
    "invalid_device_function": "HIP error: invalid device function",
    "no_code_object": "no GPU code for this GPU in the ROCm libraries",
}


@says(d.NoKernelsRocm)
def _no_kernels_rocm(r: d.NoKernelsRocm, s: Say) -> str:
    even = f", even with HSA_OVERRIDE_GFX_VERSION={r.override}" if r.override else ""
    return f"{_ROCM_SEEN[r.seen]}: this ROCm build of torch has no kernels for {_arch(r.arch)}{even}"


@says(d.OverrideMisfits)
def _override_misfits(r: d.OverrideMisfits, s: Say) -> str:
    return (
        f"the ROCm runtime rejected the GPU code (invalid ISA) with HSA_OVERRIDE_GFX_VERSION={r.value}: "
        "that value does not fit this GPU"
    )


@says(d.DriverTooOld)
def _driver_too_old(r: d.DriverTooOld, s: Say) -> str:
    wheel = f" CUDA {r.cuda}" if r.cuda else ""
    found = f" (it supports CUDA {r.supported})" if r.supported else ""
    return f"the NVIDIA driver is too old for this torch build{wheel}{found}"


@says(d.NoNvidiaDriver)
def _no_driver(r: d.NoNvidiaDriver, s: Say) -> str:
    return "no NVIDIA driver is loaded"


@says(d.CpuOnlyTorch)
def _cpu_only(r: d.CpuOnlyTorch, s: Say) -> str:
    return "this env has a CPU-only build of torch"


@says(d.NoTorch)
def _no_torch(r: d.NoTorch, s: Say) -> str:
    return "torch is not installed in this env"


@says(d.OutOfMemoryInProbe)
def _oom(r: d.OutOfMemoryInProbe, s: Say) -> str:
    return "the GPU ran out of memory during the test"


@says(d.WrongResults)
def _wrong_results(r: d.WrongResults, s: Say) -> str:
    return "the device computed wrong results"


@says(d.TorchBroken)
def _broken(r: d.TorchBroken, s: Say) -> str:
    return f"torch in this env is broken: {r.lib} is missing"


@says(d.ErrorLine)
def _error_line(r: d.ErrorLine, s: Say) -> str:
    return r.text  # torch's own words, as written


@says(d.WrongDevice)
def _wrong_device(r: d.WrongDevice, s: Say) -> str:
    return f"wrong device: with {r.selection} {r.sight}"


@says(d.KernelFailsUnder)
def _kernel_fails(r: d.KernelFailsUnder, s: Say) -> str:
    return f"its kernel fails under {r.selection}: {r.error}"


@says(d.CheckRaised)
def _check_raised(r: d.CheckRaised, s: Say) -> str:
    return f"the check could not run{_aside(r.error)}"


@says(d.Written)
def _written(r: d.Written, s: Say) -> str:
    return r.text  # an earlier gputray's words, as written


# -- fixes --------------------------------------------------------------------------------------------


@says(d.InstallCu128)
def _install_cu128(r: d.InstallCu128, s: Say) -> str:
    command = f"{r.python} -m {d.CU128_INSTALL}"
    return f"install a cu128+ wheel in this env: {command}" if r.say_why else command


@says(d.UseCu128Env)
def _use_cu128(r: d.UseCu128Env, s: Say) -> str:
    return f"use an env with a cu128+ CUDA build for this GPU: {d.CU128_INSTALL}"


@says(d.UseRocmEnv)
def _use_rocm(r: d.UseRocmEnv, s: Say) -> str:
    return f"use an env with {ROCM_BUILD} for this GPU"


@says(d.InstallRocm)
def _install_rocm(r: d.InstallRocm, s: Say) -> str:
    if r.arch is None:
        return f"install {ROCM_BUILD} in this env"
    return f"install {ROCM_BUILD} that supports {r.arch}"


@says(d.RocmWithArch)
def _rocm_with_arch(r: d.RocmWithArch, s: Say) -> str:
    return f"install a ROCm build of torch whose arch list has {_arch(r.arch)}, or try another override value"


@says(d.TryOverride)
def _try_override(r: d.TryOverride, s: Say) -> str:
    return f"try HSA_OVERRIDE_GFX_VERSION={r.value} for this env only: {r.command}"


@says(d.UseGfx1103Override)
def _gfx1103(r: d.UseGfx1103Override, s: Say) -> str:
    return "use HSA_OVERRIDE_GFX_VERSION=11.0.0 for a gfx1103 (Radeon 780M), or remove the override"


@says(d.CheckVisibleDevices)
def _visible(r: d.CheckVisibleDevices, s: Say) -> str:
    return "check CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES in this env's settings"


@says(d.ChangeOverride)
def _change_override(r: d.ChangeOverride, s: Say) -> str:
    return f"remove or change HSA_OVERRIDE_GFX_VERSION={r.value} for this env"


@says(d.RemoveOverride)
def _remove_override(r: d.RemoveOverride, s: Say) -> str:
    return f"remove HSA_OVERRIDE_GFX_VERSION={r.value} from this env"


@says(d.RefreshWhenIdle)
def _refresh(r: d.RefreshWhenIdle, s: Say) -> str:
    return (
        "run gputray doctor --refresh once the GPU is idle, or allow more time with --timeout "
        "(a first CUDA run can spend minutes compiling kernels)"
    )


@says(d.ReAddEnv)
def _re_add(r: d.ReAddEnv, s: Say) -> str:
    return f"gputray envs remove {r.name}, then add {'a real Python' if r.real_python else 'the right path'}"


@says(d.CheckInterpreter)
def _check_interpreter(r: d.CheckInterpreter, s: Say) -> str:
    return f"check that {r.python} is a Python interpreter"


@says(d.UpdateDriver)
def _update_driver(r: d.UpdateDriver, s: Say) -> str:
    return (
        "update the NVIDIA driver (570 or newer for CUDA 12.8 and RTX 50-series), "
        "or use a torch build for an older CUDA on older GPUs"
    )


@says(d.InstallDriver)
def _install_driver(r: d.InstallDriver, s: Say) -> str:
    return "install the NVIDIA driver (570+ for RTX 50-series)"


@says(d.InstallTorch)
def _install_torch(r: d.InstallTorch, s: Say) -> str:
    return f"{r.python} -m pip install torch (a cu128 build for NVIDIA, a ROCm build for AMD)"


@says(d.FreeGpuMemory)
def _free_memory(r: d.FreeGpuMemory, s: Say) -> str:
    return "close what holds the GPU memory, then run gputray doctor --refresh"


@says(d.ReinstallTorch)
def _reinstall(r: d.ReinstallTorch, s: Say) -> str:
    return f"reinstall torch: {r.python} -m pip install --force-reinstall torch"


@says(d.NoSelectionLands)
def _no_selection(r: d.NoSelectionLands, s: Say) -> str:
    return (
        f"no selection gputray knows lands on this GPU in this env{_aside('; '.join(r.tried), 'tried: ')}; "
        "use an env whose torch build can select it"
    )


# -- a doctor run's progress --------------------------------------------------------------------------

_MARK = {"works": "✅", "limited": "⚠", "fails": "❌"}


@says(d.ProbingEnv)
def _probing(r: d.ProbingEnv, s: Say) -> str:
    return f"{r.env}: probing {r.python} (importing torch, then each device)…"


@says(d.PairProbed)
def _pair_probed(r: d.PairProbed, s: Say) -> str:
    took = f" in {r.took_s:.1f} s" if r.took_s else ""
    cached = " (cached)" if r.cached else ""
    text = f"{r.env} × {r.device}: {_MARK[r.verdict]} {r.verdict}{took}{cached}"
    if r.verdict == "fails" and r.why is not None:
        return f"{text} — {s(r.why)}"
    return f"{text} — {', '.join(r.figures)}" if r.figures else text


@says(d.PairSelected)
def _pair_selected(r: d.PairSelected, s: Say) -> str:
    return f"{r.env} × {r.device}: selected by {r.selected_by}"
