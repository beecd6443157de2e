"""The argv and environment variables a job gets on a device (docs/architecture.md, trace 1, step 8).

- NVIDIA: ``CUDA_VISIBLE_DEVICES=<GPU-uuid>`` and ``CUDA_DEVICE_ORDER=PCI_BUS_ID``; ROCm variables removed.
- AMD: ``ROCR_VISIBLE_DEVICES=<ROCm index>`` and ``HIP_VISIBLE_DEVICES=0``; ``CUDA_VISIBLE_DEVICES`` is
  *removed* (HIP honours it too). ROCr filters first, so inside the job the chosen GPU is HIP device 0;
  a HIP index equal to the ROCm index would point past the end whenever that index is not 0.
  The ROCm index comes from the KFD topology (``gputray.monitor.device_map.rocm_indices``); when KFD
  is not readable (Windows, no ROCm, simulated devices) the index of the AMD GPU among the known AMD
  GPUs is used, which is 0 for the usual single AMD GPU.
- CPU: ``CUDA_VISIBLE_DEVICES=""`` and ``HIP_VISIBLE_DEVICES=""`` (and ``ROCR_VISIBLE_DEVICES`` removed).
- Vulkan (ggml: llama.cpp, whisper.cpp, stable-diffusion.cpp): ``GGML_VK_VISIBLE_DEVICES=<Vulkan index>``
  for ``vulkan`` and ``command`` tasks on a GPU whose Vulkan device is known, ``""`` on the CPU. Without
  it ggml takes every discrete and integrated GPU (a llama-server sent to the 780M splits its layers over
  the 5060 Ti too) and skips CPU-type devices such as lavapipe (ggml-vulkan.cpp,
  ``ggml_vk_instance_init``); with it, exactly the devices it names, in ``vkEnumeratePhysicalDevices``
  order. A value from the user's shell is dropped; one the task's own ``env`` sets stands only where
  gputray knows no index.
- A command or Vulkan job on a GPU with a Vulkan device behind it: wgpu's adapter-name variables naming
  that device (``launch_plan.wgpu_adapter_env``), passed in as ``extra``: wgpu takes no Vulkan index.
- Then the Python env's extra variables (``HSA_OVERRIDE_GFX_VERSION`` …), then the task's own ``env``
  (placeholders such as ``{vk_index}`` filled in), then ``GPUTRAY_TASK_ID`` and ``GPUTRAY_DEVICE``.

Argument lists are built element by element: a placeholder's value is inserted verbatim and never
passes through a shell or through a second round of substitution.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from gputray.monitor.records import DeviceInfo
from gputray.scheduler.protocol import Refusal
from gputray.scheduler.pyenvs.selection import GPU_SELECTION_VARS, TORCH_DEVICE_VAR, Selection
from gputray.scheduler.tasks.records import TaskSpec, substitute

#: ggml's Vulkan device selection: raw ``vkEnumeratePhysicalDevices`` indices, comma-separated.
VULKAN_SELECTION_VAR = "GGML_VK_VISIBLE_DEVICES"


def out_path(spec: TaskSpec) -> str:
    """``{out}``: the spec's ``out`` template (relative → next to the input file), or ``<stem>_out<ext>``."""
    first = Path(spec.files[0]) if spec.files else None
    stem = first.stem if first else spec.name
    folder = first.parent if first else Path(spec.cwd or ".")
    if spec.out:
        # Only the user's own template may start with ~ (their home). In a file's name ~ is a
        # character: "~user.png" must not become another user's home, or an error if there is none.
        template = spec.out
        if template == "~" or template.startswith(("~/", "~" + os.sep)):
            template = str(Path.home()) + template[1:]
        rendered = substitute(template, {"stem": stem, "file": str(first or "")})
        p = Path(rendered)
        return str(p if p.is_absolute() else folder / p)
    suffix = first.suffix if first else ""
    return str(folder / f"{stem}_out{suffix}")


