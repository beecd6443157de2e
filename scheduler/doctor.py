"""The GPU doctor: which Python environment works on which device, proven by a real kernel.

For each configured environment the probe runs once (``probe_runner``), and each device it reports,
plus each GPU the monitor knows that torch did not see, becomes a PairResult: works / works with
limits / fails, with the reason in words and the fix when one is known (``doctor_messages``).

Results are cached in ``app_paths().cache_dir / "doctor.json"`` per (interpreter path and mtime,
torch version and its files' mtime, driver version, device key, extra env); the scheduler reads the
cache through ``env_for_device`` and ``cached_results`` and never probes.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from gputray.monitor.records import DeviceInfo
from gputray.monitor.sysfs import pci_key, read_str
from gputray.scheduler.config import ConfigError
from gputray.scheduler.doctor_messages import (
    CU128_INSTALL,
    ROCM_INSTALL_HINT,
    Diagnosis,
    diagnose,
    explain,
)
from gputray.scheduler.envs import EnvError, PythonEnv, load_envs
from gputray.scheduler.paths import app_paths
from gputray.scheduler.probe_runner import (
    DEFAULT_TIMEOUT_S,
    VERSION_TIMEOUT_S,
    ProbeResult,
    probe_env,
    python_version_info,
)

Verdict = Literal["works", "limited", "fails"]
CACHE_FORMAT = 1

# Bench items the probe measures, in table order, with a short column title.
CAPABILITIES: tuple[tuple[str, str], ...] = (
    ("conv2d_fp32", "conv2d fp32"),
    ("matmul_fp32", "matmul fp32"),
    ("matmul_fp16", "matmul fp16"),
    ("matmul_bf16", "matmul bf16"),
    ("sdpa", "attention"),
    ("bandwidth", "bandwidth"),
)
# A job's declared needs → the bench items that must have passed.
NEEDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "fp32": ("matmul_fp32",),
        "conv2d": ("conv2d_fp32",),
        "matmul": ("matmul_fp32",),
        "fp16": ("matmul_fp16",),
        "half": ("matmul_fp16",),
        "bf16": ("matmul_bf16",),
        "sdpa": ("sdpa",),
        "attention": ("sdpa",),
        **{name: (name,) for name, _ in CAPABILITIES},
    }
)


@dataclass(frozen=True)
class Capability:
    name: str
    ok: bool
    value: float | None
    unit: str
    error: str | None = None
    detail: str | None = None

    def figure(self) -> str:
        if not self.ok:
            return "fails"
        if self.value is None:
            return "ok"
        return f"{self.value:,.1f} {self.unit}"


@dataclass(frozen=True)
class PairResult:
    """One environment on one device."""

    env_name: str
    python: str
    device_key: str
    device_name: str
    vendor: str
    verdict: Verdict
    reason: str
    fix: str | None = None
    torch_device: str | None = None
    torch_version: str | None = None
    cuda_version: str | None = None
    hip_version: str | None = None
    arch: str | None = None
    capabilities: tuple[Capability, ...] = ()
    error: str | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict, hash=False)
    probed_at_s: float = 0.0
    probe_seconds: float | None = None
    bench: bool = False
    from_cache: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra_env", MappingProxyType(dict(sorted(dict(self.extra_env).items()))))
        object.__setattr__(self, "capabilities", tuple(self.capabilities))

    @property
    def works(self) -> bool:
        return self.verdict != "fails"

    def capability(self, name: str) -> Capability | None:
        return next((c for c in self.capabilities if c.name == name), None)

    def passes(self, need: str) -> bool:
        """True when the pair works and every bench item behind ``need`` (``fp16``, ``sdpa``...) passed."""
        names = NEEDS.get(need.strip().lower())
        if names is None or not self.works:
            return False
        caps = [self.capability(n) for n in names]
        return all(c is not None and c.ok for c in caps)

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["extra_env"] = dict(self.extra_env)
        data["capabilities"] = [asdict(c) for c in self.capabilities]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PairResult:
        values = dict(data)
        values["capabilities"] = tuple(Capability(**c) for c in values.get("capabilities", ()))
        return cls(**values)


# ---------------------------------------------------------------------------------------------------
# Devices: torch's view mapped to the monitor's keys.


def _hex_only(text: str | None) -> str:
    if not text:
        return ""
    text = text.strip().lower()
    for prefix in ("gpu-", "mig-"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return re.sub(r"[^0-9a-f]", "", text)


def device_key_for(device: Mapping[str, Any], known: Sequence[DeviceInfo]) -> str:
    """The monitor key for a device from the probe: by UUID, else by PCI ids, else ``torch:cuda:N``."""
    if device.get("kind") == "cpu":
        return "cpu"
    uuid = _hex_only(device.get("uuid"))
    if uuid and any(c != "0" for c in uuid):
        for info in known:
            if info.uuid and _hex_only(info.uuid) == uuid:
                return info.key
    bus, dev, domain = device.get("pci_bus_id"), device.get("pci_device_id"), device.get("pci_domain_id")
    if isinstance(bus, int) and isinstance(dev, int) and (bus or dev):
        return pci_key(f"{int(domain or 0):04x}:{bus:02x}:{dev:02x}.0")
    return f"torch:{device.get('torch_device', '?')}"


def match_device_keys(devices: Sequence[Mapping[str, Any]], gpus: Sequence[DeviceInfo]) -> list[str]:
    """``device_key_for`` each device; when torch gave neither a known UUID nor a known PCI address,
    the one such device of a vendor takes the one GPU of that vendor the monitor has left over."""
    keys = [device_key_for(d, gpus) for d in devices]
    known_keys = {g.key for g in gpus}
    for kind, vendor in (("cuda", "nvidia"), ("hip", "amd")):
        loose = [n for n, d in enumerate(devices) if d.get("kind") == kind and keys[n] not in known_keys]
        free = [g for g in gpus if g.vendor == vendor and g.key not in keys]
        if len(loose) == 1 and len(free) == 1:
            keys[loose[0]] = free[0].key
    return keys


def driver_versions() -> dict[str, str]:
    """Kernel driver versions that decide whether a cached result still holds, per vendor."""
    out: dict[str, str] = {}
    nvidia = read_str(Path("/sys/module/nvidia/version"))
    if nvidia is None:
        first = (read_str(Path("/proc/driver/nvidia/version")) or "").splitlines()
        nvidia = first[0] if first else None
    if nvidia is None and os.name == "nt":
        nvidia = _nvml_driver_version()
    if nvidia:
        out["nvidia"] = nvidia
    amd = read_str(Path("/sys/module/amdgpu/version"))
    if amd is None and Path("/sys/module/amdgpu").exists():
        amd = f"kernel {platform.release()}"
    if amd:
        out["amd"] = amd
    return out


def _nvml_driver_version() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            value = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return value.decode() if isinstance(value, bytes) else str(value)
    except Exception:
        return None


# ---------------------------------------------------------------------------------------------------
# From a probe to pair results.


def _capabilities(items: Iterable[Mapping[str, Any]]) -> tuple[Capability, ...]:
    caps = []
    for item in items:
        detail = " ".join(str(item[k]) for k in ("size", "dtype") if item.get(k) is not None) or None
        value = item.get("value")
        caps.append(
            Capability(
                name=str(item.get("name", "?")),
                ok=bool(item.get("ok")),
                value=float(value) if isinstance(value, int | float) else None,
                unit=str(item.get("unit", "")),
                error=item.get("error"),
                detail=detail,
            )
        )
    return tuple(caps)


def _vendor_of(device: Mapping[str, Any], key: str, known: Sequence[DeviceInfo]) -> str:
    info = next((i for i in known if i.key == key), None)
    if info is not None:
        return str(info.vendor)
    return {"cpu": "cpu", "cuda": "nvidia", "hip": "amd"}.get(str(device.get("kind")), "other")


def _name_of(device: Mapping[str, Any], key: str, known: Sequence[DeviceInfo]) -> str:
    info = next((i for i in known if i.key == key), None)
    if info is not None and info.name:
        return info.name
    if device.get("kind") == "cpu":
        return f"CPU ({device['name']})" if device.get("name") else "CPU"
    return str(device.get("name") or device.get("torch_device") or key)


@dataclass(frozen=True)
class _EnvFacts:
    """What the probe said about the environment as a whole."""

    torch_version: str | None
    cuda_version: str | None
    hip_version: str | None
    probed_at_s: float
    bench: bool
    warnings: tuple[str, ...] = ()  # e.g. "sm_120 is not compatible ...", issued once at CUDA init


def pair_from_device(
    env: PythonEnv,
    device: Mapping[str, Any],
    known: Sequence[DeviceInfo],
    facts: _EnvFacts,
    key: str | None = None,
) -> PairResult:
    key = key or device_key_for(device, known)
    vendor = _vendor_of(device, key, known)
    arch = device.get("gcn_arch_name") or device.get("capability")
    basic = device.get("basic_op") or {}
    caps = _capabilities(device.get("bench") or ())
    warnings_text = "\n".join(str(w) for w in [*(device.get("warnings") or ()), *facts.warnings])
    common: dict[str, Any] = {
        "env_name": env.name,
        "python": str(env.python),
        "device_key": key,
        "device_name": _name_of(device, key, known),
        "vendor": vendor,
        "torch_device": device.get("torch_device"),
        "torch_version": facts.torch_version,
        "cuda_version": facts.cuda_version,
        "hip_version": facts.hip_version,
        "arch": arch,
        "extra_env": env.extra_env,
        "probed_at_s": facts.probed_at_s,
        "probe_seconds": device.get("seconds"),
        "bench": facts.bench and bool(caps),
        "capabilities": caps,
    }
    if device.get("error") and not basic:
        basic = {"ok": False, "error": device["error"]}
    if not basic.get("ok"):
        error = str(basic.get("error") or "the basic op did not run")
        found = diagnose(
            error + "\n" + warnings_text, vendor=vendor, arch=arch, env=env, cuda_version=facts.cuda_version
        )
        return PairResult(verdict="fails", reason=found.reason, fix=found.fix, error=error, **common)
    failed = [c for c in caps if not c.ok]
    if failed:
        titles = dict(CAPABILITIES)
        names = ", ".join(titles.get(c.name, c.name) for c in failed)
        first = failed[0]
        found = diagnose(
            first.error or "", vendor=vendor, arch=arch, env=env, cuda_version=facts.cuda_version
        )
        return PairResult(
            verdict="limited",
            reason=f"works, but {names} failed: {found.reason}",
            fix=found.fix,
            error=first.error,
            **common,
        )
    reason = "a real op and every bench item passed" if caps else "a real op ran (not benchmarked)"
    return PairResult(verdict="works", reason=reason, **common)


def _unseen_pair(
    env: PythonEnv, info: DeviceInfo, data: Mapping[str, Any] | None, facts: _EnvFacts
) -> PairResult:
    """A GPU the monitor knows that this env's torch did not see (or never got to)."""
    data = data or {}
    cuda, hip = facts.cuda_version, facts.hip_version
    if cuda is None and hip is None:
        text = str(data.get("accelerator_error") or "Torch not compiled with CUDA enabled")
        found = diagnose(text, vendor=info.vendor, arch=info.gfx_target, env=env)
    elif cuda is not None and info.vendor == "amd":
        found = Diagnosis(
            f"this env has a CUDA build of torch (CUDA {cuda}); it cannot use AMD GPUs",
            f"use an env with {ROCM_INSTALL_HINT} for this GPU",
        )
    elif hip is not None and info.vendor == "nvidia":
        found = Diagnosis(
            f"this env has a ROCm build of torch (HIP {hip}); it cannot use NVIDIA GPUs",
            f"use an env with a cu128+ CUDA build for this GPU: {CU128_INSTALL}",
        )
    elif data.get("accelerator_error"):
        found = diagnose(str(data["accelerator_error"]), vendor=info.vendor, arch=info.gfx_target, env=env)
    else:
        found = Diagnosis(
            "torch in this env does not see this GPU",
            "check CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES in this env's settings",
        )
    return PairResult(
        env_name=env.name,
        python=str(env.python),
        device_key=info.key,
        device_name=info.name,
        vendor=info.vendor,
        verdict="fails",
        reason=found.reason,
        fix=found.fix,
        torch_version=facts.torch_version,
        cuda_version=cuda,
        hip_version=hip,
        arch=info.gfx_target,
        extra_env=env.extra_env,
        probed_at_s=facts.probed_at_s,
        error=data.get("accelerator_error"),
    )


