"""What one attempt of a task runs on a device: its argv, its environment variables, the log's header
and the ``{out}`` file it writes (``prepare_launch``, pure but for the Vulkan loader and creating
``{out}``; ``invocation`` builds the parts)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gputray.monitor.records import DeviceInfo
from gputray.scheduler.jobs.invocation import (
    VULKAN_SELECTION_VAR,
    activate_python,
    build_env,
    free_out_path,
    placeholder_values,
    render_argv,
    rocm_index_for,
    uses_placeholder,
)
from gputray.scheduler.jobs.orphans import QUEUE_FILE_VAR
from gputray.scheduler.paths import job_umask
from gputray.scheduler.pyenvs.doctor_cache import PairResult
from gputray.scheduler.pyenvs.selection import TORCH_DEVICE_VAR
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec, local_iso

log = logging.getLogger("gputray.scheduler.queue.service")  # the queue's log, where these lines always were


def default_vk_index(info: DeviceInfo, env: Mapping[str, str], known: Sequence[DeviceInfo]) -> int | None:
    """The Vulkan index for ``{vk_index}``: the identity map for real GPUs and for simulated GPUs a demo
    scenario backs with a real Vulkan device (by its name); for other simulated GPUs their rank among
    the simulated devices (demo only, there is no real device behind them)."""
    if info.simulated and not info.vulkan_name:
        sims = sorted(d.key for d in known if d.simulated and d.kind != "cpu")
        return sims.index(info.key) if info.key in sims else None
    if info.kind == "cpu":
        return None
    try:
        from gputray.monitor.device_map import vulkan_index_for

        return vulkan_index_for(info.key, env, known)
    except Exception:  # optional: a broken Vulkan stack must not stop the queue
        log.exception("Vulkan index lookup failed")
        return None


def vulkan_selection_index(
    spec: TaskSpec, info: DeviceInfo, env: Mapping[str, str], known: Sequence[DeviceInfo]
) -> int | None:
    """The index ``GGML_VK_VISIBLE_DEVICES`` gets (``invocation``'s docstring): the real Vulkan device of
    a GPU, for a ``vulkan`` or ``command`` task (a program ggml may run in; a torch task is selected by
    the variables the doctor proved). None on the CPU and for a simulated GPU no real device backs (its
    demo rank would point a real program at some other device)."""
    if spec.kind == "torch" or info.kind == "cpu" or (info.simulated and not info.vulkan_name):
        return None
    return default_vk_index(info, env, known)


#: wgpu's adapter choice by name: wgpu-py's request_adapter reads ``WGPUPY_WGPU_ADAPTER_NAME`` (pygfx/wgpu-py
#: #779); Rust programs that call ``wgpu::util::initialize_adapter_from_env`` read ``WGPU_ADAPTER_NAME``.
#: Nothing else steers wgpu: it enumerates every Vulkan device itself and ranks them by power preference,
#: whatever index a job was given (docs/queue.md, "Vulkan programs").
WGPU_NAME_VARS = ("WGPU_ADAPTER_NAME", "WGPUPY_WGPU_ADAPTER_NAME")


def wgpu_adapter_env(
    spec_kind: str, info: DeviceInfo, env: Mapping[str, str], known: Sequence[DeviceInfo]
) -> dict[str, str]:
    """wgpu's adapter-name variables naming the Vulkan device of ``info``, for a command or Vulkan job on
    a GPU with a Vulkan device behind it whose name no other device's contains; {} otherwise (a torch
    job, the CPU, a simulated GPU with no real device, a name two devices share)."""
    if (
        spec_kind not in ("vulkan", "command")
        or info.kind == "cpu"
        or (info.simulated and not info.vulkan_name)
    ):
        return {}
    try:
        from gputray.monitor.device_map import adapter_name_for

        name = adapter_name_for(info.key, env, known)
    except Exception:  # optional: a broken Vulkan stack must not stop the queue
        log.exception("Vulkan device name lookup failed")
        return {}
    return {} if name is None else dict.fromkeys(WGPU_NAME_VARS, name)


def selection_header(pair: PairResult) -> str:
    """The log header's lines on how the job was pointed at its device and what torch saw there."""
    if pair.selection is None:
        return ""
    verdict = {
        "proven": "proven",
        "unprovable": "NOT PROVEN (the task allows it: allow_unproven)",
        "wrong-device": "WRONG DEVICE",
    }.get(pair.selection_status or "", "not checked")
    seen = pair.seen_device
    shown = "nothing"
    if seen is not None:
        # the CPU is torch's ``cpu`` by name: "cpu", not "cpu as cpu"
        same = seen.name == seen.torch_device
        parts = [seen.torch_device if same else f"{seen.name or '?'} as {seen.torch_device}"]
        parts += [f"pci {seen.pci_address()}"] if seen.pci_address() else []
        parts += [f"uuid {seen.uuid}"] if seen.uuid else []
        shown = ", ".join(parts)
    return (
        f"selection: {pair.selection.label()} ({verdict}, env {pair.env_name}: {pair.selection_reason})\n"
        f"seen device: {shown}\n"
    )


