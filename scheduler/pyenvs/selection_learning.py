"""Learn, per (env, GPU), the selection under which the env's torch really lands on that GPU.

Each candidate (``selection.candidates``) and, for an AMD GPU on Linux, each HSA override variant
(``selection.override_variants``) is tried in order: the probe's ``--select`` run starts under the
environment a job would get (``job_probe_env``: the doctor's environment without its own selection
variables, the env's ``extra_env``, then the selection) and reports what torch sees for the selected
device and whether a small checked matmul runs there. The first read-back that is the target and whose
kernel passes wins. A wrong device is never kept; a read-back that tells nothing (no PCI address, UUID
or distinctive name) is kept as ``unprovable`` only when nothing was proven.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gputray.monitor.records import DeviceInfo
from gputray.scheduler.pyenvs.doctor_cache import PairResult
from gputray.scheduler.pyenvs.probe_runner import DEFAULT_TIMEOUT_S, ProbeResult, select_probe
from gputray.scheduler.pyenvs.registry import PythonEnv
from gputray.scheduler.pyenvs.selection import (
    CPU_SEEN,
    CPU_SELECTION,
    GPU_SELECTION_VARS,
    TORCH_DEVICE_VAR,
    Build,
    SeenDevice,
    Selection,
    SelectionStatus,
    SelectionVerdict,
    build_of,
    candidates,
    match_seen,
    override_variants,
    rocr_index,
    serves,
)
from gputray.scheduler.reasons import doctor_codes as dr

#: Runs the ``--select`` probe: (python, the whole environment) → its result.
SelectProbe = Callable[[Path, Mapping[str, str]], ProbeResult]


@dataclass(frozen=True)
class Learned:
    """The selection kept for one pair, what torch saw under it, and the verdict. ``kernel_error``: the
    device was right but its kernel failed under every override tried (the pair fails)."""

    selection: Selection
    seen: SeenDevice | None
    status: SelectionStatus
    reason: str
    kernel_error: str | None = None
    override_why: str | None = None
    tried: tuple[str, ...] = ()


def job_probe_env(base: Mapping[str, str], env: PythonEnv, selection: Selection) -> dict[str, str]:
    """The variables a job of ``env`` under ``selection`` starts with (as ``build_env`` makes them)."""
    out = dict(base)
    out.update(env.extra_env)
    for name in (*GPU_SELECTION_VARS, TORCH_DEVICE_VAR):  # ours, not the env's or the shell's
        out.pop(name, None)
    selection.apply(out)
    return out


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def seen_from(doc: Mapping[str, Any]) -> SeenDevice | None:
    """The ``--select`` probe's ``selected`` device as a record; None when torch had no such device."""
    selected = doc.get("selected")
    if not isinstance(selected, dict):
        return None
    name, uuid, arch = selected.get("name"), selected.get("uuid"), selected.get("gcn_arch_name")
    return SeenDevice(
        torch_device=str(selected.get("torch_device") or doc.get("torch_device") or "cuda:0"),
        name=str(name) if name else None,
        pci_bus_id=_int(selected.get("pci_bus_id")),
        pci_device_id=_int(selected.get("pci_device_id")),
        pci_domain_id=_int(selected.get("pci_domain_id")),
        uuid=str(uuid) if uuid else None,
        gcn_arch_name=str(arch) if arch else None,
        total_memory_bytes=_int(selected.get("total_memory_bytes")),
        device_count=_int(doc.get("device_count")),
    )


def _kernel_error(doc: Mapping[str, Any]) -> str | None:
    selected = doc.get("selected") or {}
    basic = selected.get("basic_op") or {}
    if basic.get("ok"):
        return None
    return str(basic.get("error") or selected.get("error") or "the small matmul did not run")


