"""Why the monitor judges a device busy (or not free), and what a backend says about a device it cannot
read (``Sample.reason``), as data: one Struct per rule, its figures typed.

``verdict.VerdictTracker`` makes them; ``Verdict.reasons`` carries them; the scheduler's reason
renderer (``gputray.scheduler.reasons``) puts them into words in the reader's language, alone (the
panel's "busy: …") or inside a task's reason ("waiting for GeForce RTX 5060 Ti: llama-server uses …").
The monitor itself never words them: it imports nothing of ours, the words live with the renderer.
"""

from typing import Literal

import msgspec


class Why(msgspec.Struct, frozen=True, kw_only=True, tag_field="code", tag=True):
    """The base of the monitor's reasons; the class name is the code."""


class Who(msgspec.Struct, frozen=True):
    """The processes behind a memory figure: the biggest by name, and how many others."""

    name: str
    others: int = 0


# -- what a backend says about one device (``Sample.reason``) or about itself (``BackendNote``) ---------
# Each is a code with its figures; the words are the renderer's. Where the text is truly another's (an
# NVML or amdsmi error, an OS error), it rides in a field (``error``) and is shown as written.

#: A figure a backend may fail to read ("not reported: load, power"), worded by each catalogue.
Metric = Literal[
    "load", "temperature", "power", "memory", "memory total", "core clock", "memory clock", "throttle"
]  # fmt: skip


class FellOffBus(Why, frozen=True):
    """The GPU is lost: NVML says NVML_ERROR_GPU_IS_LOST (it fell off the bus?), or a demo's "lost"."""


class NeedsReset(Why, frozen=True):
    """NVML reports the GPU unusable until it is reset (NVML_ERROR_RESET_REQUIRED)."""


class NotWoken(Why, frozen=True):
    """Runtime-suspended: not read, so it stays asleep."""


class LetGo(Why, frozen=True):
    """Idle: the driver's library (``api``) was closed so the GPU can go to sleep."""

    api: str


class OtherDriver(Why, frozen=True):
    """Driven by ``driver`` (nouveau, vfio-pci …), not the vendor's driver that ``api`` needs."""

    driver: str
    api: str


class ApiFailed(Why, frozen=True):
    """A call into ``api`` failed while reading (``error``: its own words)."""

    api: str
    error: str


class ApiStartFailed(Why, frozen=True):
    """``api`` would not start (nvmlInit, amdsmi_init …); ``error``: its own words."""

    api: str
    error: str


class ApiRefusedDevice(Why, frozen=True):
    """``api`` started but cannot use this GPU; ``error``: its own words."""

    api: str
    error: str


class NoHandles(Why, frozen=True):
    """``api`` listed no GPU handles; ``error``: its own words."""

    api: str
    error: str


class NotInstalled(Why, frozen=True):
    """The Python binding ``package`` (module ``module``) is not installed; ``error``: the import's words."""

    package: str
    module: str
    error: str


class NoApi(Why, frozen=True):
    """``api`` is not available (no reason known)."""

    api: str


class NvmlMissing(Why, frozen=True):
    """The NVIDIA driver library (libnvidia-ml / nvml.dll) is not found."""


class DriverNotLoaded(Why, frozen=True):
    """The NVIDIA driver is not loaded."""


class DriverDenied(Why, frozen=True):
    """No permission to talk to the NVIDIA driver."""


class NoNvidiaGpu(Why, frozen=True):
    """No NVIDIA GPU on the PCI bus."""


class AllAsleep(Why, frozen=True):
    """Every NVIDIA GPU is asleep; NVML is closed so they stay asleep."""


class NoneOnDriver(Why, frozen=True):
    """No awake NVIDIA GPU uses the NVIDIA driver."""


class ClosedAfterLoss(Why, frozen=True):
    """A GPU was lost; NVML is closed until the next re-discovery."""


class PausedAfterLoss(Why, frozen=True):
    """NVML is paused after another GPU was lost; it is tried again in ``retry_in_s``."""

    retry_in_s: int


class WouldWake(Why, frozen=True):
    """amdsmi is not opened: an AMD GPU uses runtime power management and opening it would wake it."""


class NotReported(Why, frozen=True):
    """The device reads, but not these figures; ``by``: the library that did not report them (None: the
    driver's files)."""

    metrics: tuple[Metric, ...]
    by: str | None = None


