"""The demo pair backed by two real Vulkan devices (issue 29 item 1): a scenario's ``[[vulkan]]`` tables
name the lavapipe device behind the simulated GeForce RTX 5060 Ti and the one behind the Radeon 780M
(tests/two_lavapipes.py builds them); ``gputray devices`` maps each to its Vulkan index, and a job run
through the queue gets that index in ``{vk_index}`` and ``GGML_VK_VISIBLE_DEVICES``, and finds, through
the real Vulkan loader, the device it was meant to have."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli import gputray
from real_owner import home_paths
from two_lavapipes import two_lavapipes
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="lavapipe through the Linux Vulkan loader")

SCENARIO = """
[[vulkan]]
device = "5060ti"
name = "lavapipe2"

[[vulkan]]
device = "780m"
name = "llvmpipe"
"""
# what the job itself sees: the Vulkan device at the index gputray gave it, through the real loader
WHICH = """
import os, sys
from gputray.monitor.vulkan import enumerate_devices
index = int(sys.argv[1])
found = enumerate_devices(dict(os.environ))
print("GGML_VK_VISIBLE_DEVICES=" + os.environ["GGML_VK_VISIBLE_DEVICES"])
print(f"Vulkan{index}: {found.devices[index].name}")
"""


@pytest.fixture
def icds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    value = two_lavapipes(tmp_path / "icd")
    monkeypatch.setenv("VK_ICD_FILENAMES", value)
    return value


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "two_lavapipes.toml"
    path.write_text(SCENARIO)
    return path


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, icds: str) -> Paths:
    return home_paths(tmp_path, monkeypatch)


@pytest.fixture
def owner(paths: Paths, scenario: Path) -> Iterator[Owner]:
    owner = Owner(paths, demo=True, scenario=scenario)
    owner.start()
    try:
        yield owner
    finally:
        owner.stop()


def test_devices_maps_each_demo_gpu_to_its_lavapipe(tmp_path: Path, icds: str, scenario: Path) -> None:
    result = gputray("devices", "--json", "--demo-scenario", str(scenario), home=tmp_path / "home")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    by_name = {d["name"]: d for d in doc["devices"]}
    assert by_name["GeForce RTX 5060 Ti"]["vulkan_name"].startswith("lavapipe2 (")
    assert by_name["Radeon 780M"]["vulkan_name"].startswith("llvmpipe (")
    assert {by_name["GeForce RTX 5060 Ti"]["vulkan_index"], by_name["Radeon 780M"]["vulkan_index"]} == {0, 1}
    assert doc["vulkan"]["device_count"] == 2


def test_a_job_through_the_queue_gets_the_vulkan_device_of_its_gpu(owner: Owner, tmp_path: Path) -> None:
    script = tmp_path / "which.py"
    script.write_text(WHICH)
    ids = {}
    for device in ("5060ti", "780m"):
        task = tmp_path / f"{device}.toml"
        task.write_text(
            f'kind = "vulkan"\nname = "which-{device}"\ndevices = ["{device}"]\n'
            f'argv = [{json.dumps(sys.executable)}, {json.dumps(str(script))}, "{{vk_index}}"]\n'
            '[env]\nGGML_VK_VISIBLE_DEVICES = "{vk_index}"\n'
        )
        done = gputray("submit", "--task", str(task), home=tmp_path / "home")
        assert done.returncode == 0, done.stderr
        ids[device] = int(done.stdout.split()[0].lstrip("#"))
    with ipc.IpcClient(owner.paths) as client:
        for device, prefix in (("5060ti", "lavapipe2 ("), ("780m", "llvmpipe (")):
            task_id = ids[device]
            view = wait_for(
                lambda i=task_id: (t := client.ask(rq.Get(id=i)).task).state in ("succeeded", "failed") and t,
                what=f"the {device} job",
            )
            log = Path(str(view.log_path)).read_text()
            assert view.state == "succeeded", log
            index = log.split("GGML_VK_VISIBLE_DEVICES=")[-1].split()[0]
            assert f"Vulkan{index}: {prefix}" in log, log


def test_a_command_job_gets_wgpus_adapter_name_of_its_gpu(owner: Owner, tmp_path: Path) -> None:
    """wgpu ranks every Vulkan device itself (no index reaches it): the job gets the name of its GPU's
    Vulkan device in wgpu's adapter-name variables (tests/scheduler/test_real_programs.py runs wgpu)."""
    says = "import os; e = os.environ; print('names:', e['WGPU_ADAPTER_NAME'], '|', e[os.sys.argv[1]])"
    with ipc.IpcClient(owner.paths) as client:
        for device, name in (("5060ti", "lavapipe2 ("), ("780m", "llvmpipe (")):
            reply = client.ask(
                rq.Run(
                    argv=[sys.executable, "-c", says, "WGPUPY_WGPU_ADAPTER_NAME"],
                    overrides={"device_prefs": [device]},
                )
            )
            task_id = reply.tasks[0].id
            view = wait_for(
                lambda i=task_id: (t := client.ask(rq.Get(id=i)).task).state in ("succeeded", "failed") and t,
                what=f"the {device} job",
            )
            log = Path(str(view.log_path)).read_text()
            assert view.state == "succeeded", log
            said = log.split("names: ")[1].split("\n")[0]
            first, second = said.split(" | ")
            assert first == second and first.startswith(name), log
            assert f"WGPU_ADAPTER_NAME={first}\n" in log  # the header says what the job was given


# a program ggml-like in what it reads: only GGML_VK_VISIBLE_DEVICES, which gputray sets by itself
GGML_LIKE = """
import os
from gputray.monitor.vulkan import enumerate_devices
named = os.environ["GGML_VK_VISIBLE_DEVICES"]
found = enumerate_devices(dict(os.environ))
names = [found.devices[int(i)].name for i in named.split(",")] if named else ["no Vulkan device"]
print("uses: " + ", ".join(names))
"""


def test_a_command_task_gets_ggml_vulkan_selection_without_asking(owner: Owner, tmp_path: Path) -> None:
    """A program run verbatim (``kind = "command"``, no ``[env]``): gputray itself names the GPU's Vulkan
    device in ``GGML_VK_VISIBLE_DEVICES`` (ggml would otherwise take every GPU, and skip lavapipe), and
    none on the CPU."""
    script = tmp_path / "ggml_like.py"
    script.write_text(GGML_LIKE)
    with ipc.IpcClient(owner.paths) as client:
        for device, said in (("780m", "uses: llvmpipe ("), ("cpu", "uses: no Vulkan device")):
            argv, where = [sys.executable, str(script)], {"device_prefs": [device]}
            task_id = client.ask(rq.Run(argv=argv, cwd=str(tmp_path), overrides=where)).tasks[0].id
            view = wait_for(
                lambda i=task_id: (t := client.ask(rq.Get(id=i)).task).state in ("succeeded", "failed") and t,
                what=f"the {device} job",
            )
            log = Path(str(view.log_path)).read_text()
            assert view.state == "succeeded" and said in log, log
