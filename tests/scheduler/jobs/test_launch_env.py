from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.scheduler.jobs.invocation import (
    LaunchError,
    build_env,
    log_encoding_env,
    placeholder_values,
    render_argv,
    rocm_index_for,
)
from gputray.scheduler.jobs.launch_plan import vulkan_selection_index
from gputray.scheduler.queue.placement import CPU_INFO
from gputray.scheduler.tasks.records import TaskSpec

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "amdgpu-sysfs"
# What a user's shell may already have: none of it may leak into a job's GPU selection.
BASE = {
    "PATH": "/usr/bin",
    "HOME": "/home/me",
    "CUDA_VISIBLE_DEVICES": "1",
    "HIP_VISIBLE_DEVICES": "3",
    "ROCR_VISIBLE_DEVICES": "2",
    "CUDA_DEVICE_ORDER": "FASTEST_FIRST",
}


def test_nvidia_gets_its_uuid_in_pci_order() -> None:
    env = build_env(BASE, RTX_5060_TI, task_id=7)
    assert env["CUDA_VISIBLE_DEVICES"] == RTX_5060_TI.uuid
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert "HIP_VISIBLE_DEVICES" not in env and "ROCR_VISIBLE_DEVICES" not in env
    assert env["GPUTRAY_TASK_ID"] == "7" and env["GPUTRAY_DEVICE"] == RTX_5060_TI.key
    assert env["PATH"] == "/usr/bin" and env["HOME"] == "/home/me"


def test_amd_selects_through_rocr_and_removes_cuda_visible_devices() -> None:
    env = build_env(BASE, RADEON_780M, task_id=8, rocm_index=1)
    assert env["ROCR_VISIBLE_DEVICES"] == "1"
    assert env["HIP_VISIBLE_DEVICES"] == "0"  # ROCr filtered first: the chosen GPU is HIP device 0
    assert "CUDA_VISIBLE_DEVICES" not in env and "CUDA_DEVICE_ORDER" not in env
    assert env["GPUTRAY_DEVICE"] == RADEON_780M.key


def test_cpu_hides_every_gpu() -> None:
    env = build_env(BASE, CPU_INFO, task_id=9)
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["HIP_VISIBLE_DEVICES"] == ""
    assert "ROCR_VISIBLE_DEVICES" not in env
    assert env["GPUTRAY_DEVICE"] == "cpu"


