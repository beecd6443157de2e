"""Vulkan enumeration against the real loader with Mesa's lavapipe (mesa-vulkan-drivers)."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import wait_for

from gputray.monitor import vulkan, vulkan_layouts, vulkan_why
from gputray.monitor.vulkan import (
    VulkanDevice,
    VulkanEnumeration,
    enumerate_devices,
    format_luid,
    from_json,
    parse_uuid,
    to_json,
)
from gputray.scheduler.reasons.render import render

LVP_ICD = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")

needs_lavapipe = pytest.mark.skipif(
    not LVP_ICD.exists() or ctypes.util.find_library("vulkan") is None,
    reason="needs libvulkan1 and mesa-vulkan-drivers (lavapipe)",
)


def _vulkaninfo_summary() -> str | None:
    exe = shutil.which("vulkaninfo")
    if exe is None:
        return None
    done = subprocess.run([exe, "--summary"], capture_output=True, text=True, timeout=60, check=False)
    return done.stdout


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="sizes checked for 64-bit")
def test_struct_layouts_match_vulkan_core_h() -> None:
    # Sizes printed by a C program compiled against vulkan_core.h 1.3.239 on x86-64.
    assert ctypes.sizeof(vulkan_layouts.VkPhysicalDeviceLimits) == 504
    assert ctypes.sizeof(vulkan_layouts.VkPhysicalDeviceProperties) == 824
    assert vulkan_layouts.VkPhysicalDeviceProperties.sparseProperties.offset == 800
    assert vulkan_layouts.VkPhysicalDeviceProperties.limits.offset == 296
    assert ctypes.sizeof(vulkan_layouts.VkPhysicalDeviceProperties2) == 840
    assert ctypes.sizeof(vulkan_layouts.VkPhysicalDeviceIDProperties) == 64
    assert ctypes.sizeof(vulkan_layouts.VkPhysicalDevicePCIBusInfoPropertiesEXT) == 32
    assert ctypes.sizeof(vulkan_layouts.VkPhysicalDeviceDriverProperties) == 536
    assert ctypes.sizeof(vulkan_layouts.VkExtensionProperties) == 260
    assert ctypes.sizeof(vulkan_layouts.VkApplicationInfo) == 48
    assert ctypes.sizeof(vulkan_layouts.VkInstanceCreateInfo) == 64


@needs_lavapipe
def test_lavapipe_enumerates_like_vulkaninfo() -> None:
    enum = enumerate_devices()
    assert enum.available, enum.why
    lvp = [d for d in enum.devices if d.driver_name == "llvmpipe"]
    assert lvp, enum
    dev = lvp[0]
    assert dev.device_type == "cpu"
    assert dev.vendor_id == 0x10005
    assert dev.name.startswith("llvmpipe")
    assert dev.pci_bdf is None  # lavapipe has no VK_EXT_pci_bus_info
    assert dev.luid is None
    assert [d.index for d in enum.devices] == list(range(len(enum.devices)))
    assert dev.uuid is not None and re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", dev.uuid)
    assert dev.nvidia_uuid == f"GPU-{dev.uuid}"

    summary = _vulkaninfo_summary()
    if summary is None:
        pytest.skip("vulkaninfo not installed")
    assert f"deviceName         = {dev.name}" in summary
    assert f"deviceUUID         = {dev.uuid}" in summary
    assert f"apiVersion         = {dev.api_version}" in summary
    assert f"driverName         = {dev.driver_name}" in summary
    assert f"Vulkan Instance Version: {enum.instance_version}" in summary


LIMITS_PROBE = r"""
import ctypes, json
from gputray.monitor import vulkan_layouts as v
from gputray.monitor import vulkan_loader
loader = vulkan_loader._Loader(vulkan_loader.load_loader())
app = v.VkApplicationInfo(sType=0, apiVersion=v.VK_API_VERSION_1_1)
info = v.VkInstanceCreateInfo(sType=1, pApplicationInfo=ctypes.pointer(app))
inst = v.VkHandle()
create = loader.proc(None, "vkCreateInstance", v.PFN_vkCreateInstance)
assert create(ctypes.byref(info), None, ctypes.byref(inst)) == 0
enum_pd = loader.proc(inst.value, "vkEnumeratePhysicalDevices", v.PFN_vkEnumeratePhysicalDevices)
count = v.u32(1)
handles = (v.VkHandle * 1)()
enum_pd(inst, ctypes.byref(count), handles)
props = v.VkPhysicalDeviceProperties2(sType=v.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2)
get = loader.proc(inst.value, "vkGetPhysicalDeviceProperties2", v.PFN_vkGetPhysicalDeviceProperties2)
get(handles[0], ctypes.byref(props))
lim = props.properties.limits
names = ("maxImageDimension2D", "maxComputeSharedMemorySize", "timestampPeriod",
         "lineWidthGranularity", "optimalBufferCopyRowPitchAlignment", "nonCoherentAtomSize")
