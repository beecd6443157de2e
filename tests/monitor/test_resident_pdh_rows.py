"""A resident on Windows holds what PDH's ``\\GPU Process Memory`` says (issue 27, item 4): NVML under
WDDM reports a process's memory as N/A, so the resident's held memory and device come from the PDH
backend's per-process rows, joined by the Windows pid psutil gives, and its load from ``\\GPU Engine``
tells serving from idle. The counters are replayed at the library boundary (the reader) as
tests/monitor/backends/test_pdh.py does; PDH's arithmetic, the monitor's merge and the residents'
join are the real code."""

from __future__ import annotations

from collections.abc import Sequence

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
)
from gputray.monitor.monitor import Monitor
from gputray.monitor.records import BackendPoll, ProcessUse
from gputray.monitor.resident_api import Probe
from gputray.monitor.resident_kinds import kind_named
from gputray.monitor.residents import Found, ResidentWatch
from gputray.monitor.units import GIB, MIB

LUID = "0x00000000_0x0000D1B5"
KEY = "pci:0000:01:00.0"
SERVER = 4242  # llama-server.exe's Windows pid
ADAPTER = AdapterDesc(
    luid=LUID,
    name="NVIDIA GeForce RTX 5060 Ti",
    vendor_id=0x10DE,
    device_id=0x2D04,
    dedicated_video_bytes=16 * GIB - 300 * MIB,
    shared_system_bytes=15 * GIB,
    pci_bdf="0000:01:00.0",
)


def _frame(compute_percent: float) -> CounterArrays:
    high, low = LUID.split("_")
    engine = f"pid_{SERVER}_luid_{high}_{low}_phys_0_eng_1_engtype_Compute_0"
    process = f"pid_{SERVER}_luid_{high}_{low}_phys_0"
    return {
        ENGINE_UTIL: [CounterItem(engine, compute_percent)],
        ADAPTER_DEDICATED: [CounterItem(f"luid_{high}_{low}_phys_0", 13.0 * GIB)],
        ADAPTER_SHARED: [CounterItem(f"luid_{high}_{low}_phys_0", 0.5 * GIB)],
        PROCESS_DEDICATED: [CounterItem(process, 12.5 * GIB)],
        PROCESS_SHARED: [CounterItem(process, 0.25 * GIB)],
    }


class _Counters:
    """What ``PdhGetFormattedCounterArrayW`` returned, one frame per collection."""

    def __init__(self, frames: Sequence[CounterArrays]) -> None:
        self.frames, self.collects = list(frames), 0

    def open(self) -> None:
        pass

    def collect(self) -> CounterArrays:
        frame = self.frames[min(self.collects, len(self.frames) - 1)]
        self.collects += 1
        return frame

    def adapters(self) -> Sequence[AdapterDesc]:
        return [ADAPTER]

    def close(self) -> None:
        pass


class _NvmlUnderWddm:
    """NVML's per-process row under WDDM: the process is listed, its memory is N/A."""

    name = "nvml"

    def poll(self, now_s: float) -> BackendPoll:
        row = ProcessUse(SERVER, "llama-server.exe", KEY, "compute", vram_bytes=None)
        return BackendPoll(readings=(), processes=(row,))

    def close(self) -> None:
        pass


def test_a_windows_resident_holds_what_pdh_says_and_its_load_tells_busy_from_idle() -> None:
    counters = _Counters([_frame(0.0), _frame(96.0), _frame(0.0)])
    pdh = WindowsPdhBackend(counters, process_name=lambda pid: "llama-server.exe", vulkan=lambda: ())  # type: ignore[arg-type]
    monitor = Monitor([_NvmlUnderWddm(), pdh])
    kind = kind_named("llama-server")
    assert kind is not None
    clock = iter([100.0, 160.0, 220.0])
    watch = ResidentWatch(
        (kind,),
        clock=lambda: next(clock),
        finder=lambda kinds: [Found(kind, SERVER, 8080, frozenset({SERVER}), "listening")],
        prober=lambda found: Probe(answered=True, models=("qwen3-14b",)),  # its API says no memory figure
    )
    first = watch.look(monitor.sample_once())  # PDH's rates need a second collection: memory already
    assert first[0].device == KEY and first[0].held_bytes == int(12.75 * GIB)
    serving = watch.look(monitor.sample_once())[0]
    assert serving.busy and serving.idle_since_s is None  # 96 % of its compute engine
    idle = watch.look(monitor.sample_once())[0]
    assert not idle.busy and idle.idle_since_s == 160.0 and idle.idle_s(220.0) == 60.0
    assert idle.held_bytes == int(12.75 * GIB)  # dedicated + shared, from \GPU Process Memory
