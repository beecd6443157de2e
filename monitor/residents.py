"""The residents running now: found by process and port, asked through their API, with the GPU
memory each holds and since when it has been idle.

``ResidentWatch.look(snapshot)`` scans the process table (psutil), keeps the processes a
``ResidentKind`` matches (not the children of another resident: llama-swap's llama-server is
llama-swap's), finds the port each listens on, asks its API (``resident_api.probe``) and joins the
monitor's per-process rows (NVML, DRM fdinfo, KFD, the simulated GPUs) for the device it uses and,
where its API does not say, what it holds. Idle since: the last time it was seen serving (its API said
busy, its activity token moved, or its processes used the GPU), or since it was first seen.

The whole process table (a name and a command line for each of a desktop's ~500 processes) is read
at most every ``FULL_WALK_S``, or sooner when a process the walk has not seen starts using a GPU (a
resident loading a model); between walks the residents already found are followed while they live.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputray.monitor.records import ProcessUse, Snapshot
from gputray.monitor.resident_kinds import BUILTIN, ResidentKind

if TYPE_CHECKING:  # asking a resident's API (urllib, http, ssl) loads where residents are walked, not
    from gputray.monitor.resident_api import Probe  # where `gputray status` reads a ResidentView

BUSY_UTIL_PERCENT = 5.0  # a resident's processes using more of a GPU than this are serving
FULL_WALK_S = 30.0  # the process table read whole at most this often (module docstring)


@dataclass(frozen=True)
class ResidentView:
    """One resident as gputray sees it now (``status --json``'s ``residents``)."""

    name: str  # the kind's name: "ComfyUI"
    pid: int
    port: int | None
    device: str | None  # the device key it holds memory on; None: none seen
    held_bytes: int | None  # GPU memory it holds (its API's figure, else the per-process rows)
    models: tuple[str, ...]
    busy: bool  # serving a request now (as far as can be seen)
    idle_since_s: float | None  # wall clock; None while busy
    answered: bool  # its API answered
    can_free: bool  # it has a call that frees memory (and something to free)

    def idle_s(self, now_s: float) -> float:
        return 0.0 if self.idle_since_s is None else max(0.0, now_s - self.idle_since_s)


@dataclass(frozen=True)
class Found:
    kind: ResidentKind
    pid: int
    port: int | None
    family: frozenset[int]  # its pid and its descendants'


@dataclass
class _Seen:
    last_active_s: float
    activity: str | None


def _listening_ports(proc: object) -> list[int]:
    try:
        listing = getattr(proc, "net_connections", None) or proc.connections  # type: ignore[attr-defined]
        conns = listing(kind="tcp")
    except Exception:  # gone, or not ours to read
        return []
    return sorted({c.laddr.port for c in conns if c.status == "LISTEN" and c.laddr})


def find_residents(kinds: Iterable[ResidentKind]) -> list[Found]:
    """The processes that are residents now (psutil's process table)."""
    import psutil

    kinds = tuple(kinds)
    hits: dict[int, tuple[ResidentKind, psutil.Process]] = {}
    for proc in psutil.process_iter():
        # each read on its own: a process may be gone or not ours to read, and under Wine reading a
        # system process's name raises a bare OSError (WinError 87) that psutil's attrs= does not catch
        try:
            name = proc.name() or ""
            cmdline = " ".join(proc.cmdline() or ())
        except Exception:
            continue
        kind = next((k for k in kinds if k.matches(name, cmdline)), None)
        if kind is not None:
            hits[proc.pid] = (kind, proc)
    found = []
    for pid, (kind, proc) in hits.items():
        try:
            if any(parent.pid in hits for parent in proc.parents()):
                continue  # a child of another resident (llama-swap's llama-server) is part of it
            family = frozenset({pid, *(c.pid for c in proc.children(recursive=True))})
        except Exception:
            continue
        ports = _listening_ports(proc)
        port = kind.port if kind.port in ports else (ports[0] if ports else None)
        if kind.api == "custom" and kind.port is not None:
            port = kind.port
        found.append(Found(kind, pid, port, family))
    return found


class ResidentWatch:
    """Keeps the residents' idle times between looks (module docstring)."""

    def __init__(
        self,
        kinds: tuple[ResidentKind, ...] = BUILTIN,
        *,
        clock: Callable[[], float] = time.time,
        finder: Callable[[tuple[ResidentKind, ...]], list[Found]] = find_residents,
        prober: Callable[[Found], Probe] | None = None,
    ) -> None:
        self.kinds = kinds
        self._clock = clock
        self._finder = finder
        self._prober = prober if prober is not None else _probe_its_api
        self._seen: dict[int, _Seen] = {}
        self.latest: tuple[ResidentView, ...] = ()
        self._found: list[Found] | None = None  # the last walk's residents
        self._walked_at = 0.0
        self._gpu_pids_walked: frozenset[int] = frozenset()  # the GPU users when the walk was made

    def _residents_now(self, snapshot: Snapshot | None, now: float) -> list[Found]:
        """The last walk's residents that still live, or a new walk when one is due (module docstring)."""
        import psutil

        gpu_pids = frozenset(p.pid for p in snapshot.processes) if snapshot else frozenset()
        found = self._found
        if (
            found is None
            or not 0 <= now - self._walked_at < FULL_WALK_S
            or not gpu_pids <= self._gpu_pids_walked
        ):
            found = self._finder(self.kinds)
            self._walked_at, self._gpu_pids_walked = now, gpu_pids
        else:
            found = [f for f in found if psutil.pid_exists(f.pid)]
        self._found = found
        return found

    def look(self, snapshot: Snapshot | None) -> tuple[ResidentView, ...]:
        now = self._clock()
        views = []
        alive = set()
        for found in self._residents_now(snapshot, now):
            alive.add(found.pid)
            views.append(self._view(found, self._prober(found), snapshot, now))
        for pid in set(self._seen) - alive:
            del self._seen[pid]
        self.latest = tuple(views)
        return self.latest

    def _view(self, found: Found, said: Probe, snapshot: Snapshot | None, now: float) -> ResidentView:
        rows = [p for p in (snapshot.processes if snapshot else ()) if p.pid in found.family]
        device, row_bytes, util = _on_device(rows)
        seen = self._seen.get(found.pid)
        serving = bool(said.busy) or util >= BUSY_UTIL_PERCENT
        if seen is None:
            seen = self._seen[found.pid] = _Seen(now, said.activity)
        elif said.activity != seen.activity:
            serving = True  # it served a request since the last look
            seen.activity = said.activity
        if serving:
            seen.last_active_s = now
        held = said.held_bytes if said.held_bytes else row_bytes
        return ResidentView(
            name=found.kind.name,
            pid=found.pid,
            port=found.port,
            device=device,
            held_bytes=held,
            models=said.models,
            busy=serving,
            idle_since_s=None if serving else seen.last_active_s,
            answered=said.answered,
            can_free=said.can_free and (found.port is not None or found.kind.api == "lmstudio"),
        )


def _on_device(rows: list[ProcessUse]) -> tuple[str | None, int | None, float]:
    """The device where these processes hold the most, what they hold there, their use of it."""
    by_device: dict[str, int] = {}
    util: dict[str, float] = {}
    for row in rows:
        by_device[row.device] = by_device.get(row.device, 0) + (row.vram_bytes or 0) + (row.shared_bytes or 0)
        util[row.device] = util.get(row.device, 0.0) + (row.util_percent or 0.0)
    if not by_device:
        return None, None, 0.0
    device = max(by_device, key=lambda k: by_device[k])
    return device, by_device[device], util[device]


def _probe_its_api(found: Found) -> Probe:
    from gputray.monitor.resident_api import probe

    return probe(found.kind.api, found.port)