print(json.dumps({k: getattr(lim, k) for k in names}))
"""


@needs_lavapipe
def test_limits_layout_reads_the_values_vulkaninfo_prints() -> None:
    """The last field of VkPhysicalDeviceLimits lands right only if every field before it does."""
    exe = shutil.which("vulkaninfo")
    if exe is None:
        pytest.skip("vulkaninfo not installed")
    env = {**os.environ, "VK_ICD_FILENAMES": str(LVP_ICD)}
    probe = [sys.executable, "-c", LIMITS_PROBE]
    done = subprocess.run(probe, capture_output=True, text=True, env=env, timeout=60, check=True)
    ours = json.loads(done.stdout)
    full = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=60, check=False).stdout
    for name, value in ours.items():
        m = re.search(rf"^\s+{name}\s+= (\S+)$", full, re.MULTILINE)
        assert m is not None, name
        text = m.group(1)
        expected = int(text, 16) if text.startswith("0x") else float(text)
        assert value == pytest.approx(expected), name


@needs_lavapipe
def test_job_environment_reaches_the_enumeration() -> None:
    # lavapipe names itself after its vector width, which LP_NATIVE_VECTOR_WIDTH sets.
    env = {**os.environ, "LP_NATIVE_VECTOR_WIDTH": "128", "VK_ICD_FILENAMES": str(LVP_ICD)}
    enum = enumerate_devices(env)
    assert enum.available, enum.why
    assert [d.name for d in enum.devices] == [enum.devices[0].name]
    assert "128 bits" in enum.devices[0].name


@needs_lavapipe
def test_driver_list_from_environment_changes_indices(tmp_path: Path) -> None:
    """VK_ICD_FILENAMES / VK_DRIVER_FILES decide which devices exist and in what order."""
    second = tmp_path / "second icd ü.json"
    second.write_text(LVP_ICD.read_text())
    two = enumerate_devices({**os.environ, "VK_ICD_FILENAMES": f"{LVP_ICD}{os.pathsep}{second}"})
    assert two.available, two.why
    assert [d.index for d in two.devices] == [0, 1]
    assert {d.driver_name for d in two.devices} == {"llvmpipe"}

    none = enumerate_devices({**os.environ, "VK_DRIVER_FILES": str(tmp_path / "missing.json")})
    assert not none.available
    assert none.devices == ()
    assert isinstance(none.why, vulkan_why.CallFailed) and none.why.no_driver, none.why
    assert render(none.why).startswith("Vulkan not available") and "ICD" in render(none.why)


@needs_lavapipe
@pytest.mark.parametrize(
    "extra",
    [{"MESA_VK_DEVICE_SELECT": "10005:0!"}, {"DRI_PRIME": "1"}, {"MESA_VK_DEVICE_SELECT": "1002:15bf"}],
)
def test_device_select_layer_settings_still_enumerate(extra: dict[str, str]) -> None:
    enum = enumerate_devices({**os.environ, "VK_ICD_FILENAMES": str(LVP_ICD), **extra})
    assert enum.available, enum.why
    assert enum.devices[0].driver_name == "llvmpipe"


@needs_lavapipe
def test_device_select_list_mode_gives_a_reason() -> None:
    enum = enumerate_devices({**os.environ, "MESA_VK_DEVICE_SELECT": "list"})
    if enum.available:  # older/newer device-select layers may not exit in list mode
        assert enum.devices
    else:
        assert enum.why is not None and "MESA_VK_DEVICE_SELECT=list" in render(enum.why)


def test_no_loader_gives_a_clear_reason_not_a_traceback(tmp_path: Path) -> None:
    enum = enumerate_devices({**os.environ, vulkan.LOADER_ENV: str(tmp_path / "libvulkan.so.1")})
    assert not enum.available
    assert enum.devices == ()
    assert isinstance(enum.why, vulkan_why.NoLoader), enum.why
    assert render(enum.why).startswith("Vulkan not available: no Vulkan loader could be loaded")
    assert "Traceback" not in render(enum.why)


def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake python.sh"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script")
def test_hanging_worker_is_killed_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    python = _script(tmp_path, f'sleep 300 &\necho $! > "{pid_file}"\nwait\n')
    enum = enumerate_devices(timeout_s=1.0, python=python)
    assert not enum.available
    assert enum.why == vulkan_why.WorkerHung(timeout_s=1.0)
    assert "hung for 1 s and was killed" in render(enum.why)
    child = int(pid_file.read_text())
    # The grandchild was in the worker's process group and got SIGKILL too (it may linger as a zombie
    # of init for a moment, so look at its state rather than its existence). On a loaded machine it
    # can still be running for a moment before the signal is acted on; unkilled, it would sleep 300 s.

    def dead() -> bool:
        try:
            stat = Path(f"/proc/{child}/stat").read_text()
        except FileNotFoundError:
            return True
        return stat.split(") ", 1)[1][0] in "ZX"

    wait_for(dead, timeout_s=10.0, what=f"the worker's child {child} to die")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script")
def test_a_worker_whose_child_keeps_its_pipes_open_is_read_when_it_exits(tmp_path: Path) -> None:
    """The worker prints its result and exits, leaving a process it started that holds its stdout and
    stderr (under Wine: the desktop process the worker's first use of the X11 driver starts). Its
    result counts. Before: the parent waited for the pipes' end and, at the timeout, reported the
    enumeration as hung (the Wine test `test_devices_lists_lavapipe_through_wines_vulkan` failed so)."""
    pid_file = tmp_path / "child.pid"
    result = '{"why": null, "instance_version": "1.3.0", "devices": []}'
    python = _script(tmp_path, f"sleep 300 &\necho $! > \"{pid_file}\"\necho '{result}'\n")
    try:
        enum = enumerate_devices(timeout_s=20.0, python=python)
        assert enum.why is None and enum.instance_version == "1.3.0", enum
    finally:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_crashing_worker_reports_the_signal(tmp_path: Path) -> None:
    python = _script(tmp_path, "echo 'radv: fatal' >&2\nkill -SEGV $$\n")
    enum = enumerate_devices(python=python)
    assert not enum.available
    assert enum.why == vulkan_why.WorkerDied(signal=11, stderr=("radv: fatal",))
    assert "killed by signal 11" in render(enum.why) and "radv: fatal" in render(enum.why)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script")
def test_garbage_output_is_a_reason(tmp_path: Path) -> None:
    enum = enumerate_devices(python=_script(tmp_path, "echo 'not json'\n"))
    assert not enum.available
    assert isinstance(enum.why, vulkan_why.UnreadableResult), enum.why
    assert "unreadable" in render(enum.why)


def test_json_round_trip_and_validation() -> None:
    dev = VulkanDevice(
        index=1,
        name="AMD Radeon 780M (RADV PHOENIX)",
        device_type="integrated",
        vendor_id=0x1002,
        device_id=0x15BF,
        uuid="00000000-6400-0000-0000-000000000000",
        driver_name="radv",
        pci_bdf="0000:64:00.0",
        driver_id=3,
        api_version="1.3.289",
    )
    enum = VulkanEnumeration(devices=(dev,), instance_version="1.3.289")
    assert from_json(json.loads(json.dumps(to_json(enum)))) == enum
    with pytest.raises(ValueError):
        from_json({"devices": [{"index": "zero"}]})
    with pytest.raises(ValueError):
        from_json({"devices": [{**to_json(enum)["devices"][0], "device_type": "quantum"}]})
    with pytest.raises(ValueError):
        from_json([1, 2])


def test_uuid_and_luid_spelling() -> None:
    raw = bytes.fromhex("6d65736132322e332e36000000000000")
    assert vulkan.format_uuid(raw) == "6d657361-3232-2e33-2e36-000000000000"
    assert parse_uuid("GPU-6d657361-3232-2e33-2e36-000000000000") == raw
    assert parse_uuid("6D6573613232") is None
    assert format_luid(0, 0xD1B5) == "0x00000000_0x0000D1B5"


@needs_lavapipe
def test_jobs_python_variables_do_not_break_the_worker(tmp_path: Path) -> None:
    """A job env made for another Python (a venv's PYTHONHOME/PYTHONPATH) must not break our worker."""
    env = {
        **os.environ,
        "PYTHONHOME": str(tmp_path / "other-python"),
        "PYTHONPATH": str(tmp_path / "site-packages"),
        "VK_ICD_FILENAMES": str(LVP_ICD),
    }
    enum = enumerate_devices(env)
    assert enum.available, enum.why
    assert enum.devices[0].driver_name == "llvmpipe"


def _renamed_lavapipe(tmp_path: Path) -> Path | None:
    """A second, distinguishable Vulkan driver: a copy of lavapipe that calls itself "llvmpipX".

    Two real devices whose order depends only on the environment, which is what Mesa's device-select
    or DRI_PRIME do to an NVIDIA + AMD machine.
    """
    manifest = json.loads(LVP_ICD.read_text())
    library = Path(manifest["ICD"]["library_path"])
    if not library.is_absolute():
        found = ctypes.util.find_library("vulkan_lvp")
        if found is None:
            return None
        library = Path("/usr/lib/x86_64-linux-gnu") / found
    data = library.read_bytes()
    if data.count(b"llvmpipe (LLVM") != 1:
        return None
    copy = tmp_path / "libvulkan_lvpX.so"
    copy.write_bytes(data.replace(b"llvmpipe (LLVM", b"llvmpipX (LLVM"))
    manifest["ICD"]["library_path"] = str(copy)
    icd = tmp_path / "lvpX icd.json"
    icd.write_text(json.dumps(manifest))
    return icd


@needs_lavapipe
def test_reordering_environment_changes_indices_like_vulkaninfo(tmp_path: Path) -> None:
    icd_x = _renamed_lavapipe(tmp_path)
    if icd_x is None:
        pytest.skip("this lavapipe build cannot be copied under another name")
    orders = [f"{LVP_ICD}{os.pathsep}{icd_x}", f"{icd_x}{os.pathsep}{LVP_ICD}"]
    seen: list[list[str]] = []
    for order in orders:
        env = {**os.environ, "VK_ICD_FILENAMES": order}
        enum = enumerate_devices(env)
        assert enum.available, enum.why
        names = [d.name.split(" ")[0] for d in sorted(enum.devices, key=lambda d: d.index)]
        assert sorted(names) == ["llvmpipX", "llvmpipe"]
        seen.append(names)
        exe = shutil.which("vulkaninfo")
        if exe is not None:
            out = subprocess.run(
                [exe, "--summary"], capture_output=True, text=True, env=env, timeout=60, check=False
            ).stdout
            listed = re.findall(r"deviceName\s+= (\S+)", out)
            assert listed == names  # our index i is vulkaninfo's GPUi in the same environment
    assert seen[0] == list(reversed(seen[1]))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script")
def test_why_there_is_no_list_is_a_code_worded_in_english_and_in_japanese(tmp_path: Path) -> None:
    """#31: the enumeration's reasons were English only. The worker's (no loader) crosses its JSON as a
    code, the parent's (a worker that died) is one too; the loader's and the driver's own words are kept as
    written inside them, in either language."""
    missing = tmp_path / "libvulkan.so.1"
    enum = enumerate_devices({**os.environ, vulkan.LOADER_ENV: str(missing)})
    assert isinstance(enum.why, vulkan_why.NoLoader) and enum.why.tried[0].startswith(f"{missing}: ")
    ja = render(enum.why, "ja")
    assert ja.startswith(f"Vulkan を使えません: Vulkan ローダーを読み込めませんでした（{missing}: "), ja
    died = enumerate_devices(python=_script(tmp_path, "echo 'radv: fatal' >&2\nexit 3\n"))
    assert died.why == vulkan_why.WorkerDied(status=3, stderr=("radv: fatal",))
    assert (
        render(died.why) == "Vulkan enumeration exited with status 3 (a broken Vulkan driver?): radv: fatal"
    )
    assert render(died.why, "ja") == (
        "Vulkan の列挙が終了コード 3 で終了しました（Vulkan ドライバーの不具合かもしれません）: radv: fatal"
    )
    garbage = enumerate_devices(python=_script(tmp_path, 'echo \'{"why": {"code": "FromANewerOne"}}\'\n'))
    assert isinstance(garbage.why, vulkan_why.UnreadableResult), garbage.why  # a code it does not know
    assert not re.search(r"\(.*\(", render(garbage.why)), render(garbage.why)  # English brackets never nest
