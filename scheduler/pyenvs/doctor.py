"""The GPU doctor's probing run: which Python environment works on which device, proven by a real kernel.

For each configured environment the probe runs once (``probe_runner``), and each device it reports,
plus each GPU the monitor knows that torch did not see, becomes a PairResult: works / works with
limits / fails, with the reason in words and the fix when one is known (``doctor_messages``).

Results go to the cache (``doctor_cache``: the file, its staleness rules and the queue's lookups
``env_for_device``, ``cached_results``, ``DoctorNeeds``); the queue reads only that module, and asks
for a probe through ``env_choice``, which runs ``run_doctor`` in a thread of its own.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputray.monitor.records import DeviceInfo
from gputray.monitor.sysfs import pci_key
from gputray.scheduler.pyenvs.doctor_cache import (
    Capability,
    DoctorNeeds,
    EnvFingerprint,
    PairResult,
    Verdict,
    _cached_for,
    _load_cache,
    _mtime_ns,
    cache_file,
    cached_results,
    driver_versions,
    env_for_device,
    record_results,
)
from gputray.scheduler.pyenvs.doctor_messages import Diagnosis, diagnose, explain
from gputray.scheduler.pyenvs.probe_runner import (
    DEFAULT_TIMEOUT_S,
    VERSION_TIMEOUT_S,
    ProbeResult,
    probe_env,
    python_version_info,
)
from gputray.scheduler.pyenvs.registry import PythonEnv
from gputray.scheduler.pyenvs.selection_learning import with_selections
from gputray.scheduler.reasons import doctor_codes as dr
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.needs import CAPABILITIES, NEEDS

# The cache's names, still importable from here (``doctor_cache`` is where they live).
__all__ = [
    "CAPABILITIES",
    "NEEDS",
    "Capability",
    "DoctorNeeds",
    "EnvFingerprint",
    "PairResult",
    "Verdict",
    "cache_file",
    "cached_results",
    "driver_versions",
    "env_for_device",
    "fingerprint",
    "pairs_from_probe",
    "run_doctor",
]

# ---------------------------------------------------------------------------------------------------
# Devices: torch's view mapped to the monitor's keys.


def _hex_only(text: str | None) -> str:
    if not text:
        return ""
    text = text.strip().lower().removeprefix("gpu-").removeprefix("mig-")
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
        said = str(basic.get("error") or "")
        error = said or "the basic op did not run"
        found = diagnose(
            error + "\n" + warnings_text, vendor=vendor, arch=arch, env=env, cuda_version=facts.cuda_version
        )
        if not said and isinstance(found.finding, dr.ErrorLine):  # nothing said, nothing recognised
            found = Diagnosis(dr.BasicOpFailed())
        return PairResult(verdict="fails", finding=found.finding, remedy=found.remedy, error=error, **common)
    failed = [c for c in caps if not c.ok]
    if failed:
        titles = dict(CAPABILITIES)
        names = tuple(titles.get(c.name, c.name) for c in failed)
        first = failed[0]
        found = diagnose(
            first.error or "", vendor=vendor, arch=arch, env=env, cuda_version=facts.cuda_version
        )
        return PairResult(
            verdict="limited",
            finding=dr.WorksBut(failed=names, why=found.finding),
            remedy=found.remedy,
            error=first.error,
            **common,
        )
    return PairResult(verdict="works", finding=dr.Passed(benched=bool(caps)), **common)


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
        found = Diagnosis(dr.OtherVendorBuild(build="cuda", version=cuda), dr.UseRocmEnv())
    elif hip is not None and info.vendor == "nvidia":
        found = Diagnosis(dr.OtherVendorBuild(build="rocm", version=hip), dr.UseCu128Env())
    elif data.get("accelerator_error"):
        found = diagnose(str(data["accelerator_error"]), vendor=info.vendor, arch=info.gfx_target, env=env)
    else:
        found = Diagnosis(dr.GpuNotSeen(), dr.CheckVisibleDevices())
    return _failed_pair(
        env,
        info.key,
        info.name,
        info.vendor,
        found,
        facts,
        error=data.get("accelerator_error"),
        torch_version=facts.torch_version,
        cuda_version=cuda,
        hip_version=hip,
        arch=info.gfx_target,
    )


def _failed_probe_pair(
    env: PythonEnv, key: str, name: str, vendor: str, result: ProbeResult, facts: _EnvFacts
) -> PairResult:
    if result.status == "timeout":
        override = env.extra_env.get("HSA_OVERRIDE_GFX_VERSION")
        stages = {p.get("stage") for p in result.progress}
        found = Diagnosis(
            dr.ProbeHung(on_device=bool(stages & {"torch", "device"}), after_s=result.duration_s),
            dr.ChangeOverride(value=override) if override else dr.RefreshWhenIdle(),
        )
    elif result.status == "missing":
        found = Diagnosis(
            dr.InterpreterGone(python=str(env.python)), dr.ReAddEnv(name=env.name, real_python=False)
        )
    elif result.status == "not_runnable":
        found = Diagnosis(
            dr.ProbeFailed(message=result.message), dr.ReAddEnv(name=env.name, real_python=True)
        )
    elif result.status == "garbage":
        found = Diagnosis(dr.ProbeFailed(message=result.message), dr.CheckInterpreter(python=str(env.python)))
    else:
        explained = explain(result.stderr_tail, vendor=vendor, env=env)
        found = (
            Diagnosis(
                dr.WhileProbing(why=explained.finding, during=result.message.split(":")[0]), explained.remedy
            )
            if explained
            else Diagnosis(dr.ProbeFailed(message=result.message))
        )
    error = (result.message + "\n" + result.stderr_tail).strip()
    return _failed_pair(env, key, name, vendor, found, facts, error=error, torch_version=facts.torch_version)


def _failed_pair(
    env: PythonEnv, key: str, name: str, vendor: str, found: Diagnosis, facts: _EnvFacts, **more: Any
) -> PairResult:
    """A "fails" row for a device the probe gave no report on (it crashed, hung, torch did not import,
    or did not see it); ``more`` are the PairResult fields known beyond these."""
    return PairResult(
        env_name=env.name,
        python=str(env.python),
        device_key=key,
        device_name=name,
        vendor=vendor,
        verdict="fails",
        finding=found.finding,
        remedy=found.remedy,
        extra_env=env.extra_env,
        probed_at_s=facts.probed_at_s,
        **more,
    )


def _real_gpus(known: Sequence[DeviceInfo]) -> list[DeviceInfo]:
    """The monitor's GPUs worth a row: not the CPU, not the demo's simulated pair."""
    return [i for i in known if i.kind != "cpu" and i.key != "cpu" and not i.simulated]


def pairs_from_probe(env: PythonEnv, result: ProbeResult, known: Sequence[DeviceInfo]) -> list[PairResult]:
    """Every (env, device) pair one probe run tells about: torch's devices, CPU, and the monitor's GPUs."""
    data = result.data or {}
    facts = _EnvFacts(
        torch_version=data.get("torch_version") or data.get("torch_dist_version"),
        cuda_version=data.get("cuda_version"),
        hip_version=data.get("hip_version"),
        probed_at_s=time.time(),
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
            pairs.append(_failed_pair(env, key, name, vendor, found, facts, error=error))
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
        extra_env=env.extra_env,
    ), info


# ---------------------------------------------------------------------------------------------------
# The doctor run and the scheduler's API.

#: Hears what a run says as it goes (``gputray doctor`` prints it in English, the tray in its language).
ProgressLine = Callable[[dr.DoctorNews], None]

_MARK = {"works": "✅", "limited": "⚠", "fails": "❌"}


def verdict_mark(verdict: str) -> str:
    return _MARK.get(verdict, "?")


def progress_news(pair: PairResult) -> dr.PairProbed:
    """What a run says of ``pair`` once it is done."""
    return dr.PairProbed(
        env=pair.env_name,
        device=pair.device_name,
        verdict=pair.verdict,
        took_s=pair.probe_seconds,
        cached=pair.from_cache,
        figures=tuple(
            f"{dict(CAPABILITIES).get(c.name, c.name)} {c.figure()}" for c in pair.capabilities if c.ok
        ),
        why=pair.finding,
    )


def progress_text(pair: PairResult) -> str:
    """``progress_news`` in English (the command line's, the logs')."""
    return render(progress_news(pair))


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
        reported: set[str] = set()  # the devices the probe's progress already said
        cached = (
            None if fp is None or refresh else _cached_for(entries, fp, ["cpu", *gpu_keys], drivers, bench)
        )
        if fp is None:
            # Not even `python -I probe.py --version-only` works: no point importing torch.
            pairs = pairs_from_probe(env, version_info, devices)
        elif cached is not None:
            pairs = cached
        else:
            say(dr.ProbingEnv(env=env.name, python=str(env.python)))

            def on_progress(
                payload: Mapping[str, Any], env: PythonEnv = env, reported: set[str] = reported
            ) -> None:
                if payload.get("stage") == "device" and isinstance(payload.get("device"), dict):
                    facts = _EnvFacts(None, None, None, time.time(), bench)
                    pair = pair_from_device(env, payload["device"], devices, facts)
                    reported.add(pair.device_key)
                    say(progress_news(pair))

            result = probe_env(
                env.python, extra_env=env.extra_env, bench=bench, timeout_s=timeout_s, on_progress=on_progress
            )
            pairs = pairs_from_probe(env, result, devices)
            if result.ok and result.data is not None and not result.data.get("torch_error"):
                platform = (version_info.data or {}).get("platform")
                pairs = with_selections(
                    env,
                    pairs,
                    result.data,
                    devices,
                    platform=platform,
                    base_env=os.environ,
                    timeout_s=timeout_s,
                )
                for pair in pairs:
                    if pair.selection is not None and pair.vendor != "cpu":
                        say(
                            dr.PairSelected(
                                env=env.name, device=pair.device_name, selected_by=pair.selected_by()
                            )
                        )
            with contextlib.suppress(OSError):
                record_results(path, fp, pairs, drivers, bench=bench)
        for pair in pairs:
            if pair.device_key not in reported:
                say(progress_news(pair))
        results += pairs
    return results
