"""English words for the monitor's verdicts on a device (``monitor/busy_why``), what happened to a device,
what a backend says about a device it cannot read, or reads only in part (``Sample.reason``: the codes
of ``SampleWhy``) and about itself (``BackendNote``), and words kept as written. A library's or the OS's
own error text inside a backend's reason is shown as written (``Say.text``). Inside a task's reason
("unavailable: …" while it waited) a backend's reason reads in the past once the task has ended, and it
brackets nothing: a task's reason may put it in brackets of its own. The Vulkan enumeration's reasons
(``monitor/vulkan_why``: why no device list, why a Vulkan device is not one of the GPUs) are worded at
the end, as ``gputray devices`` has always said them. (One module with the verdicts: the command line
loads every area when it words a reason, and each module costs it an import.)"""

from __future__ import annotations

from gputray.monitor import busy_why as b
from gputray.monitor import vulkan_why as v
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.en.common import EN, _aside, _pct, _who
from gputray.scheduler.reasons.say import Say

says = EN.says


@says(b.Lost)
def _lost(r: b.Lost, s: Say) -> str:
    why = s(r.why) if r.why else "fell off the bus"
    return f"{r.device} is lost: {why}" if s.named else f"lost: {why}"


@says(b.NoData)
def _no_data(r: b.NoData, s: Say) -> str:
    why = s(r.why) if r.why else "no data"
    return f"{r.device} unavailable: {why}" if s.named else f"unavailable: {why}"


@says(b.Asleep)
def _asleep(r: b.Asleep, s: Say) -> str:
    return f"{r.device} is asleep" if s.named else "asleep"


@says(b.Hot)
def _hot(r: b.Hot, s: Say) -> str:
    if s.named:
        return f"{r.device} is hot: {r.temp_c:.0f} °C (limit {r.limit_c:.0f} °C)"
    return f"hot: {r.temp_c:.0f} °C, limit {r.limit_c:.0f} °C"  # inside a device's reason, in its brackets


@says(b.UtilHigh)
def _util_high(r: b.UtilHigh, s: Say) -> str:
    now = "now —" if r.util_pct is None else f"now {_pct(r.util_pct)}"
    if s.finished:  # a task's reason, once it has ended: what it was then
        now = "" if r.util_pct is None else f"at {_pct(r.util_pct)}"
    elif r.free_in_s is not None:
        now += f", free again in {r.free_in_s} s if it stays low"
    rule = f"above {_pct(r.threshold_pct)} for {r.window_s:.0f} s" + (f"; {now}" if now else "")
    if r.who is None or not r.held_bytes:
        return rule
    who, many = _who(r.who)
    return f"{who} {s.tense('use' if many else 'uses', 'used')} {s.size(r.held_bytes)}; {rule}"


@says(b.MemoryHeld)
def _memory_held(r: b.MemoryHeld, s: Say) -> str:
    who, many = _who(r.who)
    held = f"{who} {s.tense('hold' if many else 'holds', 'held')} {s.size(r.held_bytes)}"
    return (
        f"{held} and the GPU {s.tense('is', 'was')} at {_pct(r.util_pct)}, busy above {_pct(r.threshold_pct)}"
    )


@says(b.MemoryHeldRecently)
def _memory_recent(r: b.MemoryHeldRecently, s: Say) -> str:
    who, many = _who(r.who)
    if s.finished:
        busy = f"the GPU had been above {_pct(r.threshold_pct)} shortly before"
        return f"{who} held {s.size(r.held_bytes)} and {busy}"
    held = f"{who} {'hold' if many else 'holds'} {s.size(r.held_bytes)}"
    return (
        f"{held} and the GPU was above {_pct(r.threshold_pct)} {r.ago_s:.0f} s ago; "
        f"free again in {r.free_in_s} s if it stays low"
    )


@says(b.PausedOn)
def _paused_on(r: b.PausedOn, s: Say) -> str:
    return (
        f"the queue {s.tense('is', 'was')} paused on {r.machine}"
        if r.whole_queue
        else f"paused on {r.machine}"
    )


@says(b.Words)
def _words(r: b.Words, s: Say) -> str:
    return s.text(r.text)


@says(c.Said)
def _said(r: c.Said, s: Say) -> str:
    return r.text  # as written, in every language


@says(b.Appeared)
def _appeared(r: b.Appeared, s: Say) -> str:
    return f"{r.device} appeared"


@says(b.Vanished)
def _vanished(r: b.Vanished, s: Say) -> str:
    return f"{r.device} disappeared"


