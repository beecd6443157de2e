"""`gputray devices` as a user runs it (real subprocess, real Vulkan loader with lavapipe), plus the
document builder on a recorded 5060 Ti + 780M machine."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cli import gputray

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.monitor.vulkan import VulkanDevice, VulkanEnumeration
from gputray.scheduler.cli.commands.devices import build_document, render_text

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "amdgpu-sysfs"
LVP_ICD = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
FIELDS = {
    "key",
    "name",
    "vendor",
    "kind",
    "pci_bdf",
    "nvml_index",
    "cuda_uuid",
    "rocm_index",
    "gfx_target",
    "vulkan_index",
    "vulkan_name",
    "vulkan_driver",
    "vulkan_other_indices",
    "drm_card",
    "render_node",
    "windows_luid",
    "seen_by",
}

needs_lavapipe = pytest.mark.skipif(not LVP_ICD.exists(), reason="needs mesa-vulkan-drivers (lavapipe)")


def devices_json(*args: str, home: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = gputray("devices", "--json", *args, home=home, env=env)
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


@needs_lavapipe
def test_devices_json_lists_the_lavapipe_vulkan_device(tmp_path: Path) -> None:
    doc = devices_json(home=tmp_path)
    assert doc["vulkan"]["available"] is True, doc["vulkan"]
    lvp = [u for u in doc["unmapped_vulkan"] if u["driver"] == "llvmpipe"]
    assert lvp, doc["unmapped_vulkan"]
    assert lvp[0]["name"].startswith("llvmpipe")
    assert lvp[0]["device_type"] == "cpu"
    assert "software renderer" in lvp[0]["reason"]
    assert lvp[0]["reason_code"] == {"code": "SoftwareRenderer"}
    assert isinstance(lvp[0]["vulkan_index"], int)
    for row in doc["devices"]:
        assert set(row) == FIELDS


@needs_lavapipe
def test_devices_text_names_lavapipe(tmp_path: Path) -> None:
    result = gputray("devices", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Vulkan devices that are not one of these GPUs:" in result.stdout
    assert "llvmpipe" in result.stdout


@needs_lavapipe
def test_vulkan_indices_follow_the_callers_environment(tmp_path: Path) -> None:
    second = tmp_path / "second icd.json"
    second.write_text(LVP_ICD.read_text())
    doc = devices_json(home=tmp_path, env={"VK_ICD_FILENAMES": f"{LVP_ICD}{os.pathsep}{second}"})
    assert [u["vulkan_index"] for u in doc["unmapped_vulkan"]] == [0, 1]
    assert doc["vulkan"]["device_count"] == 2


def test_no_vulkan_driver_is_a_reason_not_a_failure(tmp_path: Path) -> None:
    env = {"VK_DRIVER_FILES": str(tmp_path / "none.json"), "VK_ICD_FILENAMES": str(tmp_path / "none.json")}
    doc = devices_json(home=tmp_path, env=env)
    assert doc["vulkan"]["available"] is False
    assert doc["vulkan"]["reason"].startswith("Vulkan not available")
    assert doc["vulkan"]["reason_code"] == {  # the code beside the words, for scripts (#31)
        "code": "CallFailed",
        "call": "vkCreateInstance",
        "result": "VK_ERROR_INCOMPATIBLE_DRIVER",
        "no_driver": True,
    }
    assert doc["unmapped_vulkan"] == []
    text = gputray("devices", home=tmp_path, env=env)
    assert text.returncode == 0
    assert "Vulkan: Vulkan not available" in text.stdout


def test_captured_phoenix_tree_gives_rocm_index_and_drm_nodes(tmp_path: Path) -> None:
    doc = devices_json("--sysfs-root", str(FIXTURES / "phoenix"), home=tmp_path)
    row = next(r for r in doc["devices"] if r["key"] == "pci:0000:64:00.0")
    assert row["name"] == "Radeon 780M"
    assert row["rocm_index"] == 0
    assert row["gfx_target"] == "gfx1103"
    assert (row["drm_card"], row["render_node"]) == ("card1", "renderD128")
    assert row["kind"] == "integrated"
    assert row["cuda_uuid"] is None and row["nvml_index"] is None


def test_demo_lists_both_simulated_gpus(tmp_path: Path) -> None:
    doc = devices_json("--demo", home=tmp_path)
    assert doc["demo"] is True
    rows = {r["key"]: r for r in doc["devices"]}
    nv, amd = rows["pci:0000:01:00.0"], rows["pci:0000:64:00.0"]
    assert nv["nvml_index"] == 0 and nv["cuda_uuid"].startswith("GPU-")
    assert amd["cuda_uuid"] is None and amd["render_node"] == "renderD128"
    assert doc["vulkan"]["available"] is False  # the demo does not pretend to know this machine's Vulkan


def test_with_a_demo_owner_running_devices_says_its_list_is_the_real_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputray.scheduler.owner import Owner
    from gputray.scheduler.paths import app_paths

    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path))
    owner = Owner(app_paths(), demo=True)
    owner.start()
    try:
        real = devices_json(home=tmp_path)
        demo = devices_json("--demo", home=tmp_path)
    finally:
        owner.stop()
    assert real["demo"] is False and any("the running gputray is a demo" in n for n in real["notes"])
    assert demo["demo"] is True and not any("running gputray" in n for n in demo["notes"])
    after = devices_json(home=tmp_path)  # the owner is gone: no note
    assert not any("running gputray" in n for n in after["notes"])


def test_help_explains_what_the_names_are_for(tmp_path: Path) -> None:
    result = gputray("devices", "--help", home=tmp_path)
    assert result.returncode == 0
    assert "GGML_VK_VISIBLE_DEVICES" in result.stdout
    assert "CUDA_VISIBLE_DEVICES" in result.stdout


# -- the document on a recorded 5060 Ti + 780M machine ---------------------------------------------

NV_INFO = replace(RTX_5060_TI, backend="nvml", simulated=False)
# Render node and gfx target left unset: the document must read them from the recorded sysfs tree.
AMD_INFO = replace(RADEON_780M, backend="amd_sysfs", simulated=False, render_node=None, gfx_target=None)
RECORDED = VulkanEnumeration(
    devices=(
        VulkanDevice(
            0,
            "AMD Radeon 780M Graphics (RADV PHOENIX)",
            "integrated",
            0x1002,
            0x15BF,
            uuid="00000000-6400-0000-0000-000000000000",
            driver_name="radv",
            driver_id=3,
        ),
        VulkanDevice(
            1,
            "NVIDIA GeForce RTX 5060 Ti",
            "discrete",
            0x10DE,
            0x2D04,
            uuid="5060d3e1-7a2b-4c1e-9f00-0123456789ab",
            driver_name="NVIDIA",
            pci_bdf="0000:01:00.0",
        ),
        VulkanDevice(
            2,
            "AMD Radeon 780M Graphics",
            "integrated",
            0x1002,
            0x15BF,
            driver_name="AMD open-source driver",
            pci_bdf="0000:64:00.0",
            driver_id=1,
        ),
        VulkanDevice(3, "llvmpipe (LLVM 19.1.7, 256 bits)", "cpu", 0x10005, 0, driver_name="llvmpipe"),
    ),
    instance_version="1.4.303",
)


def test_document_gives_every_name_of_both_gpus() -> None:
    doc = build_document([NV_INFO, AMD_INFO], RECORDED, FIXTURES / "phoenix")
    rows = {r["key"]: r for r in doc["devices"]}
    nv, amd = rows["pci:0000:01:00.0"], rows["pci:0000:64:00.0"]
    assert (nv["nvml_index"], nv["cuda_uuid"], nv["vulkan_index"], nv["rocm_index"]) == (
        0,
        "GPU-5060d3e1-7a2b-4c1e-9f00-0123456789ab",
        1,
        None,
    )
    assert (amd["vulkan_index"], amd["vulkan_driver"], amd["rocm_index"]) == (0, "radv", 0)
    assert amd["render_node"] == "renderD128"
    assert [o["index"] for o in amd["vulkan_other_indices"]] == [2]
    assert [u["vulkan_index"] for u in doc["unmapped_vulkan"]] == [3]
    text = render_text(doc)
    assert "Vulkan index  0  [radv]; also 2 [AMD open-source driver, second driver]" in text
    assert "CUDA UUID     GPU-5060d3e1-7a2b-4c1e-9f00-0123456789ab" in text
    assert "Vulkan 3  llvmpipe" in text
    assert (
        "Selected by" not in text
    )  # no env probed there (tests/scheduler/pyenvs/test_selection_matrix.py has one)


@pytest.mark.parametrize("command", [["devices", "--vulkan-timeout", "0"], ["doctor", "--timeout", "-1"]])
def test_timeouts_must_be_positive(tmp_path: Path, command: list[str]) -> None:
    result = gputray(*command, home=tmp_path)
    assert result.returncode == 2 and "expected a positive number of seconds" in result.stderr