def _failed_probe_pair(
    env: PythonEnv, key: str, name: str, vendor: str, result: ProbeResult, facts: _EnvFacts
) -> PairResult:
    if result.status == "timeout":
        override = env.extra_env.get("HSA_OVERRIDE_GFX_VERSION")
        stages = {p.get("stage") for p in result.progress}
        where = "on this device" if stages & {"torch", "device"} else "before it reached any device"
        found = Diagnosis(
            f"the probe hung {where} and was stopped after {result.duration_s:.0f} s",
            f"remove or change HSA_OVERRIDE_GFX_VERSION={override} for this env"
            if override
            else "run gputray doctor --refresh once the GPU is idle, or allow more time with --timeout "
            "(a first CUDA run can spend minutes compiling kernels)",
        )
    elif result.status == "missing":
        found = Diagnosis(
            f"the interpreter {env.python} does not exist any more",
            f"gputray envs remove {env.name}, then add the right path",
        )
    elif result.status == "not_runnable":
        found = Diagnosis(result.message, f"gputray envs remove {env.name}, then add a real Python")
    elif result.status == "garbage":
        found = Diagnosis(result.message, f"check that {env.python} is a Python interpreter")
    else:
        explained = explain(result.stderr_tail, vendor=vendor, env=env)
        found = (
            Diagnosis(f"{explained.reason} ({result.message.split(':')[0]})", explained.fix)
            if explained
            else Diagnosis(result.message)
        )
    error = (result.message + "\n" + result.stderr_tail).strip()
    return _failed_pair(env, key, name, vendor, found, facts, error, torch_version=facts.torch_version)


