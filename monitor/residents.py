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

import dataclasses
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gputray.monitor.proc_name import process_name
from gputray.monitor.records import ProcessUse, Snapshot
from gputray.monitor.resident_kinds import BUILTIN, ResidentKind
from gputray.monitor.resident_ports import (
    PortFrom,
    PortGuess,
    choose_port,
    listening_ports,
    named_ports,
    ownerless_listening,
)

if TYPE_CHECKING:  # asking a resident's API (urllib, http, ssl) loads where residents are walked, not
    import logging

    from gputray.monitor.resident_api import Probe  # where `gputray status` reads a ResidentView


def _log() -> logging.Logger:
    """This module's logger, loaded where residents are looked at (`gputray status` only reads views)."""
    import logging

    return logging.getLogger("gputray.monitor.residents")


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
    # how ``port`` was found: "listening" (seen), else "command line", "environment", "usual port" or
    # "configured", where the socket's owner cannot be seen (Wine; another user's process on Linux)
    port_from: str | None = None

    def idle_s(self, now_s: float) -> float:
        return 0.0 if self.idle_since_s is None else max(0.0, now_s - self.idle_since_s)


@dataclass(frozen=True)
class Found:
    kind: ResidentKind
    pid: int
    port: int | None
    family: frozenset[int]  # its pid and its descendants'
    port_from: PortFrom | None = None  # how the port was found (resident_ports)


@dataclass
class _Seen:
    last_active_s: float
    activity: str | None


def find_residents(kinds: Iterable[ResidentKind]) -> list[Found]:
    """The processes that are residents now (psutil's process table), each with its port
    (``resident_ports``: seen listening, else named or usual where the owner cannot be seen)."""
    import psutil

    kinds = tuple(kinds)
    hits: dict[int, tuple[ResidentKind, psutil.Process, tuple[str, ...]]] = {}
    for proc in psutil.process_iter():
        # each read on its own: a process may be gone or not ours to read, and under Wine reading a
        # system process's name raises a bare OSError (WinError 87) that psutil's attrs= does not catch
        try:
            name = process_name(proc)
            argv = tuple(proc.cmdline() or ())
        except Exception:
            continue
        kind = _kind_of(kinds, proc, name, argv)
        if kind is not None:
            hits[proc.pid] = (kind, proc, argv)
    found: list[Found] = []
    ownerless: list[frozenset[int] | None] = []  # read once, and only when a port is not seen
    for pid, (kind, proc, argv) in hits.items():
        try:
            if any(parent.pid in hits for parent in proc.parents()):
                continue  # a child of another resident (llama-swap's llama-server) is part of it
            children = proc.children(recursive=True)
            family = frozenset({pid, *(c.pid for c in children)})
        except Exception:
            continue
        guess = _port_of(kind, proc, children, argv, ownerless)
        found.append(Found(kind, pid, guess.port if guess else None, family, guess.source if guess else None))
    return _one_per_port(found, {pid: proc for pid, (_, proc, _) in hits.items()})


def _kind_of(
    kinds: tuple[ResidentKind, ...], proc: object, name: str, argv: tuple[str, ...]
) -> ResidentKind | None:
    cmdline = " ".join(argv)
    for kind in kinds:
        if kind.matches(name, cmdline):
            return kind
    for kind in kinds:
        if kind.may_match_by_script(name, cmdline) and _runs_script_beside(proc, argv, kind.script_beside):
            return kind
    return None


def _port_of(
    kind: ResidentKind,
    proc: object,
    children: list[Any],
    argv: tuple[str, ...],
    ownerless: list[frozenset[int] | None],
) -> PortGuess | None:
    own = listening_ports(proc)
    if kind.api == "custom" and kind.port is not None:
        return PortGuess(kind.port, "listening" if own and kind.port in own else "configured")
    family = [] if own else sorted({p for c in children for p in (listening_ports(c) or ())})
    if own or family:
        return choose_port(kind, own, family, [], None)
    try:
        environ = proc.environ() if kind.api == "ollama" else None  # type: ignore[attr-defined]
    except Exception:
        environ = None
    if not ownerless:
        ownerless.append(ownerless_listening())
    return choose_port(kind, own, family, named_ports(argv, environ), ownerless[0])


def _one_per_port(found: list[Found], procs: dict[int, Any]) -> list[Found]:
    """Where two residents of one kind claim the same port without being seen listening on it (an
    ``ollama run`` client beside ``ollama serve`` under Wine), the one seen listening, else the oldest
    process, keeps it; the others are shown without a port."""
    claims: dict[tuple[str, int], list[Found]] = {}
    for f in found:
        if f.port is not None:
            claims.setdefault((f.kind.name, f.port), []).append(f)
    losers: set[int] = set()
    for group in claims.values():
        if len(group) > 1:
            keep = min(group, key=lambda f: (f.port_from != "listening", _started(procs.get(f.pid))))
            losers |= {f.pid for f in group if f is not keep and f.port_from != "listening"}
    return [dataclasses.replace(f, port=None, port_from=None) if f.pid in losers else f for f in found]


def _started(proc: Any) -> float:
    try:
        return float(proc.create_time())
    except Exception:
        return float("inf")


def _runs_script_beside(proc: object, argv: tuple[str, ...], marks: tuple[str, ...]) -> bool:
    """Whether a ``.py`` the command line runs has every folder of ``marks`` beside it (ComfyUI's
    ``python.exe main.py`` run in its folder names no ComfyUI)."""
    scripts = [a for a in argv[1:] if a.lower().endswith(".py")]
    if not scripts:
        return False
    try:
        cwd = str(proc.cwd())  # type: ignore[attr-defined]
    except Exception:
        return False
    for script in scripts:
        folder = os.path.dirname(os.path.join(cwd, script))
        if all(os.path.isdir(os.path.join(folder, mark)) for mark in marks):
            return True
    return False


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
        self._cannot_list = False  # the last look could not list processes (said once, in the log)

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
        try:
            residents = self._residents_now(snapshot, now)
        except OSError as exc:  # out of open files (EMFILE), /proc unreadable: the last look stands
            if not self._cannot_list:
                _log().warning(
                    "residents: cannot list processes (%s); the last look stands until it can", exc
                )
            self._cannot_list = True
            return self.latest
        if self._cannot_list:
            _log().info("residents: processes can be listed again")
        self._cannot_list = False
        views = []
        alive = set()
        for found in residents:
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
            port_from=found.port_from,
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
