"""Reasons in words and fixes for the failures people really meet with torch on CUDA and ROCm.

``explain`` maps an error text (a traceback, a warning, a runtime's last words) to a Diagnosis; the
texts it knows are quoted in full in ``tests/scheduler/pyenvs/test_doctor_messages.py``.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from gputray.scheduler.pyenvs.registry import PythonEnv

CU128_INSTALL = "pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu128"
ROCM_INSTALL_HINT = "a ROCm build of torch (index URL on https://pytorch.org/get-started/locally/)"


@dataclass(frozen=True)
class Diagnosis:
    reason: str
    fix: str | None = None


def shell_path(path: Path | str) -> str:
    """A path as a fix's command line needs it to paste into a shell: quoted where it has spaces or
    other special characters (``'/tmp/plain env/bin/python'``; on Windows ``"C:\\My venv\\python.exe"``)."""
    text = str(path)
    if sys.platform == "win32":
        return f'"{text}"' if " " in text else text
    return shlex.quote(text)


_GFX_OVERRIDES = {"gfx110": "11.0.0", "gfx103": "10.3.0", "gfx90": "9.0.0"}


def _override_for(arch: str | None) -> str | None:
    if not arch:
        return None
    base = arch.split(":")[0]
    return next((v for prefix, v in _GFX_OVERRIDES.items() if base.startswith(prefix)), None)


def _hip_no_kernels(arch: str | None, env: PythonEnv | None, what: str) -> Diagnosis:
    arch_text = (arch or "this GPU").split(":")[0]
    current = (env.extra_env.get("HSA_OVERRIDE_GFX_VERSION") if env else None) or None
    if current:
        return Diagnosis(
            f"{what}: this ROCm build of torch has no kernels for {arch_text}, "
            f"even with HSA_OVERRIDE_GFX_VERSION={current}",
            f"install a ROCm build of torch whose arch list has {arch_text}, or try another override value",
        )
    override = _override_for(arch) or ("11.0.0" if arch is None else None)
    if override is None:
        return Diagnosis(
            f"{what}: this ROCm build of torch has no kernels for {arch_text}",
            f"install {ROCM_INSTALL_HINT} that supports {arch_text}",
        )
    where = "gputray envs add PYTHON"
    if env:
        where = f"gputray envs add {shell_path(env.python)} --name {env.name}-override"
    return Diagnosis(
        f"{what}: this ROCm build of torch has no kernels for {arch_text}",
        f"try HSA_OVERRIDE_GFX_VERSION={override} for this env only: "
        f"{where} --env HSA_OVERRIDE_GFX_VERSION={override}",
    )


def _cuda_no_kernels(sm: str | None, env: PythonEnv | None) -> Diagnosis:
    python = shell_path(env.python) if env else "python"
    target = f"sm_{sm}" if sm else "this GPU"
    hint = " (RTX 50-series / Blackwell needs CUDA 12.8+)" if sm in (None, "120", "100", "101") else ""
    return Diagnosis(
        f"this torch build has no kernels for {target}{hint}",
        f"install a cu128+ wheel in this env: {python} -m {CU128_INSTALL}",
    )


def explain(
    text: str,
    *,
    vendor: str = "other",
    arch: str | None = None,
    env: PythonEnv | None = None,
    cuda_version: str | None = None,
) -> Diagnosis | None:
    """The reason in words and the fix, for an error text from torch, CUDA or ROCm; None if unknown."""
    python = shell_path(env.python) if env else "python"
    m = re.search(r"sm_(\d+) is not compatible with the current PyTorch installation", text)
    if m:
        return _cuda_no_kernels(m.group(1), env)
    if "no kernel image is available for execution on the device" in text:
        sm = arch.replace(".", "") if arch and re.fullmatch(r"\d+\.\d+", arch) else None
        return _cuda_no_kernels(sm, env)
    if "HSA_STATUS_ERROR_INVALID_ISA" in text:
        current = env.extra_env.get("HSA_OVERRIDE_GFX_VERSION") if env else None
        if current:
            return Diagnosis(
                f"the ROCm runtime rejected the GPU code (invalid ISA) with "
                f"HSA_OVERRIDE_GFX_VERSION={current}: that value does not fit this GPU",
                "use HSA_OVERRIDE_GFX_VERSION=11.0.0 for a gfx1103 (Radeon 780M), or remove the override",
            )
        return _hip_no_kernels(arch, env, "the ROCm runtime rejected the GPU code (invalid ISA)")
    if "invalid device function" in text and ("HIP" in text or vendor == "amd"):
        return _hip_no_kernels(arch, env, "HIP error: invalid device function")
    m = re.search(r"Cannot read \S*TensileLibrary\S*.*?for GPU arch\s*:\s*(gfx\w+)", text)
    if m or "hipErrorNoBinaryForGpu" in text or "Unable to find code object for all current devices" in text:
        return _hip_no_kernels(
            m.group(1) if m else arch, env, "no GPU code for this GPU in the ROCm libraries"
        )
    if "The NVIDIA driver on your system is too old" in text:
        found = re.search(r"found version (\d+)", text)
        found_text = ""
        if found:
            n = int(found.group(1))
            found_text = f" (it supports CUDA {n // 1000}.{n % 1000 // 10})"
        wheel = f" CUDA {cuda_version}" if cuda_version else ""
        return Diagnosis(
            f"the NVIDIA driver is too old for this torch build{wheel}{found_text}",
            "update the NVIDIA driver (570 or newer for CUDA 12.8 and RTX 50-series), "
            "or use a torch build for an older CUDA on older GPUs",
        )
    if "Found no NVIDIA driver on your system" in text:
        return Diagnosis("no NVIDIA driver is loaded", "install the NVIDIA driver (570+ for RTX 50-series)")
    if "Torch not compiled with CUDA enabled" in text:
        if vendor == "amd":
            return Diagnosis(
                "this env has a CPU-only build of torch", f"install {ROCM_INSTALL_HINT} in this env"
            )
        return Diagnosis("this env has a CPU-only build of torch", f"{python} -m {CU128_INSTALL}")
    if re.search(r"No module named '?torch'?(?!\.)", text):
        return Diagnosis(
            "torch is not installed in this env",
            f"{python} -m pip install torch (a cu128 build for NVIDIA, a ROCm build for AMD)",
        )
    if re.search(r"(CUDA|HIP) out of memory|OutOfMemoryError", text):
        return Diagnosis(
            "the GPU ran out of memory during the test",
            "close what holds the GPU memory, then run gputray doctor --refresh",
        )
    if "wrong results for" in text:
        current = env.extra_env.get("HSA_OVERRIDE_GFX_VERSION") if env else None
        return Diagnosis(
            "the device computed wrong results",
            f"remove HSA_OVERRIDE_GFX_VERSION={current} from this env" if current else None,
        )
    m = re.search(r"(lib\S+\.so[.\d]*): cannot open shared object file", text)
    if m:
        return Diagnosis(
            f"torch in this env is broken: {m.group(1)} is missing",
            f"reinstall torch: {python} -m pip install --force-reinstall torch",
        )
    return None


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    # A traceback's last line says what happened; a plain message's first line does.
    if lines and lines[0].startswith("Traceback"):
        return lines[-1][:300]
    return lines[0][:300] if lines else "unknown error"


def diagnose(
    text: str,
    *,
    vendor: str = "other",
    arch: str | None = None,
    env: PythonEnv | None = None,
    cuda_version: str | None = None,
) -> Diagnosis:
    """``explain`` or else the error's own words."""
    found = explain(text, vendor=vendor, arch=arch, env=env, cuda_version=cuda_version)
    return found or Diagnosis(_first_line(text))