def _failed_pair(
    env: PythonEnv,
    key: str,
    name: str,
    vendor: str,
    found: Diagnosis,
    facts: _EnvFacts,
    error: str,
    *,
    torch_version: str | None,
) -> PairResult:
    """A "fails" row for a device the probe gave no report on (it crashed, hung, or torch did not import)."""
    return PairResult(
        env_name=env.name,
        python=str(env.python),
        device_key=key,
        device_name=name,
        vendor=vendor,
        verdict="fails",
        reason=found.reason,
        fix=found.fix,
        torch_version=torch_version,
        extra_env=env.extra_env,
        probed_at_s=facts.probed_at_s,
        error=error,
    )


def _real_gpus(known: Sequence[DeviceInfo]) -> list[DeviceInfo]:
    """The monitor's GPUs worth a row: not the CPU, not the demo's simulated pair."""
    return [i for i in known if i.kind != "cpu" and i.key != "cpu" and not i.simulated]


def pairs_from_probe(
    env: PythonEnv, result: ProbeResult, known: Sequence[DeviceInfo], *, now_s: float | None = None
) -> list[PairResult]:
    """Every (env, device) pair one probe run tells about: torch's devices, CPU, and the monitor's GPUs."""
    data = result.data or {}
    facts = _EnvFacts(
        torch_version=data.get("torch_version") or data.get("torch_dist_version"),
        cuda_version=data.get("cuda_version"),
        hip_version=data.get("hip_version"),
        probed_at_s=time.time() if now_s is None else now_s,
        bench=bool(data.get("bench")),
        warnings=tuple(str(w) for w in data.get("warnings") or ()),
    )
    gpus = _real_gpus(known)
    if result.status == "ok" and data.get("torch_error"):
        text = str(data.get("torch_traceback") or data["torch_error"])
        error = str(data["torch_error"])
        pairs = []
        for key, name, vendor in [("cpu", "CPU", "cpu"), *((i.key, i.name, i.vendor) for i in gpus)]:
            found = diagnose(text, vendor=vendor, env=env)
            pairs.append(_failed_pair(env, key, name, vendor, found, facts, error, torch_version=None))
        return pairs
    if result.status == "ok" and "devices" in data:
        devices = list(data["devices"])
    elif result.status == "ok":
        result = ProbeResult("garbage", "the probe's answer had no device list", result.python, data=data)
        devices = []
    else:
        # Keep what the probe finished before it hung or crashed.
        devices = [p["device"] for p in result.progress if p.get("stage") == "device" and p.get("device")]
        torch_stage = next((p for p in result.progress if p.get("stage") == "torch"), None)
        if torch_stage is not None and facts.torch_version is None:
            facts = _EnvFacts(
                str(torch_stage.get("torch_version")), None, None, facts.probed_at_s, facts.bench
            )
    devices = [d for d in devices if isinstance(d, dict)]
    keys = match_device_keys(devices, gpus)
    pairs = [pair_from_device(env, d, known, facts, k) for d, k in zip(devices, keys, strict=True)]
    seen = {p.device_key for p in pairs}
    if result.status != "ok":
        missing = [("cpu", "CPU", "cpu")] if "cpu" not in seen else []
        missing += [(i.key, i.name, str(i.vendor)) for i in gpus if i.key not in seen]
        pairs += [_failed_probe_pair(env, k, n, v, result, facts) for k, n, v in missing]
    else:
        pairs += [_unseen_pair(env, i, data, facts) for i in gpus if i.key not in seen]
    return pairs