@dataclass(frozen=True)
class LaunchPlan:
    """What one attempt runs: argv, environment, the log's header, the ``{out}`` file it writes (kept
    from other jobs until it ends) and the notes the header carries."""

    argv: tuple[str, ...]
    env: dict[str, str]
    header: str
    out: str | None
    notes: tuple[str, ...]


def prepare_launch(
    task: TaskRecord,
    info: DeviceInfo,
    known: Sequence[DeviceInfo],
    *,
    python: str | None = None,
    extra_env: Mapping[str, str] = {},
    taken_outs: Collection[str] = (),
    queue_file: str = "",
    now_s: float = 0.0,
    on_cpu: bool = False,
    pair: PairResult | None = None,
) -> LaunchPlan:
    """The argv, environment and log header of ``task`` (already marked running: ``attempts`` counts
    this attempt, ``reason`` holds its notes) on device ``info``. Pure but for ``default_vk_index`` (the
    Vulkan loader) and ``{out}``, which is taken by creating it (``free_out_path``). Raises LaunchError
    when the task cannot be rendered for that device.
    ``on_cpu``: a torch job placed on a simulated GPU runs on the CPU (every GPU hidden).
    ``pair``: the doctor's result for the env on this device; its learned selection is what the job gets,
    and the header names it and what torch saw there."""
    spec = task.spec
    if on_cpu:
        info = dataclasses.replace(info, kind="cpu")  # build_env hides CUDA and HIP devices
    base_env = dict(spec.base_env) if spec.base_env is not None else dict(os.environ)  # the submitter's
    said = render(task.reason)  # the log speaks English, as the command line does
    notes = [said] if said else []
    out: str | None = None
    rocm = rocm_index_for(info, known) if info.vendor == "amd" and info.kind != "cpu" else None
    values: dict[str, str] | None = None  # None: a command's argv is the user's own, verbatim
    probe = build_env(base_env, info, task_id=task.id, extra=extra_env, rocm_index=rocm)
    vulkan_index = vulkan_selection_index(spec, info, probe, known)
    if spec.fills_placeholders:
        vk_index = None
        if uses_placeholder(spec, "vk_index"):
            vk_index = vulkan_index if vulkan_index is not None else default_vk_index(info, probe, known)
        values = placeholder_values(spec, device_key=info.key, vk_index=vk_index)
        if uses_placeholder(spec, "out"):
            wanted = values["out"]
            out = values["out"] = free_out_path(wanted, set(taken_outs), umask=job_umask())
            if out != wanted:
                notes.append(f"output: {Path(wanted).name} is taken, writing {Path(out).name}")
    argv = render_argv(spec, values, python=python)
    selection = pair.selection if pair is not None else None
    wgpu = wgpu_adapter_env(spec.kind, info, probe, known)
    env = build_env(
        base_env,
        info,
        task_id=task.id,
        extra={**wgpu, **extra_env},
        task_env=spec.env,
        values=values,
        rocm_index=rocm,
        selection=selection,
        vulkan_index=vulkan_index,
    )
    if python is not None:  # a torch task: run by the env chosen for the device
        activate_python(env, python)
    env[QUEUE_FILE_VAR] = queue_file  # lets crash recovery find the job before its pid is saved
    gpu_vars = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
    torch_device = env.get(TORCH_DEVICE_VAR)  # a torch job's: the device its script is to use
    vulkan_var = env.get(VULKAN_SELECTION_VAR)  # ggml's Vulkan device: ours, or "" on the CPU
    header = (
        f"=== gputray task #{task.id} {spec.name!r}, attempt {task.attempts}, on {info.name} ({info.key})"
        f" at {local_iso(now_s)} ===\n"
        f"argv: {json.dumps(argv, ensure_ascii=False)}\n"
        + "".join(f"{k}={env.get(k, '(unset)')}\n" for k in gpu_vars)
        + (f"{TORCH_DEVICE_VAR}={torch_device}\n" if torch_device else "")
        + (f"{VULKAN_SELECTION_VAR}={vulkan_var}\n" if vulkan_var is not None else "")
        + "".join(f"{k}={env.get(k, '(unset)')}\n" for k in wgpu)  # wgpu's adapter, by its Vulkan name
        + (selection_header(pair) if pair is not None else "")
        + (f"note: {said}\n" if said else "")
        + "".join(f"{n}\n" for n in notes[1 if said else 0 :])
    )
    return LaunchPlan(tuple(argv), env, header, out, tuple(notes))