def free_out_path(wanted: str, taken: Collection[str], *, umask: int = -1) -> str:
    """``wanted``, or ``name (2).ext``, ``name (3).ext`` … when anything is there already (an earlier
    result, the input itself, a link, even one that points nowhere) or another job of ours is writing
    it: results are never overwritten, and never written through a link.

    The name is taken by creating it, empty, with ``O_CREAT | O_EXCL`` (which never follows a link and
    which only one process wins), so the tool writes into a file of ours: a recipe's ``ffmpeg -y``
    overwrites only that. ``umask``: the job's (the file gets the mode the tool would have given it);
    -1: this process's. OSError when the folder does not take a new file; ``drop_unused_out`` removes
    the file again when the job wrote nothing."""
    path = Path(wanted)
    candidate, n = path, 1
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        if str(candidate) not in taken:
            try:
                fd = os.open(candidate, flags, 0o666)
            except FileExistsError:
                pass
            else:
                try:
                    if umask != -1 and os.name == "posix":
                        os.fchmod(fd, 0o666 & ~umask)
                finally:
                    os.close(fd)
                return str(candidate)
        n += 1
        candidate = path.with_name(f"{path.stem} ({n}){path.suffix}")


def drop_unused_out(path: str) -> None:
    """Remove the file ``free_out_path`` created for a job that ended without writing to it."""
    import stat

    try:
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode) and info.st_size == 0:
            os.unlink(path)
    except OSError:
        pass


def placeholder_values(spec: TaskSpec, *, device_key: str, vk_index: int | None) -> dict[str, str]:
    """Values for ``{file} {stem} {out} {vk_index} {device}``. ``{vk_index}`` is absent when unknown."""
    first = Path(spec.files[0]) if spec.files else None
    values = {
        "file": str(first) if first else "",
        "stem": first.stem if first else spec.name,
        "out": out_path(spec),
        "device": device_key,
    }
    if vk_index is not None:
        values["vk_index"] = str(vk_index)
    return values


def uses_placeholder(spec: TaskSpec, name: str) -> bool:
    """Whether ``{name}`` appears in the task's argv, args or env values."""
    return any(f"{{{name}}}" in t for t in (*spec.argv, *spec.args, *spec.env.values()))


class LaunchError(Refusal, ValueError):
    """The job cannot be started as asked (a placeholder without a value …); the message says why."""


def render_argv(spec: TaskSpec, values: Mapping[str, str] | None, *, python: str | None = None) -> list[str]:
    """The argv list: torch → ``[python, script, *args]``; vulkan/command → the template, filled in.

    ``values`` None: nothing is filled in (a task that does not ``fills_placeholders``: its
    arguments are the user's own program line and reach the program verbatim).
    """
    if spec.kind == "torch":
        if spec.script is None:
            raise LaunchError(f"{spec.name}: a torch task needs a script")
        head = [python or "python3", spec.script]
        items: Sequence[str] = spec.args
    else:
        head = []
        items = spec.argv
    if values is None:
        return [*head, *items]
    out = [*head]
    for item in items:
        text = substitute(item, values)
        if "{vk_index}" in item and "vk_index" not in values:
            raise LaunchError(f"{spec.name}: no Vulkan device index is known for {values.get('device')}")
        out.append(text)
    return out


def rocm_index_for(
    info: DeviceInfo, known: Sequence[DeviceInfo] = (), sysfs_root: Path = Path("/sys")
) -> int:
    """ROCm (ROCR) index of an AMD GPU: KFD topology order when readable, else its rank among AMD GPUs."""
    if not info.simulated:
        try:
            from gputray.monitor.device_map import rocm_indices

            index = rocm_indices(sysfs_root).get(info.key)
        except Exception:  # an optional helper: never let it stop a launch
            index = None
        if index is not None:
            return index
    amd = sorted({d.key for d in known if d.vendor == "amd" and d.kind != "cpu"} | {info.key})
    return amd.index(info.key)


