"""Why the monitor judges a device busy (or not free), as data: one Struct per rule, its figures typed.

``verdict.VerdictTracker`` makes them; ``Verdict.reasons`` carries them; the scheduler's reason
renderer (``gputray.scheduler.reasons``) puts them into words in the reader's language, alone (the
panel's "busy: …") or inside a task's reason ("waiting for GeForce RTX 5060 Ti: llama-server uses …").
The monitor itself never words them: it imports nothing of ours, the words live with the renderer.
"""

import msgspec


class Why(msgspec.Struct, frozen=True, kw_only=True, tag_field="code", tag=True):
    """The base of the monitor's reasons; the class name is the code."""


class Who(msgspec.Struct, frozen=True):
    """The processes behind a memory figure: the biggest by name, and how many others."""

    name: str
    others: int = 0


class Lost(Why, frozen=True):
    """The device fell off the bus; ``why`` is the backend's own words (None: none given)."""

    device: str
    why: str | None = None


class NoData(Why, frozen=True):
    """The device gives no readings (unavailable); ``why`` is the backend's own words."""

    device: str
    why: str | None = None


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
    """It fell off the bus; ``why``: the backend's own words."""

    device: str
    why: str | None = None


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
