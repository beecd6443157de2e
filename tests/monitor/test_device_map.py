"""Vulkan index → device key on recorded enumerations of an RTX 5060 Ti + Radeon 780M machine.

The recordings follow DESIGN.md's facts: the 5060 Ti at 0000:01:00.0 whose NVML UUID equals its Vulkan
deviceUUID; the 780M at 0000:64:00.0 whose RADV deviceUUID is the packed PCI address; llvmpipe always
last. Which of the two GPUs comes first depends on the environment (Mesa's device-select, DRI_PRIME).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.monitor.device_map import (
    adapter_name_for,
    clear_cache,
    drm_nodes,
    env_cache_key,
    gfx_target_name,
    kfd_gpus,
    map_vulkan_devices,
    radv_uuid_bdf,
    rocm_indices,
    vulkan_index_for,
)
from gputray.monitor.records import DeviceInfo
from gputray.monitor.vulkan import VulkanDevice, VulkanEnumeration
from gputray.monitor.vulkan_why import NoLoader, NoMatch, SecondDriver, SoftwareRenderer
from gputray.scheduler.reasons.render import render

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "amdgpu-sysfs"

KEY_5060 = "pci:0000:01:00.0"
KEY_780M = "pci:0000:64:00.0"

# What the monitor knows (NVML + amdgpu sysfs): the demo's two GPUs, as the real backends report them.
KNOWN = (
    replace(RTX_5060_TI, backend="nvml", simulated=False),
    replace(RADEON_780M, backend="amd_sysfs", simulated=False),
)

NV = VulkanDevice(
    index=0,
    name="NVIDIA GeForce RTX 5060 Ti",
    device_type="discrete",
    vendor_id=0x10DE,
    device_id=0x2D04,
    uuid="5060d3e1-7a2b-4c1e-9f00-0123456789ab",
    driver_name="NVIDIA",
    pci_bdf="0000:01:00.0",
    driver_id=4,
    api_version="1.4.303",
)
RADV = VulkanDevice(
    index=1,
    name="AMD Radeon 780M Graphics (RADV PHOENIX)",
    device_type="integrated",
    vendor_id=0x1002,
    device_id=0x15BF,
    uuid="00000000-6400-0000-0000-000000000000",
    driver_name="radv",
    pci_bdf="0000:64:00.0",
    driver_id=3,
    api_version="1.4.305",
)
LVP = VulkanDevice(
    index=2,
    name="llvmpipe (LLVM 19.1.7, 256 bits)",
    device_type="cpu",
    vendor_id=0x10005,
    device_id=0,
    uuid="6d657361-3234-2e33-2e30-000000000000",
    driver_name="llvmpipe",
    driver_id=13,
)

NVIDIA_FIRST = (NV, RADV, LVP)
IGPU_FIRST = (replace(RADV, index=0), replace(NV, index=1), LVP)  # DRI_PRIME / device-select default


def keys(devices: tuple[VulkanDevice, ...], known: tuple[DeviceInfo, ...] = KNOWN) -> list[str | None]:
    return [m.key for m in map_vulkan_devices(devices, known)]


@pytest.mark.parametrize("order", [NVIDIA_FIRST, IGPU_FIRST], ids=["nvidia-first", "igpu-first"])
def test_both_device_orders_map_to_the_right_keys(order: tuple[VulkanDevice, ...]) -> None:
    mappings = map_vulkan_devices(order, KNOWN)
    by_index = {m.device.index: m for m in mappings}
    for m in mappings:
        if m.device.vendor_id == 0x10DE:
            assert (m.key, m.status, m.method) == (KEY_5060, "mapped", "uuid")
        elif m.device.vendor_id == 0x1002:
            assert (m.key, m.status, m.method) == (KEY_780M, "mapped", "pci-bus-info")
        else:
            assert (m.key, m.status) == (None, "unmapped")
            assert m.note == SoftwareRenderer()
    assert by_index[2].device.name.startswith("llvmpipe")


def test_radv_uuid_is_the_packed_pci_address() -> None:
    assert radv_uuid_bdf(RADV.uuid) == "0000:64:00.0"
    assert radv_uuid_bdf("00000000-c100-0000-0000-000000000000") == "0000:c1:00.0"
    assert radv_uuid_bdf("01000000-0300-0000-1f00-000007000000") == "0001:03:1f.7"
    # Not a packed address: a hash-like UUID (ANV, NVIDIA) decodes to out-of-range parts.
    assert radv_uuid_bdf(NV.uuid) is None
    assert radv_uuid_bdf(None) is None


def test_radv_without_pci_bus_info_maps_through_its_uuid() -> None:
    no_ext = replace(RADV, pci_bdf=None)
    (m,) = map_vulkan_devices((no_ext,), KNOWN)
    assert (m.key, m.method) == (KEY_780M, "radv-uuid")
    # And without any monitor device list at all: the packed address is the key itself.
    (m,) = map_vulkan_devices((no_ext,), ())
    assert m.key == KEY_780M


def test_nvidia_without_pci_bus_info_needs_the_nvml_uuid() -> None:
    bare = replace(NV, pci_bdf=None, index=0)
    (m,) = map_vulkan_devices((bare,), KNOWN)
    assert (m.key, m.method) == (KEY_5060, "uuid")
    (m,) = map_vulkan_devices((bare,), ())
    assert m.status == "unmapped" and m.key is None
    assert m.note == NoMatch(no_gpus=True)


def test_uuid_wins_over_a_disagreeing_pci_address() -> None:
    # Behind a Thunderbolt/OCuLink bridge the bus number can change between boots; the UUID cannot.
    moved = replace(NV, pci_bdf="0000:05:00.0")
    (m,) = map_vulkan_devices((moved,), KNOWN)
    assert m.key == KEY_5060


def test_second_driver_for_the_same_gpu_is_marked_duplicate() -> None:
    amdvlk = VulkanDevice(
        index=2,
        name="AMD Radeon 780M Graphics",
        device_type="integrated",
        vendor_id=0x1002,
        device_id=0x15BF,
        uuid="00000000-6400-0000-0000-000000000000",
        driver_name="AMD open-source driver",
        pci_bdf="0000:64:00.0",
        driver_id=1,
    )
    mappings = map_vulkan_devices((NV, RADV, amdvlk, replace(LVP, index=3)), KNOWN)
    assert [m.status for m in mappings] == ["mapped", "mapped", "duplicate", "unmapped"]
    dup = mappings[2]
    assert dup.key == KEY_780M
    assert dup.note == SecondDriver(first_index=1, first_driver="radv", driver="AMD open-source driver")
    assert render(dup.note) == (
        "same GPU as Vulkan device 1 (radv): a second driver (AMD open-source driver) for it"
    )


def test_pci_id_fallback_only_when_unambiguous() -> None:
    odd = VulkanDevice(index=0, name="Radeon", device_type="integrated", vendor_id=0x1002, device_id=0x15BF)
    (m,) = map_vulkan_devices((odd,), KNOWN)
    assert (m.key, m.method) == (KEY_780M, "pci-id")
    twin = replace(KNOWN[1], key="pci:0000:65:00.0", pci_bdf="0000:65:00.0")
    (m,) = map_vulkan_devices((odd,), (*KNOWN, twin))
    assert m.status == "unmapped"


class RecordedLoader:
    """Stands in for the worker subprocess: answers with a recorded enumeration per environment."""

    def __init__(self) -> None:
        self.calls: list[dict[str, str]] = []

    def __call__(self, env: Mapping[str, str]) -> VulkanEnumeration:
        self.calls.append(dict(env))
        igpu_first = env.get("DRI_PRIME") == "1" or env.get("MESA_VK_DEVICE_SELECT", "").startswith("1002")
        return VulkanEnumeration(
            devices=IGPU_FIRST if igpu_first else NVIDIA_FIRST, instance_version="1.4.303"
        )


def test_vulkan_index_follows_the_jobs_environment() -> None:
    clear_cache()
    loader = RecordedLoader()
    base = {"PATH": "/usr/bin", "HOME": "/home/u"}
    assert vulkan_index_for(KEY_780M, base, KNOWN, enumerate_fn=loader) == 1
    assert vulkan_index_for(KEY_5060, base, KNOWN, enumerate_fn=loader) == 0
    prime = {**base, "DRI_PRIME": "1"}
    assert vulkan_index_for(KEY_780M, prime, KNOWN, enumerate_fn=loader) == 0
    assert vulkan_index_for(KEY_5060, prime, KNOWN, enumerate_fn=loader) == 1
    selected = {**base, "MESA_VK_DEVICE_SELECT": "1002:15bf"}
    assert vulkan_index_for(KEY_780M, selected, KNOWN, enumerate_fn=loader) == 0
    assert vulkan_index_for("pci:0000:99:00.0", base, KNOWN, enumerate_fn=loader) is None
    # One enumeration per distinct environment, not per question.
    assert len(loader.calls) == 3
    assert loader.calls[1]["DRI_PRIME"] == "1"


def test_cache_ignores_unrelated_variables_and_expires() -> None:
    clear_cache()
    loader = RecordedLoader()
    now = [100.0]
    a = {"PATH": "/usr/bin", "HOME": "/a", "JOB_NAME": "x"}
    b = {"PATH": "/usr/bin", "HOME": "/b", "JOB_NAME": "y"}
    assert env_cache_key(a) == env_cache_key(b)
    assert vulkan_index_for(KEY_5060, a, KNOWN, enumerate_fn=loader, clock=lambda: now[0]) == 0
    assert vulkan_index_for(KEY_5060, b, KNOWN, enumerate_fn=loader, clock=lambda: now[0]) == 0
    assert len(loader.calls) == 1
    now[0] += 120.0  # an eGPU may have been plugged in meanwhile
    assert vulkan_index_for(KEY_5060, a, KNOWN, enumerate_fn=loader, clock=lambda: now[0]) == 0
    assert len(loader.calls) == 2


def test_vulkan_not_available_gives_no_index() -> None:
    clear_cache()

    def nothing(env: Mapping[str, str]) -> VulkanEnumeration:
        return VulkanEnumeration(why=NoLoader(tried=("libvulkan.so.1: cannot open shared object file",)))

    assert vulkan_index_for(KEY_5060, {"PATH": "/nowhere"}, KNOWN, enumerate_fn=nothing) is None


def test_wgpus_adapter_name_is_the_vulkan_name_only_when_no_other_device_contains_it() -> None:
    """wgpu picks the first adapter whose name contains the value: two cards of one model (or a model
    whose name is inside another's, "RX 7900 XT" in "RX 7900 XTX") get no name, not the wrong card."""
    clear_cache()
    base = {"PATH": "/usr/bin"}
    loader = RecordedLoader()
    assert adapter_name_for(KEY_780M, base, KNOWN, enumerate_fn=loader) == RADV.name
    assert adapter_name_for(KEY_5060, base, KNOWN, enumerate_fn=loader) == NV.name
    assert adapter_name_for("pci:0000:99:00.0", base, KNOWN, enumerate_fn=loader) is None
    xt = replace(NV, name="AMD Radeon RX 7900 XT")
    xtx = replace(RADV, name="amd radeon rx 7900 xtx (RADV NAVI31)")

    def two_radeons(env: Mapping[str, str]) -> VulkanEnumeration:
        return VulkanEnumeration(devices=(xt, xtx, LVP))

    clear_cache()
    assert adapter_name_for(KEY_5060, base, KNOWN, enumerate_fn=two_radeons) is None
    assert adapter_name_for(KEY_780M, base, KNOWN, enumerate_fn=two_radeons) == xtx.name


# ROCm indices from the real KFD topology trees.


def test_rocm_index_from_phoenix_kfd_topology() -> None:
    (gpu,) = kfd_gpus(FIXTURES / "phoenix")
    assert gpu.key == KEY_780M  # location_id 25600 = bus 0x64
    assert gpu.rocm_index == 0
    assert gpu.gfx_target == "gfx1103"
    assert gpu.simd_count == 24  # 12 CUs: the 780M, not the 760M
    assert (gpu.pci_vendor_id, gpu.pci_device_id) == (0x1002, 0x15BF)
    assert rocm_indices(FIXTURES / "phoenix") == {KEY_780M: 0}


def test_rocm_index_from_strixpoint_kfd_topology() -> None:
    (gpu,) = kfd_gpus(FIXTURES / "strixpoint")
    assert (gpu.key, gpu.gfx_target, gpu.rocm_index) == ("pci:0000:c1:00.0", "gfx1150", 0)


def test_rocm_order_is_node_order_in_a_real_sys_layout(tmp_path: Path) -> None:
    """Two GPUs under /sys/class/kfd/...: node 10 sorts after node 2, CPU nodes don't count."""
    nodes = tmp_path / "class" / "kfd" / "kfd" / "topology" / "nodes"
    phoenix_nodes = FIXTURES / "phoenix" / "kfd" / "topology" / "nodes"
    shutil.copytree(phoenix_nodes / "0", nodes / "0")
    shutil.copytree(phoenix_nodes / "1", nodes / "10")
    dgpu = nodes / "2"
    dgpu.mkdir(parents=True)
    (dgpu / "gpu_id").write_text("4242\n")
    (dgpu / "properties").write_text(
        "simd_count 120\ngfx_target_version 110000\nvendor_id 4098\ndevice_id 29772\n"
        "location_id 768\ndomain 0\ndrm_render_minor 129\n"
    )
    gpus = kfd_gpus(tmp_path)
    assert [(g.node, g.key, g.rocm_index) for g in gpus] == [
        (2, "pci:0000:03:00.0", 0),
        (10, KEY_780M, 1),
    ]
    assert gpus[0].render_node == "renderD129"


def test_missing_or_garbage_kfd_gives_nothing(tmp_path: Path) -> None:
    assert kfd_gpus(tmp_path) == ()
    bad = tmp_path / "kfd" / "topology" / "nodes" / "1"
    bad.mkdir(parents=True)
    (bad / "properties").write_bytes(b"\x00\xffgarbage\nsimd_count lots\n")
    assert kfd_gpus(tmp_path) == ()


def test_drm_nodes_from_captured_trees() -> None:
    assert drm_nodes(FIXTURES / "phoenix")[KEY_780M].card == "card1"
    assert drm_nodes(FIXTURES / "phoenix")[KEY_780M].render_node == "renderD128"  # via kfd
    assert drm_nodes(FIXTURES / "rx6900xt")["pci:0000:0c:00.0"].card == "card0"


def test_gfx_target_names() -> None:
    assert gfx_target_name(110003) == "gfx1103"
    assert gfx_target_name(90010) == "gfx90a"
    assert gfx_target_name(120001) == "gfx1201"
    assert gfx_target_name(0) is None
