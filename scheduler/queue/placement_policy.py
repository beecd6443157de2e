"""``prefer = "fastest" | "greenest"``: where a task finishes first (or uses least energy), from the
runtimes learned per job family and device (``estimates.Outlook``). Pure: ``placement.place`` asks
``OutlookPolicy.decide`` among the devices the task's preferences name, with their busy reasons and the
work this pass already put on each.

- ``fastest``: the device with the earliest estimated finish, wait + run. Free now: it starts there;
  else the task waits for that device (a later pass decides again: a spell that ends sooner changes it).
- ``greenest``: among the devices that finish within ``max_slowdown`` × the fastest finish, the one with
  the least estimated energy.

A device whose free time is unknown (external use never seen to end, paused, held, hot) is not chosen.
When the family has no estimate on any device, or every device's free time is unknown, ``decide``
returns None and the plain rules decide. The reason says the arithmetic:
"RTX 5060 Ti frees in ~12 min; Radeon 780M finishes in ~4 min: running there".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gputray.scheduler.queue.estimates import Outlook
from gputray.scheduler.queue.placement import Decision, DeviceState, Placement, Wait
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.codes import Reason
from gputray.scheduler.tasks.family import family_of
from gputray.scheduler.tasks.records import TaskRecord


@dataclass(frozen=True)
class Option:
    device: DeviceState
    run_s: float
    wait_s: float | None  # None: when it frees is unknown
    energy_j: float | None

    @property
    def finish_s(self) -> float | None:
        return None if self.wait_s is None else self.wait_s + self.run_s


def options(
    task: TaskRecord,
    allowed: Sequence[DeviceState],
    why_busy: Mapping[str, Reason | None],
    backlog: Mapping[str, float],
    outlook: Outlook,
) -> list[Option]:
    """Each allowed device with an estimate: its run, when it frees for this task, its energy."""
    family = family_of(task.spec)
    out = []
    for dev in allowed:
        run = outlook.run_s(family, dev.key)
        if run is None:
            continue
        wait: float | None = 0.0
        if why_busy.get(dev.key) is not None:
            base, queued = outlook.free_in.get(dev.key), backlog.get(dev.key, 0.0)
            # busy, yet free before this pass and nothing put there since: held, hot, paused, short of
            # memory for this task … nothing says when that ends
            wait = None if base is None or (base == 0 and queued == 0) else base + queued
        out.append(Option(dev, run, wait, outlook.energy_j(family, dev.key)))
    return out


def pick(task: TaskRecord, opts: Sequence[Option]) -> Option | None:
    known = [o for o in opts if o.finish_s is not None]
    if not known:
        return None
    fastest = min(known, key=lambda o: (o.finish_s, o.run_s))
    if task.spec.prefer != "greenest":
        return fastest
    limit = (fastest.finish_s or 0.0) * task.spec.max_slowdown
    within = [o for o in known if (o.finish_s or 0.0) <= limit + 1e-9]
    return min(within, key=lambda o: (o.energy_j is None, o.energy_j or 0.0, o.finish_s))


def _outlook(o: Option, limit_s: float | None, max_slowdown: float) -> c.Outlook:
    """One device's figures for the reason; under ``greenest`` a device that would use less energy but
    finish past the slowdown limit says so, or the reason reads as if it had been passed over for nothing."""
    past = limit_s is not None and o.finish_s is not None and o.finish_s > limit_s + 1e-9
    return c.Outlook(
        device=o.device.name,
        run_s=o.run_s,
        wait_s=o.wait_s,
        energy_j=o.energy_j,
        past_factor=max_slowdown if past else None,
    )


def explain(chosen: Option, opts: Sequence[Option], prefer: str, max_slowdown: float = 1.5) -> c.Preferred:
    known = [o.finish_s for o in opts if o.finish_s is not None]
    limit = min(known) * max_slowdown if known and prefer == "greenest" else None
    return c.Preferred(
        prefer=prefer,
        others=tuple(_outlook(o, limit, max_slowdown) for o in opts if o is not chosen),
        chosen=_outlook(chosen, limit, max_slowdown),
        starts=chosen.wait_s == 0,
        energy=prefer == "greenest",
    )


@dataclass(frozen=True)
class OutlookPolicy:
    """``placement.Policy`` over one pass's ``Outlook``."""

    outlook: Outlook

    def decide(
        self,
        task: TaskRecord,
        allowed: Sequence[DeviceState],
        why_busy: Mapping[str, Reason | None],
        backlog: Mapping[str, float],
    ) -> Decision | None:
        opts = options(task, allowed, why_busy, backlog, self.outlook)
        chosen = pick(task, opts)
        if chosen is None:
            return None
        reason = explain(chosen, opts, task.spec.prefer, task.spec.max_slowdown)
        dev = chosen.device
        if chosen.wait_s == 0:
            return Placement(dev.key, dev.name, reason if len(opts) > 1 else None, run_s=chosen.run_s)
        return Wait(reason, dev.key, accepts=(dev.key,), run_s=chosen.run_s)

    def run_s(self, task: TaskRecord, device_key: str) -> float | None:
        return self.outlook.run_s(family_of(task.spec), device_key)