@says(b.WasLost)
def _waslost(r: b.WasLost, s: Say) -> str:
    return f"{r.device} was lost: {s(r.why) if r.why else 'fell off the bus'}"


@says(b.Back)
def _back(r: b.Back, s: Say) -> str:
    return f"{r.device} is back"


@says(b.WentToSleep)
def _wenttosleep(r: b.WentToSleep, s: Say) -> str:
    return f"{r.device} went to sleep"


@says(b.WokeUp)
def _wokeup(r: b.WokeUp, s: Say) -> str:
    return f"{r.device} woke up"


@says(b.Cooled)
def _cooled(r: b.Cooled, s: Say) -> str:
    return f"{r.device} cooled to {r.temp_c:.0f} °C"


# -- what a backend says about a device, and about itself ----------------------------------------

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


# -- the Vulkan enumeration (``monitor/vulkan_why``) ------------------------------------------------

_LACKS = {
    "vkGetInstanceProcAddr": "the loader library has no vkGetInstanceProcAddr",
    "vkCreateInstance": "the loader has no vkCreateInstance",
    "physical-device": "the loader lacks a physical-device entry point",
}


def _stderr(lines: tuple[str, ...], s: Say) -> str:
    """The worker's last lines on stderr (a driver's words, as written) after what happened."""
    return (": " + " | ".join(s.text(line) for line in lines)) if lines else ""


@says(v.NoLoader)
def _no_loader(r: v.NoLoader, s: Say) -> str:
    tried = "; ".join(s.text(t) for t in r.tried)
    return f"Vulkan not available: no Vulkan loader could be loaded ({tried})"


@says(v.LoaderLacks)
def _loader_lacks(r: v.LoaderLacks, s: Say) -> str:
    return f"Vulkan not available: {_LACKS[r.entry]}"


@says(v.OldLoader)
def _old_loader(r: v.OldLoader, s: Say) -> str:
    return "Vulkan not available: the loader is Vulkan 1.0 without VK_KHR_get_physical_device_properties2"


@says(v.CallFailed)
def _call_failed(r: v.CallFailed, s: Say) -> str:
    hint = " (no Vulkan driver/ICD found)" if r.no_driver else ""
    return f"Vulkan not available: {r.call} failed with {r.result}{hint}"


@says(v.WorkerNotStarted)
def _worker_not_started(r: v.WorkerNotStarted, s: Say) -> str:
    return f"Vulkan enumeration could not start {r.program}: {s.text(r.error)}"


@says(v.WorkerHung)
def _worker_hung(r: v.WorkerHung, s: Say) -> str:
    return f"Vulkan enumeration hung for {r.timeout_s:g} s and was killed (a broken Vulkan driver?)"


@says(v.WorkerDied)
def _worker_died(r: v.WorkerDied, s: Say) -> str:
    how = f"was killed by signal {r.signal}" if r.signal is not None else f"exited with status {r.status}"
    return f"Vulkan enumeration {how} (a broken Vulkan driver?){_stderr(r.stderr, s)}"


@says(v.NoResult)
def _no_result(r: v.NoResult, s: Say) -> str:
    hint = ""
    if r.list_mode:
        hint = " (MESA_VK_DEVICE_SELECT=list makes Mesa's device-select layer list devices and exit)"
    return f"Vulkan enumeration exited without a result{hint}{_stderr(r.stderr, s)}"


@says(v.UnreadableResult)
def _unreadable_result(r: v.UnreadableResult, s: Say) -> str:
    return f"Vulkan enumeration printed something unreadable{_aside(s.text(r.error))}{_stderr(r.stderr, s)}"


@says(v.NotEnumerated)
def _not_enumerated(r: v.NotEnumerated, s: Say) -> str:
    return "not enumerated in demo mode"


@says(v.BacksSimulated)
def _backs_simulated(r: v.BacksSimulated, s: Say) -> str:
    return f"backs the simulated {r.device} (the demo scenario's [[vulkan]])"


@says(v.SoftwareRenderer)
def _software_renderer(r: v.SoftwareRenderer, s: Say) -> str:
    return "software renderer on the CPU, not a GPU"


@says(v.NoMatch)
def _no_match(r: v.NoMatch, s: Say) -> str:
    more = " (no GPU list to match against)" if r.no_gpus else ""
    return f"no PCI address, and its UUID matches no known GPU{more}"


@says(v.SecondDriver)
def _second_driver(r: v.SecondDriver, s: Say) -> str:
    return (
        f"same GPU as Vulkan device {r.first_index} ({r.first_driver}): a second driver ({r.driver}) for it"
    )
