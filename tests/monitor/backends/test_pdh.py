"""Windows PDH rules on recorded counter arrays of an RTX 5060 Ti (eGPU) + Radeon 780M machine.

The reader is the library boundary: ``RecordedReader`` replays what ``PdhGetFormattedCounterArrayW``
returned; everything after it (parsing, Task-Manager aggregation, trust rules, LUID mapping) is real.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from gputray.monitor import busy_why as why
from gputray.monitor.backends import pdh_counters, pdh_ctypes
from gputray.monitor.backends.pdh import WindowsPdhBackend
from gputray.monitor.backends.pdh_counters import (
    ADAPTER_DEDICATED,
    ADAPTER_SHARED,
    ENGINE_UTIL,
    PROCESS_DEDICATED,
    PROCESS_SHARED,
    AdapterDesc,
    CounterArrays,
    CounterItem,
    adapter_memory,
    adapter_utilization,
    map_luids,
    parse_instance,
    process_usage,
)
from gputray.monitor.backends.pdh_ctypes import PdhCtypesReader
from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.monitor.monitor import Monitor, merge_readings
from gputray.monitor.records import DeviceInfo, DeviceReading, Sample
from gputray.monitor.vulkan import VulkanDevice
from gputray.scheduler.reasons.render import render

GIB = 2**30
MIB = 2**20
NV_LUID = "0x00000000_0x0000D1B5"
AMD_LUID = "0x00000000_0x0000C2A1"
EGPU_LUID = "0x00000000_0x0001F00D"
KEY_5060 = "pci:0000:01:00.0"
KEY_780M = "pci:0000:64:00.0"


def eng(pid: int, luid: str, n: int, engtype: str, value: float, valid: bool = True) -> CounterItem:
    high, low = luid.split("_")
    return CounterItem(f"pid_{pid}_luid_{high}_{low}_phys_0_eng_{n}_engtype_{engtype}", value, valid)


def mem(luid: str, value: float, pid: int | None = None) -> CounterItem:
    high, low = luid.split("_")
    prefix = f"pid_{pid}_" if pid is not None else ""
    return CounterItem(f"{prefix}luid_{high}_{low}_phys_0", value)


LLAMA, CHROME, DWM, BLENDER = 4242, 777, 1200, 5150

# llama-server fills the 5060 Ti (16 GiB) and spills 3.2 GiB into shared memory; Chrome decodes video on
# the 780M; dwm composes on the 780M.
FRAME: CounterArrays = {
    ENGINE_UTIL: [
        eng(LLAMA, NV_LUID, 0, "3D", 0.0),
        eng(LLAMA, NV_LUID, 1, "Compute_0", 97.5),
        eng(LLAMA, NV_LUID, 2, "Copy", 12.0),
        eng(CHROME, NV_LUID, 0, "3D", 2.0),
        eng(CHROME, AMD_LUID, 0, "3D", 40.0),
        eng(CHROME, AMD_LUID, 4, "VideoDecode", 35.0),
        eng(DWM, AMD_LUID, 0, "3D", 30.0),
        eng(DWM, AMD_LUID, 2, "Copy", 1.5),
    ],
    ADAPTER_DEDICATED: [mem(NV_LUID, 15.6 * GIB), mem(AMD_LUID, 3.1 * GIB)],
    ADAPTER_SHARED: [mem(NV_LUID, 3.2 * GIB), mem(AMD_LUID, 6.0 * GIB)],
    PROCESS_DEDICATED: [
        mem(NV_LUID, 15.1 * GIB, LLAMA),
        mem(NV_LUID, 300 * MIB, CHROME),
        mem(AMD_LUID, 900 * MIB, CHROME),
        mem(AMD_LUID, 400 * MIB, DWM),
    ],
    PROCESS_SHARED: [
        mem(NV_LUID, 3.1 * GIB, LLAMA),
        mem(AMD_LUID, 2.5 * GIB, CHROME),
        mem(AMD_LUID, 0, DWM),
    ],
}

ADAPTERS = (
    AdapterDesc(
        luid=NV_LUID,
        name="NVIDIA GeForce RTX 5060 Ti",
        vendor_id=0x10DE,
        device_id=0x2D04,
        dedicated_video_bytes=16 * GIB - 300 * MIB,
        shared_system_bytes=15 * GIB,
        pci_bdf="0000:01:00.0",
    ),
    AdapterDesc(
        luid=AMD_LUID,
        name="AMD Radeon 780M Graphics",
        vendor_id=0x1002,
        device_id=0x15BF,
        revision=0xC1,
        dedicated_video_bytes=4 * GIB,
        shared_system_bytes=14 * GIB,
        pci_bdf="0000:64:00.0",
    ),
    AdapterDesc(
        luid="0x00000000_0x0000E0E0",
        name="Microsoft Basic Render Driver",
        vendor_id=0x1414,
        device_id=0x8C,
        shared_system_bytes=14 * GIB,
        software=True,
    ),
)


class RecordedReader:
    """Replays recorded counter arrays; counts how often the query was built."""

    def __init__(self, frames: Sequence[CounterArrays], adapters: Sequence[AdapterDesc] = ADAPTERS) -> None:
        self.frames = list(frames)
        self.adapter_list = list(adapters)
        self.opens = 0
        self.closes = 0
        self.collects = 0
        self.fail_next = False

    def open(self) -> None:
        self.opens += 1

    def collect(self) -> CounterArrays:
        if self.fail_next:
            self.fail_next = False
            raise OSError("PdhCollectQueryData failed with PDH status 0xC0000BBA")
        frame = self.frames[min(self.collects, len(self.frames) - 1)]
        self.collects += 1
        return frame

    def adapters(self) -> Sequence[AdapterDesc]:
        return list(self.adapter_list)

    def close(self) -> None:
        self.closes += 1


def backend(reader: RecordedReader, **kwargs: object) -> WindowsPdhBackend:
    return WindowsPdhBackend(reader, process_name=lambda pid: f"proc{pid}", vulkan=lambda: (), **kwargs)  # type: ignore[arg-type]


# -- instance names ---------------------------------------------------------------------------------


def test_instance_names_parse() -> None:
    inst = parse_instance("pid_1234_luid_0x00000000_0x0000D1B5_phys_0_eng_3_engtype_3D")
    assert inst is not None
    assert (inst.pid, inst.luid, inst.phys, inst.eng, inst.engtype) == (1234, NV_LUID, 0, 3, "3D")
    proc = parse_instance("pid_88_luid_0x00000000_0x0000d1b5_phys_1")
    assert proc is not None and (proc.pid, proc.luid, proc.phys, proc.eng) == (88, NV_LUID, 1, None)
    adapter = parse_instance("luid_0x00000001_0x0000C2A1_phys_0")
    assert adapter is not None and (adapter.pid, adapter.luid) == (None, "0x00000001_0x0000C2A1")
    spaced = parse_instance("pid_9_luid_0x00000000_0x0000D1B5_phys_0_eng_7_engtype_High Priority 3D")
    assert spaced is not None and spaced.engtype == "High Priority 3D"
    assert parse_instance("_Total") is None
    assert parse_instance("pid_x_luid_0x0_0x1_phys_0") is None
    assert parse_instance("") is None


# -- Task-Manager GPU % -------------------------------------------------------------------------------


def test_engine_load_is_summed_over_processes_per_luid() -> None:
    util = adapter_utilization(FRAME[ENGINE_UTIL])
    amd3d = next(e for e in util[AMD_LUID].engines if e.eng == 0)
    assert amd3d.percent == pytest.approx(70.0)  # Chrome 40 + dwm 30 on the same 3D engine
    nv3d = next(e for e in util[NV_LUID].engines if e.eng == 0)
    assert nv3d.percent == pytest.approx(2.0)  # Chrome's 2 % does not leak into the 780M's numbers


def test_adapter_percent_is_the_busiest_engine_not_the_sum() -> None:
    util = adapter_utilization(FRAME[ENGINE_UTIL])
    assert util[NV_LUID].util_percent == pytest.approx(97.5)
    assert util[NV_LUID].busiest_engtype == "Compute_0"
    # 3D 70 % and VideoDecode 35 %: Task Manager shows 70, not 105.
    assert util[AMD_LUID].util_percent == pytest.approx(70.0)
    assert util[AMD_LUID].busiest_engtype == "3D"


def test_summed_engine_is_clamped_to_100() -> None:
    items = [eng(1, NV_LUID, 0, "3D", 60.0), eng(2, NV_LUID, 0, "3D", 55.0), eng(2, NV_LUID, 1, "Copy", 3.0)]
    assert adapter_utilization(items)[NV_LUID].util_percent == 100.0


def test_linked_adapter_engines_are_not_added_together() -> None:
    high, low = NV_LUID.split("_")
    items = [
        CounterItem(f"pid_1_luid_{high}_{low}_phys_0_eng_0_engtype_3D", 60.0),
        CounterItem(f"pid_1_luid_{high}_{low}_phys_1_eng_0_engtype_3D", 50.0),
    ]
    util = adapter_utilization(items)[NV_LUID]
    assert util.util_percent == pytest.approx(60.0)
    assert [(e.phys, e.eng) for e in util.engines] == [(0, 0), (1, 0)]


def test_invalid_negative_and_malformed_items_are_ignored() -> None:
    items = [
        eng(1, NV_LUID, 0, "3D", 50.0),
        eng(2, NV_LUID, 0, "3D", 80.0, valid=False),  # a new instance before its second sample
        eng(3, NV_LUID, 0, "3D", -4.0),
        CounterItem("garbage", 99.0),
        eng(4, NV_LUID, 0, "3D", float("nan")),
    ]
    assert adapter_utilization(items)[NV_LUID].util_percent == pytest.approx(50.0)


def test_idle_adapter_reads_zero() -> None:
    items = [eng(1, AMD_LUID, 0, "3D", 0.0), eng(1, AMD_LUID, 1, "Copy", 0.0)]
    util = adapter_utilization(items)[AMD_LUID]
    assert (util.util_percent, util.busiest_engtype) == (0.0, None)


# -- memory ----------------------------------------------------------------------------------------


def test_adapter_memory_dedicated_and_shared_for_both_gpus() -> None:
    memory = adapter_memory(FRAME)
    assert memory[NV_LUID] == (int(15.6 * GIB), int(3.2 * GIB))
    assert memory[AMD_LUID] == (int(3.1 * GIB), int(6.0 * GIB))


def test_process_memory_and_busiest_engine_per_process() -> None:
    uses = {(p.pid, p.luid): p for p in process_usage(FRAME, rates_valid=True)}
    llama = uses[(LLAMA, NV_LUID)]
    assert llama.dedicated_bytes == int(15.1 * GIB)
    assert llama.shared_bytes == int(3.1 * GIB)  # the spill users must see
    assert llama.util_percent == pytest.approx(97.5)
    assert "Compute_0" in llama.busy_engtypes
    chrome_amd = uses[(CHROME, AMD_LUID)]
    assert chrome_amd.util_percent == pytest.approx(40.0)  # its own busiest engine, not 75
    assert (CHROME, NV_LUID) in uses and (DWM, AMD_LUID) in uses
    # Before rates are trusted, processes still show memory but no %.
    early = {(p.pid, p.luid): p for p in process_usage(FRAME, rates_valid=False)}
    assert early[(LLAMA, NV_LUID)].util_percent is None
    assert early[(LLAMA, NV_LUID)].shared_bytes == int(3.1 * GIB)


# -- the backend: trust, rebuilds, mapping ---------------------------------------------------------


def test_rates_need_two_collections_memory_does_not() -> None:
    reader = RecordedReader([FRAME])
    b = backend(reader)
    first = b.poll(0.0)
    by_key = {r.info.key: r for r in first.readings}
    assert set(by_key) == {KEY_5060, KEY_780M}  # the Basic Render Driver is not a GPU
    assert all(r.sample.util_percent is None for r in first.readings)
    assert by_key[KEY_5060].sample.reason == why.NeedsSecondCollection()
    assert render(by_key[KEY_5060].sample.reason, "ja") == "GPU 使用率には 2 回目の PDH 収集が必要です"
    assert by_key[KEY_5060].sample.vram_used_bytes == int(15.6 * GIB)
    second = {r.info.key: r for r in b.poll(1.0).readings}
    assert second[KEY_5060].sample.util_percent == pytest.approx(97.5)
    assert second[KEY_780M].sample.util_percent == pytest.approx(70.0)
    assert second[KEY_780M].sample.decoder_percent == pytest.approx(35.0)  # Chrome's VideoDecode engine
    assert second[KEY_780M].sample.encoder_percent is None  # no VideoEncode engine in the counters
    assert second[KEY_5060].sample.decoder_percent is None
    assert second[KEY_5060].sample.reason is None
    assert reader.opens == 1


def test_shared_memory_shown_for_both_gpus_including_the_5060ti_spill() -> None:
    b = backend(RecordedReader([FRAME]))
    b.poll(0.0)
    poll = b.poll(1.0)
    nv = next(r for r in poll.readings if r.info.key == KEY_5060)
    amd = next(r for r in poll.readings if r.info.key == KEY_780M)
    assert nv.sample.shared_used_bytes == int(3.2 * GIB)
    assert nv.sample.shared_total_bytes == 15 * GIB
    assert nv.sample.vram_used_bytes is not None and nv.sample.vram_total_bytes is not None
    assert nv.sample.vram_used_bytes > 0.95 * nv.sample.vram_total_bytes  # VRAM full → spilled
    assert amd.sample.shared_used_bytes == 6 * GIB
    assert amd.info.kind == "integrated" and nv.info.kind == "discrete"
    assert amd.info.name == "Radeon 780M" and nv.info.name.endswith("RTX 5060 Ti")
    assert nv.info.windows_luid == NV_LUID
    llama = next(p for p in poll.processes if p.pid == LLAMA)
    assert (llama.device, llama.name, llama.kind) == (KEY_5060, f"proc{LLAMA}", "compute")
    assert llama.shared_bytes == int(3.1 * GIB)
    chrome = [p for p in poll.processes if p.pid == CHROME]
    assert {p.device for p in chrome} == {KEY_5060, KEY_780M}


def test_query_rebuilt_when_an_adapter_appears_and_vanishes() -> None:
    egpu_frame: CounterArrays = {
        **FRAME,
        ADAPTER_DEDICATED: [*FRAME[ADAPTER_DEDICATED], mem(EGPU_LUID, 1 * GIB)],
        ADAPTER_SHARED: [*FRAME[ADAPTER_SHARED], mem(EGPU_LUID, 0)],
    }
    reader = RecordedReader([FRAME, FRAME, egpu_frame, egpu_frame, egpu_frame, FRAME, FRAME])
    b = backend(reader)
    b.poll(0.0)
    assert b.poll(1.0).readings[0].sample.util_percent is not None
    # Plug-in: the new LUID forces a rebuild, and the rebuilt query is not trusted for rates yet.
    plugged = b.poll(2.0)
    assert reader.opens == 2
    assert b.last_rebuild_reason is not None and "appeared" in b.last_rebuild_reason
    assert {r.info.key for r in plugged.readings} == {KEY_5060, KEY_780M, f"luid:{EGPU_LUID}"}
    assert all(r.sample.util_percent is None for r in plugged.readings)
    assert all(r.sample.util_percent is not None for r in b.poll(3.0).readings)
    # Unplug: rebuilt again, the eGPU drops out.
    gone = b.poll(4.0)
    assert reader.opens == 3
    assert b.last_rebuild_reason is not None and "vanished" in b.last_rebuild_reason
    assert {r.info.key for r in gone.readings} == {KEY_5060, KEY_780M}


def test_query_rebuilt_after_resume() -> None:
    reader = RecordedReader([FRAME])
    b = backend(reader, resume_gap_s=30.0)
    b.poll(0.0)
    b.poll(1.0)
    b.poll(2.0)
    assert reader.opens == 1
    after_sleep = b.poll(3600.0)
    assert reader.opens == 2
    assert b.last_rebuild_reason is not None and "resume" in b.last_rebuild_reason
    assert all(r.sample.util_percent is None for r in after_sleep.readings)


def test_collection_failure_is_a_reading_not_an_exception() -> None:
    reader = RecordedReader([FRAME])
    b = backend(reader)
    b.poll(0.0)
    reader.fail_next = True
    failed = b.poll(1.0)
    assert {r.sample.state for r in failed.readings} == {"unavailable"}
    assert all(isinstance(r.sample.reason, why.CountersFailed) for r in failed.readings)
    assert all(render(r.sample.reason).startswith("PDH counters unavailable: ") for r in failed.readings)
    b.poll(2.0)
    assert reader.opens == 2  # rebuilt after the failure


def test_pdh_and_nvml_readings_merge_into_one_gpu() -> None:
    nvml = DeviceReading(
        DeviceInfo(
            key=KEY_5060, name="GeForce RTX 5060 Ti", vendor="nvidia", kind="discrete", backend="nvml"
        ),
        Sample(key=KEY_5060, timestamp_s=1.0, util_percent=96.0, temp_c=71.0, power_w=170.0),
    )
    b = backend(RecordedReader([FRAME]))
    b.poll(0.0)
    merged = merge_readings([[nvml], list(b.poll(1.0).readings)])
    nv = [r for r in merged if r.info.key == KEY_5060]
    assert len(nv) == 1
    assert nv[0].sample.temp_c == 71.0  # from NVML
    assert nv[0].sample.shared_used_bytes == int(3.2 * GIB)  # from PDH
    assert nv[0].info.windows_luid == NV_LUID


# -- LUID → PCI -------------------------------------------------------------------------------------

NVML_5060 = replace(RTX_5060_TI, backend="nvml", simulated=False)
SYSFS_780M = replace(RADEON_780M, backend="amd_sysfs", simulated=False)


def test_luid_mapping_prefers_the_d3dkmt_pci_address() -> None:
    assert map_luids(ADAPTERS[:2]) == {NV_LUID: KEY_5060, AMD_LUID: KEY_780M}


def test_luid_mapping_through_vulkan_luid() -> None:
    bare = [replace(a, pci_bdf=None) for a in ADAPTERS[:2]]
    vk = [
        VulkanDevice(
            0,
            "NVIDIA GeForce RTX 5060 Ti",
            "discrete",
            0x10DE,
            0x2D04,
            uuid="5060d3e1-7a2b-4c1e-9f00-0123456789ab",
            luid=NV_LUID,
        ),
        VulkanDevice(
            1, "AMD Radeon 780M Graphics", "integrated", 0x1002, 0x15BF, pci_bdf="0000:64:00.0", luid=AMD_LUID
        ),
    ]
    # NVIDIA by the NVML UUID Vulkan reports for that LUID; AMD by Vulkan's PCI bus info.
    assert map_luids(bare, [NVML_5060], vk) == {NV_LUID: KEY_5060, AMD_LUID: KEY_780M}


def test_luid_mapping_by_ids_then_by_name_and_size() -> None:
    bare = [replace(a, pci_bdf=None) for a in ADAPTERS[:2]]
    assert map_luids(bare, [NVML_5060, SYSFS_780M]) == {NV_LUID: KEY_5060, AMD_LUID: KEY_780M}
    # Two 5060 Ti (8 GB and 16 GB share a device id): the memory size decides.
    small = replace(NVML_5060, key="pci:0000:02:00.0", vram_total_bytes=8 * GIB, uuid=None)
    eight = AdapterDesc(
        luid="0x00000000_0x0000AAAA",
        name="NVIDIA GeForce RTX 5060 Ti",
        vendor_id=0x10DE,
        device_id=0x2D04,
        dedicated_video_bytes=8 * GIB - 200 * MIB,
    )
    sixteen = replace(bare[0])
    assert map_luids([eight, sixteen], [NVML_5060, small]) == {
        eight.luid: "pci:0000:02:00.0",
        NV_LUID: KEY_5060,
    }
    # Without ids (an older driver) the name alone still finds the only 780M.
    nameless = replace(bare[1], vendor_id=None, device_id=None)
    assert map_luids([nameless], [NVML_5060, SYSFS_780M]) == {AMD_LUID: KEY_780M}


def test_unmatched_adapter_keeps_a_luid_key() -> None:
    stranger = AdapterDesc(luid=EGPU_LUID, name="Some Adapter", vendor_id=0x1234, device_id=1)
    assert map_luids([stranger], [NVML_5060]) == {EGPU_LUID: f"luid:{EGPU_LUID}"}


# -- Linux: importable, and the real reader says why it can't run -------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="checks the non-Windows behaviour")
def test_real_reader_off_windows_fails_cleanly_and_backend_does_not_raise() -> None:
    with pytest.raises(OSError, match="only on Windows"):
        PdhCtypesReader().open()
    b = WindowsPdhBackend(vulkan=lambda: ())
    poll = b.poll(0.0)
    assert poll.readings == () and poll.processes == ()
    b.close()


# -- the ctypes reader against a stand-in for pdh.dll ----------------------------------------------


def _signed(status: int) -> int:
    """PDH_STATUS comes back through ctypes as a signed 32-bit int."""
    return status - 2**32 if status >= 2**31 else status


class FakePdhDll:
    """Implements the four pdh.dll calls the reader makes, writing real C structures into its buffers."""

    PDH_MORE_DATA = 0x800007D2
    PDH_INVALID_DATA = 0xC0000BC6

    def __init__(self, arrays: list[dict[str, list[tuple[str, int, float]]]]) -> None:
        self.arrays = arrays  # per collection: counter path → (instance, CStatus, value)
        self.collections = 0
        self.paths: dict[int, str] = {}
        self.keep: list[object] = []
        self.grow_once = True
        self.closed = 0

    def PdhOpenQueryW(self, source: object, user: object, query_ref: Any) -> int:
        query_ref._obj.value = 0x1000
        return 0

    def PdhAddEnglishCounterW(self, query: object, path: Any, user: object, counter_ref: Any) -> int:
        handle = 0x2000 + len(self.paths)
        self.paths[handle] = path.value
        counter_ref._obj.value = handle
        return 0

    def PdhCollectQueryData(self, query: object) -> int:
        self.collections += 1
        return 0

    def PdhGetFormattedCounterArrayW(
        self, counter: Any, fmt: int, size_ref: Any, count_ref: Any, buf: Any
    ) -> int:
        assert fmt & 0x200  # PDH_FMT_DOUBLE
        frame = self.arrays[min(self.collections, len(self.arrays)) - 1]
        items = frame.get(self.paths[counter.value])
        if items is None:
            return _signed(self.PDH_INVALID_DATA)
        need = ctypes.sizeof(pdh_ctypes._PdhFmtCounterValueItemW) * max(len(items), 1)
        if buf is None or size_ref._obj.value < need:
            size_ref._obj.value = need
            count_ref._obj.value = len(items)
            return _signed(self.PDH_MORE_DATA)
        if self.grow_once:  # an instance appeared between the two calls: ask again
            self.grow_once = False
            size_ref._obj.value = need + 64
            return _signed(self.PDH_MORE_DATA)
        arr = (pdh_ctypes._PdhFmtCounterValueItemW * len(items)).from_buffer(buf)
        for i, (name, status, value) in enumerate(items):
            text = ctypes.create_unicode_buffer(name)
            self.keep.append(text)
            arr[i].szName = ctypes.cast(text, ctypes.c_wchar_p)
            arr[i].FmtValue.CStatus = status
            arr[i].FmtValue.doubleValue = value
        count_ref._obj.value = len(items)
        return 0

    def PdhCloseQuery(self, query: object) -> int:
        self.closed += 1
        return 0


def test_ctypes_reader_reads_formatted_arrays_through_the_real_structures() -> None:
    engine = pdh_counters.COUNTER_PATHS[ENGINE_UTIL]
    dedicated = pdh_counters.COUNTER_PATHS[ADAPTER_DEDICATED]
    inst = f"pid_{LLAMA}_luid_0x00000000_0x0000D1B5_phys_0_eng_1_engtype_Compute_0"
    fake = FakePdhDll(
        [
            {dedicated: [("luid_0x00000000_0x0000D1B5_phys_0", 0, 15.6 * GIB)]},  # engine: not yet valid
            {
                engine: [
                    (inst, 0, 97.5),
                    ("pid_9_luid_0x00000000_0x0000D1B5_phys_0_eng_0_engtype_3D", 0xC0000BBB, 3.0),
                ],
                dedicated: [("luid_0x00000000_0x0000D1B5_phys_0", 0, 15.6 * GIB)],
            },
        ]
    )
    reader = PdhCtypesReader()
    reader._pdh = fake
    reader.open()
    assert sorted(fake.paths.values()) == sorted(pdh_counters.COUNTER_PATHS.values())
    first = reader.collect()
    assert first[ENGINE_UTIL] == []
    assert first[ADAPTER_DEDICATED] == [CounterItem("luid_0x00000000_0x0000D1B5_phys_0", 15.6 * GIB, True)]
    second = reader.collect()
    assert second[ENGINE_UTIL][0] == CounterItem(inst, 97.5, True)
    assert second[ENGINE_UTIL][1].valid is False  # CStatus not VALID/NEW_DATA
    assert adapter_utilization(second[ENGINE_UTIL])[NV_LUID].util_percent == pytest.approx(97.5)
    reader.close()
    assert fake.closed == 1


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="64-bit layouts")
def test_windows_struct_layouts_64bit() -> None:
    # PDH_FMT_COUNTERVALUE_ITEM_W: LPWSTR + {DWORD CStatus; union{..double..}} = 8 + 16.
    assert ctypes.sizeof(pdh_ctypes._PdhFmtCounterValue) == 16
    assert pdh_ctypes._PdhFmtCounterValue.value.offset == 8
    assert ctypes.sizeof(pdh_ctypes._PdhFmtCounterValueItemW) == 24
    assert ctypes.sizeof(pdh_ctypes._D3dkmtOpenAdapterFromLuid) == 12
    assert ctypes.sizeof(pdh_ctypes._D3dkmtQueryAdapterInfo) == 24
    assert ctypes.sizeof(pdh_ctypes._D3dkmtAdapterAddress) == 12
    if sys.platform == "win32":  # WCHAR is 2 bytes only there
        assert ctypes.sizeof(pdh_ctypes._DxgiAdapterDesc1) == 312


class NoGpuCountersReader(RecordedReader):
    """pdh.dll without the GPU counter set, as on Windows without a WDDM 2.x driver (and under Wine)."""

    driver_installed = False

    def open(self) -> None:
        self.opens += 1
        if not self.driver_installed:
            raise pdh_ctypes.PdhError(
                r"PdhAddEnglishCounterW(\GPU Engine(*)\Utilization Percentage)", 0xC0000BB9
            )


def test_missing_gpu_counters_are_a_note_that_names_the_driver() -> None:
    reader = NoGpuCountersReader([FRAME])
    ticks = iter([0.0, 1.0])
    monitor = Monitor([backend(reader)], host=None, clock=lambda: next(ticks))
    snap = monitor.sample_once()
    assert snap.readings == ()
    (note,) = snap.notes
    assert note == why.BackendNote(backend="pdh", why=why.NoGpuCounters())
    assert render(note).startswith("pdh: Windows has no GPU performance counters") and "WDDM" in render(note)
    monitor.sample_once()
    assert reader.opens == 1  # not rebuilt on every tick: the counters come with a driver install


def test_the_note_goes_once_pdh_reads_again() -> None:
    reader = NoGpuCountersReader([FRAME])
    b = backend(reader)
    b.poll(0.0)
    assert b.unavailable_reason is not None
    reader.driver_installed = True
    assert b.poll(30.0).readings == ()  # retried after a minute, not before
    assert b.poll(61.0).readings and b.unavailable_reason is None