class NoFigures(Why, frozen=True):
    """A DRM card whose driver offers none of these figures; ``virtual``: a virtual GPU (virtio-gpu,
    QXL)."""

    driver: str
    metrics: tuple[Metric, ...]
    virtual: bool = False


class NeedsSecondCollection(Why, frozen=True):
    """Windows' GPU % is a rate: it needs a second PDH collection."""


class NoGpuCounters(Why, frozen=True):
    """Windows has no GPU performance counters here (no WDDM 2.0+ display driver)."""


class CountersFailed(Why, frozen=True):
    """Windows' PDH counters could not be read; ``error``: their own words."""

    error: str


class BackendCrashed(Why, frozen=True):
    """A backend raised where it must not (``BackendNote`` only); ``error``: the exception's words."""

    error: str


SampleWhy = (
    FellOffBus | NeedsReset | NotWoken | LetGo | OtherDriver | ApiFailed | ApiStartFailed | ApiRefusedDevice
    | NoHandles | NotInstalled | NoApi | NvmlMissing | DriverNotLoaded | DriverDenied | NoNvidiaGpu
    | AllAsleep | NoneOnDriver | ClosedAfterLoss | PausedAfterLoss | WouldWake | NotReported | NoFigures
    | NeedsSecondCollection | NoGpuCounters | CountersFailed | BackendCrashed
)  # fmt: skip
#: What a device's reason may hold where it is stored (``DeviceGone.why`` in a waiting task's row): a
#: code, or text as an earlier gputray stored it, shown as written.
SampleSaid = SampleWhy | str


class BackendNote(Why, frozen=True):
    """Why a backend saw nothing (``Snapshot.notes``): ``backend`` is its name (nvml, amdsmi, pdh …)."""

    backend: str
    why: SampleWhy


# -- the monitor's verdicts on a device (``Verdict.reasons``) --------------------------------------------


class Lost(Why, frozen=True):
    """The device fell off the bus; ``why``: what its backend said (None: nothing)."""

    device: str
    why: SampleWhy | None = None


class NoData(Why, frozen=True):
    """The device gives no readings (unavailable); ``why``: what its backend said."""

    device: str
    why: SampleWhy | None = None


class Asleep(Why, frozen=True):
    device: str


class Hot(Why, frozen=True):
    device: str
    temp_c: float
    limit_c: float


class UtilHigh(Why, frozen=True):
    """Utilisation above the threshold for the busy window (who holds memory there, if anyone; the figure
    now, and when it frees if it stays below the threshold)."""

    who: Who | None
    held_bytes: int
    threshold_pct: float
    window_s: float
    util_pct: float | None
    free_in_s: int | None = None


class MemoryHeld(Why, frozen=True):
    """A foreign process holds memory and the GPU is active now."""

    who: Who
    held_bytes: int
    util_pct: float
    threshold_pct: float


class MemoryHeldRecently(Why, frozen=True):
    """A foreign process holds memory and the GPU was active ``ago_s`` seconds ago."""

    who: Who
    held_bytes: int
    threshold_pct: float
    ago_s: float
    free_in_s: int


class PausedOn(Why, frozen=True):
    """The cluster's view of another machine: its queue is paused there (``whole_queue``), or on this
    device."""

    machine: str
    whole_queue: bool


class Words(Why, frozen=True):
    """A verdict as another machine worded it (the cluster's views carry text), shown as it is."""

    text: str


BusyWhy = Lost | NoData | Asleep | Hot | UtilHigh | MemoryHeld | MemoryHeldRecently | PausedOn | Words


# -- what happened to a device (``DeviceEvent.message``: the tray's notices) ---------------------------


class Appeared(Why, frozen=True):
    device: str


class Vanished(Why, frozen=True):
    device: str


class WasLost(Why, frozen=True):
    """It fell off the bus; ``why``: what its backend said."""

    device: str
    why: SampleWhy | None = None


class Back(Why, frozen=True):
    device: str


class WentToSleep(Why, frozen=True):
    device: str


class WokeUp(Why, frozen=True):
    device: str


class Cooled(Why, frozen=True):
    device: str
    temp_c: float


DeviceNews = Appeared | Vanished | WasLost | Back | WentToSleep | WokeUp | Hot | Cooled