def test_env_extras_and_task_variables_with_placeholders() -> None:
    spec = TaskSpec(
        kind="vulkan",
        name="bench",
        argv=("llama-bench", "-m", "{file}"),
        files=("/m/q.gguf",),
        env={"GGML_VK_VISIBLE_DEVICES": "{vk_index}", "MODEL": "{stem}"},
    )
    values = placeholder_values(spec, device_key=RADEON_780M.key, vk_index=1)
    env = build_env(
        BASE,
        RADEON_780M,
        task_id=3,
        extra={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"},
        task_env=spec.env,
        values=values,
        rocm_index=0,
    )
    assert env["GGML_VK_VISIBLE_DEVICES"] == "1"
    assert env["MODEL"] == "q"
    assert env["HSA_OVERRIDE_GFX_VERSION"] == "11.0.0"


def test_a_task_cannot_override_our_gpu_selection() -> None:
    env = build_env({}, RADEON_780M, task_id=1, task_env={"CUDA_VISIBLE_DEVICES": "0"}, rocm_index=0)
    assert "CUDA_VISIBLE_DEVICES" not in env


def test_missing_vulkan_index_is_a_clear_error() -> None:
    spec = TaskSpec(kind="vulkan", name="up", argv=("tool", "-g", "{vk_index}"))
    values = placeholder_values(spec, device_key="cpu", vk_index=None)
    with pytest.raises(LaunchError, match="no Vulkan device index is known for cpu"):
        render_argv(spec, values)
    with pytest.raises(LaunchError, match="GGML_VK_VISIBLE_DEVICES: no Vulkan device index"):
        build_env({}, CPU_INFO, task_id=1, task_env={"GGML_VK_VISIBLE_DEVICES": "{vk_index}"}, values=values)


def test_ggml_vulkan_selection_names_the_device_and_nothing_on_the_cpu() -> None:
    """ggml takes every discrete and integrated GPU without GGML_VK_VISIBLE_DEVICES (and skips CPU-type
    devices): a llama-server sent to the 780M would split its layers over the 5060 Ti too. A value from
    the user's shell never reaches the job; the task's own stands only where no index is known."""
    shell = {**BASE, "GGML_VK_VISIBLE_DEVICES": "0,1"}
    assert build_env(shell, RADEON_780M, task_id=1, vulkan_index=1)["GGML_VK_VISIBLE_DEVICES"] == "1"
    assert "GGML_VK_VISIBLE_DEVICES" not in build_env(shell, RADEON_780M, task_id=1)
    assert build_env(shell, CPU_INFO, task_id=1, vulkan_index=1)["GGML_VK_VISIBLE_DEVICES"] == ""
    own = {"GGML_VK_VISIBLE_DEVICES": "2"}
    assert build_env(shell, RADEON_780M, task_id=1, task_env=own)["GGML_VK_VISIBLE_DEVICES"] == "2"
    mine = build_env(shell, RADEON_780M, task_id=1, task_env=own, vulkan_index=0)
    assert mine["GGML_VK_VISIBLE_DEVICES"] == "0"


def test_which_tasks_get_a_ggml_vulkan_index() -> None:
    """vulkan and command tasks on a GPU; never a torch task, the CPU, or a simulated GPU that no real
    Vulkan device backs (its demo rank would point a real program at another device). None of these
    cases asks the Vulkan loader."""
    command = TaskSpec(kind="command", name="serve", argv=("llama-server", "-m", "m.gguf"))
    torch = TaskSpec(kind="torch", name="t", script="/s/t.py")
    assert vulkan_selection_index(command, RADEON_780M, {}, [RADEON_780M, RTX_5060_TI]) is None
    assert vulkan_selection_index(command, CPU_INFO, {}, [RADEON_780M]) is None
    backed = dataclasses.replace(RADEON_780M, vulkan_name="llvmpipe")
    assert vulkan_selection_index(torch, backed, {}, [backed]) is None


def test_hostile_file_names_are_single_elements() -> None:
    name = "/tmp/a'; touch pwned #{out}.png"
    spec = TaskSpec(
        kind="command",
        name="c",
        argv=("conv", "{file}", "{out}", "--dev={device}"),
        files=(name,),
        out="{stem}_small.png",
    )
    argv = render_argv(spec, placeholder_values(spec, device_key="cpu", vk_index=None))
    assert argv == ["conv", name, "/tmp/a'; touch pwned #{out}_small.png", "--dev=cpu"]


def test_torch_argv_is_python_script_args() -> None:
    spec = TaskSpec(
        kind="torch", name="t", script="/s/train me.py", args=("--in", "{file}"), files=("/d/x y.png",)
    )
    argv = render_argv(
        spec, placeholder_values(spec, device_key="cpu", vk_index=None), python="/venv/bin/python"
    )
    assert argv == ["/venv/bin/python", "/s/train me.py", "--in", "/d/x y.png"]


def test_rocm_index_from_a_captured_kfd_topology() -> None:
    real = dataclasses.replace(RADEON_780M, simulated=False)
    assert rocm_index_for(real, sysfs_root=FIXTURES / "phoenix") == 0


def test_rocm_index_without_kfd_is_the_rank_among_amd_gpus(tmp_path: Path) -> None:
    other = dataclasses.replace(RADEON_780M, key="pci:0000:03:00.0", simulated=False)
    mine = dataclasses.replace(RADEON_780M, simulated=False)
    assert rocm_index_for(mine, [other, mine, RTX_5060_TI], sysfs_root=tmp_path) == 1
    assert rocm_index_for(mine, [], sysfs_root=tmp_path) == 0


def test_a_tilde_in_a_file_name_is_a_character(tmp_path: Path) -> None:
    """`~user.png` must not be read as another user's home (or fail because there is no such user)."""
    from gputray.scheduler.jobs.invocation import out_path

    image = tmp_path / "~nosuchuser.png"
    spec = TaskSpec(kind="vulkan", name="x", argv=("t", "{out}"), files=(str(image),), out="{stem}_x4.png")
    assert out_path(spec) == str(tmp_path / "~nosuchuser_x4.png")
    root_named = TaskSpec(
        kind="vulkan", name="x", argv=("t", "{out}"), files=(str(tmp_path / "~root.png"),), out="{stem}.jpg"
    )
    assert out_path(root_named) == str(tmp_path / "~root.jpg")
    home_template = TaskSpec(
        kind="vulkan", name="x", argv=("t", "{out}"), files=(str(image),), out="~/done/{stem}.png"
    )
    assert out_path(home_template) == str(
        Path.home() / "done" / "~nosuchuser.png"
    )  # the template's own ~ is home


def test_python_jobs_on_windows_write_their_log_in_utf8(monkeypatch: pytest.MonkeyPatch) -> None:
    """The log is read as UTF-8; Windows would have Python write it in cp1252 (and fail on 学習)."""
    monkeypatch.setattr(sys, "platform", "win32")
    assert log_encoding_env({"PATH": "C:\\bin"}) == {"PATH": "C:\\bin", "PYTHONIOENCODING": "utf-8"}
    assert log_encoding_env({"PYTHONIOENCODING": "cp932"}) == {"PYTHONIOENCODING": "cp932"}  # the user's
    assert log_encoding_env({"PYTHONUTF8": "0"}) == {"PYTHONUTF8": "0"}
    monkeypatch.setattr(sys, "platform", "linux")
    assert log_encoding_env({"PATH": "/bin"}) == {"PATH": "/bin"}  # the locale's encoding, as in a shell


def test_a_job_env_built_for_windows_carries_utf8_for_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    assert build_env({"PATH": "C:\\bin"}, CPU_INFO, task_id=3)["PYTHONIOENCODING"] == "utf-8"
