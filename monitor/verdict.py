"""Busy/free verdicts with hysteresis, counting only *external* use of a GPU.

A GPU is busy for our queue when someone else uses it: utilisation above a threshold sustained over a
window, a foreign process holding much memory while the GPU is active, or a temperature over the limit.
Our own jobs are announced by the scheduler (``own_active``); samples taken while one runs, or shortly
after, are not counted, so a finished job does not block the next one for the whole window.
A foreign context that holds memory but has been idle for ``stale_context_s`` stops pinning the GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from gputray.monitor.busy_why import (
    Asleep,
    BusyWhy,
    Hot,
    Lost,
    MemoryHeld,
    MemoryHeldRecently,
    NoData,
    UtilHigh,
    Who,
)
from gputray.monitor.records import DeviceReading, ProcessUse, Verdict
from gputray.monitor.units import GIB


@dataclass(frozen=True)
class BusyThresholds:
    """The config's ``[thresholds]``; each range is checked when the config is read (a value outside it is
    reported and the default used: ``gputray.scheduler.config``)."""

    busy_util_percent: Annotated[float, Meta(ge=0.0, le=100.0)] = 30.0
    busy_window_s: Annotated[float, Meta(ge=0.0, le=86_400.0)] = 10.0
    free_window_s: Annotated[float, Meta(ge=0.0, le=86_400.0)] = 5.0
    external_vram_bytes: Annotated[int, Meta(ge=0, le=1 << 50)] = GIB
    stale_context_s: Annotated[float, Meta(ge=0.0, le=86_400.0)] = 60.0
    temp_limit_c: Annotated[float, Meta(ge=20.0, le=150.0)] = 85.0
    igpu_temp_limit_c: Annotated[float, Meta(ge=20.0, le=150.0)] = 90.0
    temp_hysteresis_c: Annotated[float, Meta(ge=0.0, le=50.0)] = 5.0
    own_grace_s: Annotated[float, Meta(ge=0.0, le=3600.0)] = 3.0


@dataclass
class _DeviceState:
    util_high_since: float | None = None
    util_low_since: float | None = None
    util_busy: bool = False
    last_active_s: float | None = None
    hot: bool = False
    own_until_s: float = float("-inf")


class VerdictTracker:
    """Keeps the per-device state the hysteresis needs; one instance per Monitor."""

    def __init__(self, thresholds: BusyThresholds | None = None) -> None:
        self.thresholds = thresholds or BusyThresholds()
        self._states: dict[str, _DeviceState] = {}

    def temp_limit_c(self, reading: DeviceReading) -> float:
        if reading.info.temp_limit_c is not None:
            return reading.info.temp_limit_c
        if reading.info.kind == "integrated":
            return self.thresholds.igpu_temp_limit_c
        return self.thresholds.temp_limit_c

    def forget(self, key: str) -> None:
        self._states.pop(key, None)

    def is_hot(self, key: str) -> bool:
        state = self._states.get(key)
        return bool(state and state.hot)

    def update(
        self,
        reading: DeviceReading,
        foreign: list[ProcessUse],
        *,
        own_active: bool,
        now_s: float,
    ) -> Verdict:
        t = self.thresholds
        key = reading.info.key
        st = self._states.setdefault(key, _DeviceState())
        sample = reading.sample
        name = reading.info.name

        if sample.state == "lost":
            return Verdict(key, True, (Lost(device=name, why=sample.reason),))
        if sample.state == "unavailable":
            return Verdict(key, True, (NoData(device=name, why=sample.reason),))
        if sample.state == "asleep":
            # A sleeping GPU is idle and a job may wake it: judge the wake-up spike afresh.
            st.util_high_since = st.util_low_since = None
            st.util_busy = False
            return Verdict(key, False, (Asleep(device=name),))

        reasons: list[BusyWhy] = []

        # Temperature, with hysteresis so the verdict does not flap at the limit.
        limit = self.temp_limit_c(reading)
        if sample.temp_c is not None:
            if sample.temp_c >= limit:
                st.hot = True
            elif sample.temp_c <= limit - t.temp_hysteresis_c:
                st.hot = False
            if st.hot:
                reasons.append(Hot(device=name, temp_c=sample.temp_c, limit_c=limit))

        # Utilisation, counting only time when none of our jobs ran there.
        if own_active:
            st.own_until_s = now_s + t.own_grace_s
        ours = own_active or now_s < st.own_until_s
        util = sample.util_percent
        # The GPU's activity is someone else's only when none of ours ran there, or when a foreign
        # process's own figure says it: our job's load must not make an idle resident's memory look
        # in use (it would pin the device for stale_context_s after every job of ours).
        active = util is not None and util >= t.busy_util_percent
        foreign_active = active and (not ours or _any_active(foreign, t.busy_util_percent))
        if foreign_active:
            st.last_active_s = now_s
        if not ours and util is not None:
            if util >= t.busy_util_percent:
                st.util_low_since = None
                if st.util_high_since is None:
                    st.util_high_since = now_s
                if now_s - st.util_high_since >= t.busy_window_s:
                    st.util_busy = True
            else:
                st.util_high_since = None
                if st.util_low_since is None:
                    st.util_low_since = now_s
                if now_s - st.util_low_since >= t.free_window_s:
                    st.util_busy = False
        elif ours:
            st.util_high_since = st.util_low_since = None
            st.util_busy = False

        foreign_bytes = sum(_bytes(p) for p in foreign)
        who = _who(foreign)
        if st.util_busy:
            # Name the rule that holds, with the figure now and when it lets go (the free window).
            free_in_s = None
            if util is not None and util < t.busy_util_percent and st.util_low_since is not None:
                free_in_s = math.ceil(max(0.0, t.free_window_s - (now_s - st.util_low_since)))
            reasons.append(
                UtilHigh(
                    who=who if foreign_bytes else None,
                    held_bytes=foreign_bytes,
                    threshold_pct=t.busy_util_percent,
                    window_s=t.busy_window_s,
                    util_pct=util,
                    free_in_s=free_in_s,
                )
            )
        elif foreign_bytes >= t.external_vram_bytes and who is not None:
            active_ago_s = None if st.last_active_s is None else now_s - st.last_active_s
            if active_ago_s is not None and active_ago_s < t.stale_context_s:
                if foreign_active and util is not None:
                    reasons.append(
                        MemoryHeld(
                            who=who,
                            held_bytes=foreign_bytes,
                            util_pct=util,
                            threshold_pct=t.busy_util_percent,
                        )
                    )
                else:
                    reasons.append(
                        MemoryHeldRecently(
                            who=who,
                            held_bytes=foreign_bytes,
                            threshold_pct=t.busy_util_percent,
                            ago_s=active_ago_s,
                            free_in_s=math.ceil(t.stale_context_s - active_ago_s),
                        )
                    )
        return Verdict(key, bool(reasons), tuple(reasons), hot=st.hot)


def _bytes(p: ProcessUse) -> int:
    return (p.vram_bytes or 0) + (p.shared_bytes or 0)


def _any_active(foreign: list[ProcessUse], threshold_pct: float) -> bool:
    return any(p.util_percent is not None and p.util_percent >= threshold_pct for p in foreign)


def _who(foreign: list[ProcessUse]) -> Who | None:
    """``llama-server`` (and how many others): the processes behind the memory figure, so that it adds
    up to what the process lines show."""
    if not foreign:
        return None
    top = max(foreign, key=_bytes)
    return Who(top.name, len({p.pid for p in foreign if p.pid != top.pid}))