# ---------------------------------------------------------------------------------------------------
# The cache.


def cache_file() -> Path:
    return app_paths().cache_dir / "doctor.json"


def _mtime_ns(path: Path | str | None) -> int | None:
    if not path:
        return None
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


@dataclass(frozen=True)
class EnvFingerprint:
    """What must stay the same for a cached result to hold (the driver is checked per device)."""

    python: str
    python_mtime_ns: int | None
    torch_version: str | None
    torch_origin: str | None
    torch_mtime_ns: int | None
    extra_env: tuple[tuple[str, str], ...]

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["extra_env"] = dict(self.extra_env)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EnvFingerprint:
        return cls(
            python=str(data.get("python")),
            python_mtime_ns=data.get("python_mtime_ns"),
            torch_version=data.get("torch_version"),
            torch_origin=data.get("torch_origin"),
            torch_mtime_ns=data.get("torch_mtime_ns"),
            extra_env=tuple(sorted(dict(data.get("extra_env") or {}).items())),
        )

    def still_holds(self) -> bool:
        """Cheap check without running Python: interpreter and torch files unchanged."""
        return self.python_mtime_ns == _mtime_ns(self.python) and self.torch_mtime_ns == _mtime_ns(
            self.torch_origin
        )


def fingerprint(
    env: PythonEnv, timeout_s: float = VERSION_TIMEOUT_S
) -> tuple[EnvFingerprint | None, ProbeResult]:
    """Runs the interpreter briefly (no torch import). None, and what went wrong, when it cannot run."""
    info = python_version_info(env.python, extra_env=env.extra_env, timeout_s=timeout_s)
    if info.ok and (info.data is None or "python_version" not in info.data):
        message = f"{env.python} did not answer like a Python interpreter"
        info = ProbeResult("garbage", message, env.python, data=info.data, stderr_tail=info.stderr_tail)
    if not info.ok or info.data is None:
        return None, info
    origin = info.data.get("torch_origin")
    return EnvFingerprint(
        python=str(env.python),
        python_mtime_ns=_mtime_ns(env.python),
        torch_version=info.data.get("torch_dist_version"),
        torch_origin=str(origin) if origin else None,
        torch_mtime_ns=_mtime_ns(origin),
        extra_env=tuple(sorted(env.extra_env.items())),
    ), info