def learn_selection(
    env: PythonEnv,
    target: DeviceInfo,
    known: Sequence[DeviceInfo],
    *,
    build: Build,
    platform: str | None,
    rocm_index: int | None,
    base_env: Mapping[str, str],
    run: SelectProbe | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    kfd_node: int | None = None,
) -> Learned | None:
    """Try the candidates for ``target`` until one is proven; None when the build cannot drive it.
    ``rocm_index``/``kfd_node``: the GPU's place in the KFD topology, when readable (Linux); without
    them its rank among AMD GPUs stands in, after one CPU node."""

    def default_run(python: Path, whole: Mapping[str, str]) -> ProbeResult:
        return select_probe(python, whole, timeout_s=timeout_s)

    probe = run or default_run
    tried: list[str] = []
    fallback: Learned | None = None
    wrong: Learned | None = None
    kernel_failed: Learned | None = None
    for selection in candidates(target, known, build=build, platform=platform, rocm_index=rocm_index):
        node = kfd_node if kfd_node is not None else rocr_index(target, known, rocm_index) + 1
        variants = override_variants(target, env.extra_env, build=build, platform=platform, node=node)
        for variant in variants:
            chosen = selection.with_override(variant)
            result = probe(env.python, job_probe_env(base_env, env, chosen))
            if not result.ok or result.data is None or result.data.get("torch_error"):
                tried.append(f"{chosen.label()}: {result.message}")
                continue
            seen = seen_from(result.data)
            verdict: SelectionVerdict = match_seen(seen, target, known)
            tried.append(f"{chosen.label()}: {verdict.status} ({verdict.reason})")
            why = variant.why if variant != variants[0] else None  # said only when it changed
            if verdict.status == "wrong-device":
                if wrong is None or (wrong.seen is None and seen is not None):  # what it got, if anything
                    wrong = Learned(chosen, seen, "wrong-device", verdict.reason)
                break  # an override does not move the device
            error = _kernel_error(result.data)
            if error is not None:
                if verdict.status == "proven":
                    kernel_failed = kernel_failed or Learned(
                        chosen, seen, "proven", verdict.reason, kernel_error=error, override_why=why
                    )
                continue
            found = Learned(chosen, seen, verdict.status, verdict.reason, override_why=why)
            if verdict.status == "proven":
                return _with_tried(found, tried)
            fallback = fallback or found
            break
    best = kernel_failed or fallback or wrong
    if best is None:
        if not tried:
            return None
        return Learned(Selection(), None, "unprovable", "no selection could be read back", tried=tuple(tried))
    return _with_tried(best, tried)


def _with_tried(found: Learned, tried: Sequence[str]) -> Learned:
    return Learned(
        found.selection,
        found.seen,
        found.status,
        found.reason,
        found.kernel_error,
        found.override_why,
        tuple(tried),
    )


def _kfd_place(info: DeviceInfo) -> tuple[int | None, int | None]:
    """The GPU's (ROCr index, KFD node) from the KFD topology; (None, None) where there is none."""
    try:
        from gputray.monitor.device_map import kfd_gpus

        gpu = next((g for g in kfd_gpus(Path("/sys")) if g.key == info.key), None)
    except Exception:  # optional (Linux with KFD only): the candidates then go by PCI order
        return None, None
    return (gpu.rocm_index, gpu.node) if gpu is not None else (None, None)


def with_selections(
    env: PythonEnv,
    pairs: Sequence[PairResult],
    data: Mapping[str, Any],
    known: Sequence[DeviceInfo],
    *,
    platform: str | None,
    base_env: Mapping[str, str],
    run: SelectProbe | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[PairResult]:
    """``pairs`` of one probe run, each GPU the build can drive with its learned selection (a wrong
    device makes the pair fail, saying what torch saw) and the CPU with its own (no variable)."""
    build = build_of(data.get("cuda_version"), data.get("hip_version"))
    out: list[PairResult] = []
    for pair in pairs:
        if pair.vendor == "cpu":
            if pair.works:
                pair = replace(
                    pair,
                    selection=CPU_SELECTION,
                    seen_device=CPU_SEEN,
                    selection_status="proven",
                    selection_reason="torch's own cpu device",
                )
            out.append(pair)
            continue
        info = next((d for d in known if d.key == pair.device_key and not d.simulated), None)
        if info is None or not serves(build, info):
            out.append(pair)
            continue
        rocm_index, kfd_node = _kfd_place(info)
        learned = learn_selection(
            env,
            info,
            [d for d in known if not d.simulated],
            build=build,
            platform=platform,
            rocm_index=rocm_index,
            kfd_node=kfd_node,
            base_env=base_env,
            run=run,
            timeout_s=timeout_s,
        )
        out.append(pair if learned is None else apply_learned(pair, learned))
    return out


def apply_learned(pair: PairResult, learned: Learned) -> PairResult:
    """The pair as the learned selection leaves it."""
    reason = learned.reason + (f"; HSA override: {learned.override_why}" if learned.override_why else "")
    fields: dict[str, Any] = {
        "selection": learned.selection,
        "seen_device": learned.seen,
        "selection_status": learned.status,
        "selection_reason": reason,
    }
    tried = "; ".join(learned.tried)
    if learned.status == "wrong-device":
        fields.update(
            verdict="fails",
            finding=dr.WrongDevice(selection=learned.selection.label(), sight=learned.reason),
            remedy=dr.NoSelectionLands(tried=learned.tried),
            error=tried,
        )
    elif learned.kernel_error is not None:
        if pair.works:
            fields.update(
                verdict="fails",
                finding=dr.KernelFailsUnder(selection=learned.selection.label(), error=learned.kernel_error),
                error=learned.kernel_error,
            )
    elif not pair.works:
        fields.update(
            verdict="works",
            finding=dr.RanUnder(selection=learned.selection.label()),
            remedy=None,
            error=None,
            capabilities=(),
            bench=False,
        )
    return replace(pair, **fields)