def build_env(
    base: Mapping[str, str],
    device: DeviceInfo,
    *,
    task_id: int,
    extra: Mapping[str, str] = {},
    task_env: Mapping[str, str] = {},
    values: Mapping[str, str] | None = {},
    rocm_index: int | None = None,
    selection: Selection | None = None,
    vulkan_index: int | None = None,
) -> dict[str, str]:
    """The full environment for a job on ``device`` (a GPU's DeviceInfo, or one with kind ``cpu``).

    ``vulkan_index``: the device's ``vkEnumeratePhysicalDevices`` index in the job's environment, set as
    ``GGML_VK_VISIBLE_DEVICES`` (module docstring); None: not known, or not a task ggml may run in.

    ``selection``: the one the doctor learned for this env on this GPU (``selection_learning``); without
    one, the vendor's usual variables.

    ``base`` is usually ``os.environ``; ``extra`` the Python env's variables; ``task_env`` the task's
    own (placeholders filled from ``values``; ``None``: kept as written, as ``render_argv`` does).
    GPU selection is decided here, last word is ours: selection variables the user set globally
    would point the job at the wrong GPU.
    """
    env = {k: v for k, v in base.items() if k not in GPU_SELECTION_VARS and k != VULKAN_SELECTION_VAR}
    env.update(extra)
    for name, value in task_env.items():
        if values is None:
            env[name] = value
            continue
        if "{vk_index}" in value and "vk_index" not in values:
            raise LaunchError(f"{name}: no Vulkan device index is known for {device.name}")
        env[name] = substitute(value, values)
    for var in (*GPU_SELECTION_VARS, TORCH_DEVICE_VAR):
        env.pop(var, None)
    if device.kind == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["HIP_VISIBLE_DEVICES"] = ""
        env[VULKAN_SELECTION_VAR] = ""  # no Vulkan device: ggml runs on the CPU
        if selection is not None:
            selection.apply(env)
    elif selection is not None:
        selection.apply(env)
    elif device.vendor == "nvidia":
        env["CUDA_VISIBLE_DEVICES"] = device.uuid or (
            str(device.nvml_index) if device.nvml_index is not None else "0"
        )
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    elif device.vendor == "amd":
        env["ROCR_VISIBLE_DEVICES"] = str(rocm_index if rocm_index is not None else 0)
        env["HIP_VISIBLE_DEVICES"] = "0"
    if device.kind != "cpu" and vulkan_index is not None:
        env[VULKAN_SELECTION_VAR] = str(vulkan_index)
    env["GPUTRAY_TASK_ID"] = str(task_id)
    env["GPUTRAY_DEVICE"] = device.key
    env.setdefault("PYTHONUNBUFFERED", "1")  # logs show up as the job prints, not at exit
    return log_encoding_env(env)


def log_encoding_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a job whose output goes to a log file, which gputray reads as UTF-8.

    On Windows, Python writes to a file in the ANSI code page: in cp1252 a ``print("学習")`` raises
    UnicodeEncodeError and the job fails, only because it runs under gputray. So a Python job writes its
    stdio in UTF-8 there, unless the user chose otherwise (``PYTHONIOENCODING`` or ``PYTHONUTF8``).
    """
    out = dict(env)
    if sys.platform == "win32" and "PYTHONIOENCODING" not in out and "PYTHONUTF8" not in out:
        out["PYTHONIOENCODING"] = "utf-8"
    return out


def activate_python(env: dict[str, str], python: str) -> None:
    """As activating its venv would: the interpreter's folder first on PATH and ``VIRTUAL_ENV`` set to
    its venv (dropped when it is none), so ``python`` or ``pip`` run by the job are the chosen env's
    and not those of the shell that submitted it."""
    bin_dir = Path(python).parent
    env["PATH"] = os.pathsep.join(p for p in (str(bin_dir), env.get("PATH", "")) if p)
    if (bin_dir.parent / "pyvenv.cfg").is_file():
        env["VIRTUAL_ENV"] = str(bin_dir.parent)
    else:
        env.pop("VIRTUAL_ENV", None)