@dataclass(frozen=True)
class _CacheEntry:
    fingerprint: EnvFingerprint
    driver: str
    bench_requested: bool
    pair: PairResult


def _load_cache(path: Path) -> list[_CacheEntry]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("format") != CACHE_FORMAT:
            return []
        return [
            _CacheEntry(
                EnvFingerprint.from_dict(e["fingerprint"]),
                str(e.get("driver", "")),
                bool(e.get("bench_requested")),
                PairResult.from_json(e["pair"]),
            )
            for e in raw.get("entries", [])
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []  # no cache or a damaged one: probe again


def _save_cache(path: Path, entries: Sequence[_CacheEntry]) -> None:
    doc = {
        "format": CACHE_FORMAT,
        "entries": [
            {
                "fingerprint": e.fingerprint.as_dict(),
                "driver": e.driver,
                "bench_requested": e.bench_requested,
                "pair": e.pair.to_json(),
            }
            for e in entries
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def _driver_for(vendor: str, drivers: Mapping[str, str]) -> str:
    return drivers.get(vendor, "") if vendor in ("nvidia", "amd") else ""


def _cached_for(
    entries: Sequence[_CacheEntry],
    fp: EnvFingerprint,
    device_keys: Iterable[str],
    drivers: Mapping[str, str],
    bench: bool,
) -> list[PairResult] | None:
    mine = [e for e in entries if e.fingerprint == fp]
    if not mine:
        return None
    if any(e.driver != _driver_for(e.pair.vendor, drivers) for e in mine):
        return None
    if bench and not all(e.bench_requested for e in mine):
        return None
    if not set(device_keys) <= {e.pair.device_key for e in mine}:
        return None  # a GPU appeared since (an eGPU plugged in)
    return [replace(e.pair, from_cache=True) for e in mine]


# ---------------------------------------------------------------------------------------------------
# The doctor run and the scheduler's API.

ProgressLine = Callable[[str], None]

_MARK = {"works": "✅", "limited": "⚠", "fails": "❌"}


def verdict_mark(verdict: str) -> str:
    return _MARK.get(verdict, "?")


def progress_text(pair: PairResult) -> str:
    figures = ", ".join(
        f"{dict(CAPABILITIES).get(c.name, c.name)} {c.figure()}" for c in pair.capabilities if c.ok
    )
    took = f" in {pair.probe_seconds:.1f} s" if pair.probe_seconds else ""
    cached = " (cached)" if pair.from_cache else ""
    text = f"{pair.env_name} × {pair.device_name}: {verdict_mark(pair.verdict)} {pair.verdict}{took}{cached}"
    if pair.verdict == "fails":
        text += f" — {pair.reason}"
    elif figures:
        text += f" — {figures}"
    return text


def run_doctor(
    envs: Sequence[PythonEnv],
    devices: Sequence[DeviceInfo] = (),
    *,
    refresh: bool = False,
    bench: bool = True,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: ProgressLine | None = None,
    cache_path: Path | None = None,
    drivers: Mapping[str, str] | None = None,
) -> list[PairResult]:
    """Probe (or take from the cache) every env on every device; the cache is updated."""
    path = cache_path or cache_file()
    drivers = driver_versions() if drivers is None else drivers
    entries = _load_cache(path)
    say = progress or (lambda _line: None)
    gpu_keys = [d.key for d in _real_gpus(devices)]
    results: list[PairResult] = []
    for env in envs:
        fp, version_info = fingerprint(env, min(timeout_s, VERSION_TIMEOUT_S))
        if fp is None:
            # Not even `python -I probe.py --version-only` works: no point importing torch.
            pairs = pairs_from_probe(env, version_info, devices)
            for pair in pairs:
                say(progress_text(pair))
            results += pairs
            continue
        if not refresh:
            cached = _cached_for(entries, fp, ["cpu", *gpu_keys], drivers, bench)
            if cached is not None:
                for pair in cached:
                    say(progress_text(pair))
                results += cached
                continue
        say(f"{env.name}: probing {env.python} (importing torch, then each device)…")
        reported: set[str] = set()

        def on_progress(
            payload: Mapping[str, Any], env: PythonEnv = env, reported: set[str] = reported
        ) -> None:
            if payload.get("stage") == "device" and isinstance(payload.get("device"), dict):
                facts = _EnvFacts(None, None, None, time.time(), bench)
                pair = pair_from_device(env, payload["device"], devices, facts)
                reported.add(pair.device_key)
                say(progress_text(pair))

        result = probe_env(
            env.python, extra_env=env.extra_env, bench=bench, timeout_s=timeout_s, on_progress=on_progress
        )
        pairs = pairs_from_probe(env, result, devices)
        for pair in pairs:
            if pair.device_key not in reported:
                say(progress_text(pair))
        results += pairs
        entries = [e for e in entries if not _same_env(e.fingerprint, fp)]
        entries += [_CacheEntry(fp, _driver_for(p.vendor, drivers), bench, p) for p in pairs]
    with contextlib.suppress(OSError):
        _save_cache(path, entries)
    return results


def _same_env(a: EnvFingerprint, b: EnvFingerprint) -> bool:
    return a.python == b.python and a.extra_env == b.extra_env


def cached_results(
    envs: Sequence[PythonEnv] | None = None,
    *,
    cache_path: Path | None = None,
    drivers: Mapping[str, str] | None = None,
) -> list[PairResult]:
    """The cached pairs that still hold for the configured envs (cheap: stats files, runs nothing)."""
    if envs is None:
        try:
            envs = load_envs()
        except (EnvError, ConfigError):
            return []
    drivers = driver_versions() if drivers is None else drivers
    by_identity = {(str(e.python), tuple(sorted(e.extra_env.items()))): e for e in envs}
    out: list[PairResult] = []
    for entry in _load_cache(cache_path or cache_file()):
        env = by_identity.get((entry.fingerprint.python, entry.fingerprint.extra_env))
        if env is None or not entry.fingerprint.still_holds():
            continue
        if entry.driver != _driver_for(entry.pair.vendor, drivers):
            continue
        out.append(replace(entry.pair, env_name=env.name, from_cache=True))
    order = {e.name: i for i, e in enumerate(envs)}
    out.sort(key=lambda p: order.get(p.env_name, len(order)))
    return out


def env_for_device(
    device_key: str, needs: Sequence[str] = (), *, device_kind: str | None = None
) -> PythonEnv | None:
    """The first configured env whose cached result on this device works and passes every need.

    ``needs`` are words like ``fp16``, ``bf16``, ``sdpa`` (see NEEDS); a need the doctor did not
    measure (``--no-bench``) does not pass. For the CPU (``device_key == "cpu"`` or
    ``device_kind == "cpu"``) any env that works on the CPU will do. Never probes: run the doctor first.
    """
    try:
        envs = load_envs()
    except (EnvError, ConfigError):
        return None
    on_cpu = device_key == "cpu" or device_kind == "cpu"
    results = cached_results(envs)
    for env in envs:
        for pair in results:
            if pair.env_name != env.name or not pair.works:
                continue
            if not (pair.device_key == device_key or (on_cpu and pair.vendor == "cpu")):
                continue
            if all(pair.passes(need) for need in needs):
                return env
    return None


class DoctorNeeds:
    """The queue's ``failed_needs``: which of a task's ``needs`` (``fp16``, ``sdpa`` …) the doctor saw fail
    on a device, read from its cache (``gputray doctor`` writes it; this never probes).

    A need fails on a device when some environment measured it there and failed, and none passed.
    A need nobody measured (no doctor run, ``--no-bench``, a device it never saw, a word the doctor
    does not know) blocks nothing. The cache is re-read when ``doctor.json`` changes and at least
    every ``refresh_s`` (an upgraded torch or driver voids results without touching the file).
    """

    def __init__(
        self,
        cache_path: Path | None = None,
        *,
        refresh_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cache_path = cache_path
        self._refresh_s = refresh_s
        self._clock = clock
        self._stamp: tuple[int, int] | None = None
        self._loaded_at = -math.inf
        self._pairs: list[PairResult] = []
        self._lock = threading.Lock()

    def _results(self) -> list[PairResult]:
        path = self._cache_path or cache_file()
        try:
            st = path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        now = self._clock()
        with self._lock:
            if stamp != self._stamp or now - self._loaded_at >= self._refresh_s:
                self._pairs = cached_results(cache_path=path) if stamp is not None else []
                self._stamp, self._loaded_at = stamp, now
            return self._pairs

    def __call__(self, device_key: str, needs: Collection[str]) -> frozenset[str]:
        pairs = [
            p
            for p in self._results()
            if p.device_key == device_key or (device_key == "cpu" and p.vendor == "cpu")
        ]
        failed = set()
        for need in needs:
            names = NEEDS.get(need.strip().lower())
            if not names or any(p.passes(need) for p in pairs):
                continue
            if any(
                p.works and any((c := p.capability(n)) is not None and not c.ok for n in names) for p in pairs
            ):
                failed.add(need)
        return frozenset(failed)
