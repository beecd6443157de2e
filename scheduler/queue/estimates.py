"""Runtime and energy estimates per job family and device, and when each device frees up: the pure
arithmetic behind ``prefer = "fastest" | "greenest"`` and ``queue --json``'s ``estimate_s``.

**Run time** on a device: the median of the family's recent runs there (``runtime_history``), of those
during which the device did not throttle when there are at least three (``RunBook.basis``). A family
that ran only on other devices is scaled by the devices' speed ratio: the doctor's measured fp32 matmul
(GFLOP/s, ``gputray doctor``'s bench item ``matmul_fp32``, the best over the envs) when it measured both
devices, else a per-class default (``DEFAULT_SPEED``: a discrete GPU 4× an integrated one, the CPU a
quarter of an iGPU; the seed user's RTX 5060 Ti measures about 4-5× the Radeon 780M). The device the
family ran on most is the one scaled from.

**Energy**: the median of the measured energy of the recent runs there, else the run time × the
class's typical draw under load (``DEFAULT_WATTS``).

**Frees in** (``Outlook.free_in``): 0 for a device free now; for one busy with our own jobs, the
earliest of their estimated remaining times; for external use, how long such spells lasted before
(``SpellBook.free_in_s``); None when unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gputray.scheduler.tasks.times import about

__all__ = ["about"]  # re-exported: estimates are said with it (it lives with the task times)

#: Relative speed per device class when the doctor has not measured both devices.
DEFAULT_SPEED: Mapping[str, float] = {"discrete": 4.0, "integrated": 1.0, "cpu": 0.25}
#: Typical draw under load per device class (W), for energy where no run measured it.
DEFAULT_WATTS: Mapping[str, float] = {"discrete": 150.0, "integrated": 25.0, "cpu": 45.0}


@dataclass(frozen=True)
class Outlook:
    """Everything a pass needs to estimate: per family the median run (and energy) per device key,
    each device's class and measured speed, and when each device frees up."""

    run_medians: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    energy_medians: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    run_counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # runs each median rests on
    throttled_counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # of those, throttled
    kinds: Mapping[str, str] = field(default_factory=dict)  # device key → discrete | integrated | cpu
    measured_gflops: Mapping[str, float] = field(default_factory=dict)  # the doctor's matmul_fp32
    free_in: Mapping[str, float | None] = field(default_factory=dict)
    # devices busy with another program whose ``free_in`` is only a guess: no earlier spell of such use
    # lasted longer than this one so far ("as long again as so far")
    free_in_guessed: frozenset[str] = frozenset()

    def speed_ratio(self, fast: str, slow: str) -> float | None:
        """How many times faster ``fast`` is than ``slow`` (None: a device of unknown class)."""
        measured = self.measured_gflops
        if measured.get(fast) and measured.get(slow):
            return measured[fast] / measured[slow]
        a, b = DEFAULT_SPEED.get(self.kinds.get(fast, "")), DEFAULT_SPEED.get(self.kinds.get(slow, ""))
        return None if a is None or b is None else a / b

    def run_s(self, family: str, device_key: str) -> float | None:
        medians = self.run_medians.get(family)
        if not medians:
            return None
        if device_key in medians:
            return medians[device_key]
        counts = self.run_counts.get(family, {})
        source = max(medians, key=lambda k: (counts.get(k, 0), medians[k]))
        ratio = self.speed_ratio(source, device_key)
        return None if ratio is None else medians[source] * ratio

    def energy_j(self, family: str, device_key: str) -> float | None:
        measured = self.energy_medians.get(family, {})
        if device_key in measured:
            return measured[device_key]
        run = self.run_s(family, device_key)
        watts = DEFAULT_WATTS.get(self.kinds.get(device_key, ""))
        return None if run is None or watts is None else run * watts

    def scaled(self, family: str, device_key: str) -> bool:
        """Whether the estimate there is scaled from another device (the family never ran there)."""
        return device_key not in self.run_medians.get(family, {})
