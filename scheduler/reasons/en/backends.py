"""English words for what a monitor backend says about a device it cannot read, or reads only in part
(``Sample.reason``: the ``busy_why`` codes of ``SampleWhy``), and about itself (``BackendNote``). A
library's or the OS's own error text inside them is shown as written (``Say.text``). Inside a task's
reason ("unavailable: …" while it waited) they read in the past once the task has ended, and they bracket
nothing: a task's reason may put them in brackets of its own."""

from __future__ import annotations

from gputray.monitor import busy_why as b
from gputray.scheduler.reasons.en.common import EN
from gputray.scheduler.reasons.say import Say

says = EN.says

#: The figures a backend may not report, as English names them.
METRICS: dict[b.Metric, str] = {
    "load": "load",
    "temperature": "temperature",
    "power": "power",
    "memory": "memory",
    "memory total": "memory total",
    "core clock": "core clock",
    "memory clock": "memory clock",
    "throttle": "throttle",
}


def _or(items: list[str]) -> str:
    """["load", "memory"] → "load or memory"; three or more: "load, temperature or memory"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


@says(b.FellOffBus)
def _fell_off(r: b.FellOffBus, s: Say) -> str:
    return "fell off the bus"


@says(b.NeedsReset)
def _needs_reset(r: b.NeedsReset, s: Say) -> str:
    return s.tense("needs a reset: NVML reports it unusable", "needed a reset: NVML reported it unusable")


@says(b.NotWoken)
def _not_woken(r: b.NotWoken, s: Say) -> str:
    return "runtime-suspended, not woken to read it"  # no verb of its own: "asleep" is the state's


@says(b.LetGo)
def _let_go(r: b.LetGo, s: Say) -> str:
    return f"idle; {r.api} let go of it so it {s.tense('can', 'could')} go to sleep"


@says(b.OtherDriver)
def _other_driver(r: b.OtherDriver, s: Say) -> str:
    return f"driven by {r.driver}, not the NVIDIA driver: {r.api} {s.tense('cannot', 'could not')} read it"


@says(b.ApiFailed)
def _api_failed(r: b.ApiFailed, s: Say) -> str:
    return f"{r.api} failed: {s.text(r.error)}"


@says(b.ApiStartFailed)
def _api_start_failed(r: b.ApiStartFailed, s: Say) -> str:
    return f"{r.api} failed to start: {s.text(r.error)}"


@says(b.ApiRefusedDevice)
def _api_refused(r: b.ApiRefusedDevice, s: Say) -> str:
    return f"{r.api} {s.tense('cannot use', 'could not open')} this GPU: {s.text(r.error)}"


@says(b.NoHandles)
def _no_handles(r: b.NoHandles, s: Say) -> str:
    return f"{r.api} gave no GPU handles: {s.text(r.error)}"


@says(b.NotInstalled)
def _not_installed(r: b.NotInstalled, s: Say) -> str:
    return f"{r.package} {s.tense('is', 'was')} not installed: {s.text(r.error)}"


@says(b.NoApi)
def _no_api(r: b.NoApi, s: Say) -> str:
    return f"{r.api} {s.tense('is', 'was')} not available"


@says(b.NvmlMissing)
def _nvml_missing(r: b.NvmlMissing, s: Say) -> str:
    return "NVIDIA driver library not found: libnvidia-ml / nvml.dll"


@says(b.DriverNotLoaded)
def _driver_not_loaded(r: b.DriverNotLoaded, s: Say) -> str:
    return f"NVIDIA driver {s.tense('is', 'was')} not loaded"


@says(b.DriverDenied)
def _driver_denied(r: b.DriverDenied, s: Say) -> str:
    return "no permission to talk to the NVIDIA driver"


@says(b.NoNvidiaGpu)
def _no_nvidia(r: b.NoNvidiaGpu, s: Say) -> str:
    return "no NVIDIA GPU on the PCI bus"


@says(b.AllAsleep)
def _all_asleep(r: b.AllAsleep, s: Say) -> str:
    if s.finished:
        return "every NVIDIA GPU was asleep; NVML was closed so they stayed asleep"
    return "every NVIDIA GPU is asleep; NVML is closed so they stay asleep"


@says(b.NoneOnDriver)
def _none_on_driver(r: b.NoneOnDriver, s: Say) -> str:
    return f"no awake NVIDIA GPU {s.tense('uses', 'used')} the NVIDIA driver"


@says(b.ClosedAfterLoss)
def _closed_after_loss(r: b.ClosedAfterLoss, s: Say) -> str:
    return f"a GPU was lost; NVML {s.tense('is', 'was')} closed until the next re-discovery"


@says(b.PausedAfterLoss)
def _paused_after_loss(r: b.PausedAfterLoss, s: Say) -> str:
    if s.finished:
        return "NVML paused after a GPU was lost"
    return f"NVML paused after a GPU was lost; retrying in {s.seconds(r.retry_in_s)}"


@says(b.WouldWake)
def _would_wake(r: b.WouldWake, s: Say) -> str:
    uses = s.tense("uses", "used")
    return f"paused: an AMD GPU {uses} runtime power management, and amdsmi would wake it"


@says(b.NotReported)
def _not_reported(r: b.NotReported, s: Say) -> str:
    what = ", ".join(METRICS[m] for m in r.metrics)
    return f"not reported by {r.by}: {what}" if r.by else f"not reported: {what}"


@says(b.NoFigures)
def _no_figures(r: b.NoFigures, s: Say) -> str:
    label = f"{r.driver}, a virtual GPU" if r.virtual else f"{r.driver} driver"
    return f"{label}: no {_or([METRICS[m] for m in r.metrics])} figures"


@says(b.NeedsSecondCollection)
def _second_collection(r: b.NeedsSecondCollection, s: Say) -> str:
    return f"GPU % {s.tense('needs', 'needed')} a second PDH collection"


@says(b.NoGpuCounters)
def _no_counters(r: b.NoGpuCounters, s: Say) -> str:
    if s.finished:
        return (
            "Windows had no GPU performance counters, no \\GPU Engine counter set: no WDDM 2.0 display driver"
        )
    return (
        "Windows has no GPU performance counters here, no \\GPU Engine counter set: a WDDM 2.0 or later "
        "display driver provides them, Windows 10 1709+; without one, GPU load and memory are unknown"
    )


@says(b.CountersFailed)
def _counters_failed(r: b.CountersFailed, s: Say) -> str:
    return f"PDH counters unavailable: {s.text(r.error)}"


@says(b.BackendCrashed)
def _crashed(r: b.BackendCrashed, s: Say) -> str:
    return f"failed: {s.text(r.error)}"


@says(b.BackendNote)
def _note(r: b.BackendNote, s: Say) -> str:
    return f"{r.backend}: {s(r.why)}"
