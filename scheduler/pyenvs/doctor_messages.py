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
from typing import Literal

from gputray.scheduler.pyenvs.registry import PythonEnv
from gputray.scheduler.reasons import doctor_codes as d
from gputray.scheduler.reasons.doctor_codes import Finding, Fix
from gputray.scheduler.reasons.render import render


@dataclass(frozen=True)
class Diagnosis:
    """What the doctor found (a code with its facts) and the fix, when one is known; ``reason`` and
    ``fix`` are their English words (``gputray doctor``'s, the logs')."""

    finding: Finding
    remedy: Fix | None = None

    @property
    def reason(self) -> str:
        return render(self.finding)

    @property
    def fix(self) -> str | None:
        return render(self.remedy) if self.remedy is not None else None


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


RocmSeen = Literal["invalid_isa", "invalid_device_function", "no_code_object"]


def _hip_no_kernels(arch: str | None, env: PythonEnv | None, seen: RocmSeen) -> Diagnosis:
    arch_name = arch.split(":")[0] if arch else None
    current = (env.extra_env.get("HSA_OVERRIDE_GFX_VERSION") if env else None) or None
    if current:
        return Diagnosis(
            d.NoKernelsRocm(seen=seen, arch=arch_name, override=current),
            d.RocmWithArch(arch=arch_name),
        )
    override = _override_for(arch) or ("11.0.0" if arch is None else None)
    if override is None:
        return Diagnosis(d.NoKernelsRocm(seen=seen, arch=arch_name), d.InstallRocm(arch=arch_name))
    where = "gputray envs add PYTHON"
    if env:
        where = f"gputray envs add {shell_path(env.python)} --name {env.name}-override"
    return Diagnosis(
        d.NoKernelsRocm(seen=seen, arch=arch_name),
        d.TryOverride(value=override, command=f"{where} --env HSA_OVERRIDE_GFX_VERSION={override}"),
    )


def _cuda_no_kernels(sm: str | None, env: PythonEnv | None) -> Diagnosis:
    python = shell_path(env.python) if env else "python"
    return Diagnosis(
        d.NoKernelsCuda(sm=sm, blackwell=sm in (None, "120", "100", "101")), d.InstallCu128(python=python)
    )


def explain(
    text: str,
    *,
    vendor: str = "other",
    arch: str | None = None,
    env: PythonEnv | None = None,
    cuda_version: str | None = None,
) -> Diagnosis | None:
    """What an error text from torch, CUDA or ROCm says, and the fix; None if unknown."""
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
            return Diagnosis(d.OverrideMisfits(value=current), d.UseGfx1103Override())
        return _hip_no_kernels(arch, env, "invalid_isa")
    if "invalid device function" in text and ("HIP" in text or vendor == "amd"):
        return _hip_no_kernels(arch, env, "invalid_device_function")
    m = re.search(r"Cannot read \S*TensileLibrary\S*.*?for GPU arch\s*:\s*(gfx\w+)", text)
    if m or "hipErrorNoBinaryForGpu" in text or "Unable to find code object for all current devices" in text:
        return _hip_no_kernels(m.group(1) if m else arch, env, "no_code_object")
    if "The NVIDIA driver on your system is too old" in text:
        found = re.search(r"found version (\d+)", text)
        supported = None
        if found:
            n = int(found.group(1))
            supported = f"{n // 1000}.{n % 1000 // 10}"
        return Diagnosis(d.DriverTooOld(cuda=cuda_version or None, supported=supported), d.UpdateDriver())
    if "Found no NVIDIA driver on your system" in text:
        return Diagnosis(d.NoNvidiaDriver(), d.InstallDriver())
    if "Torch not compiled with CUDA enabled" in text:
        if vendor == "amd":
            return Diagnosis(d.CpuOnlyTorch(), d.InstallRocm())
        return Diagnosis(d.CpuOnlyTorch(), d.InstallCu128(python=python, say_why=False))
    if re.search(r"No module named '?torch'?(?!\.)", text):
        return Diagnosis(d.NoTorch(), d.InstallTorch(python=python))
    if re.search(r"(CUDA|HIP) out of memory|OutOfMemoryError", text):
        return Diagnosis(d.OutOfMemoryInProbe(), d.FreeGpuMemory())
    if "wrong results for" in text:
        current = env.extra_env.get("HSA_OVERRIDE_GFX_VERSION") if env else None
        return Diagnosis(d.WrongResults(), d.RemoveOverride(value=current) if current else None)
    m = re.search(r"(lib\S+\.so[.\d]*): cannot open shared object file", text)
    if m:
        return Diagnosis(d.TorchBroken(lib=m.group(1)), d.ReinstallTorch(python=python))
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
    return found or Diagnosis(d.ErrorLine(text=_first_line(text)))
