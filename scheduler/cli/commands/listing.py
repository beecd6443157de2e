"""The ``gputray queue`` table: columns that fit the terminal (80 columns and up), local times, and
``--filter state=failed,device=780m``.

Columns: ID, STATE, PRI (priority), DEVICE (the GPU's name where the owner knows it), ENV (the Python
env a torch job ran in), START and END (local time: ``14:02`` today, ``11-30 14:02`` before),
DUR (how long it ran or has been running), PROGRESS (a running job that reports its progress: how far,
and the time left at its pace, ``45% ~25 s``; shown only when a listed job reports one), ENERGY (the
GPU energy its run used, ``*`` where the device ran other work too; shown only when a listed task has
one), NAME and REASON. When the terminal is narrow, NAME,
REASON and DEVICE share the room the other columns leave (cut with "…"); when that is too little,
the gaps narrow, then times of other days show only the date. A pipe gets every cell in full unless
``COLUMNS`` says a width.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
import time
from collections.abc import Mapping, Sequence

import msgspec

from gputray.monitor.units import format_energy_j
from gputray.scheduler.cli.commands.common import reason_text, shown, terminal_cells
from gputray.scheduler.replies import DeviceSlots, TaskView
from gputray.scheduler.tasks.times import about, local_time

FILTER_KEYS = ("state", "device", "name", "env")
HEADERS = ("ID", "STATE", "PRI", "DEVICE", "ENV", "START", "END", "DUR", "NAME", "REASON")
#: With an ENERGY column (a listed task has a measured energy): after DUR.
ENERGY_HEADERS = (*HEADERS[:8], "ENERGY", *HEADERS[8:])
SHARED_MARK = "*"
SHARED_NOTE = "* the GPU ran other work too: the energy is the whole device's over the run"
ESTIMATED_MARK = "~"
ESTIMATED_NOTE = "~ part of it counted from power: the GPU's energy counter glitched"
# The columns that give way when the terminal is narrow, and the narrowest each is cut to.
SHRINK = {"REASON": 12, "NAME": 10, "DEVICE": 8}


def device_label(device: str | None, names: Mapping[str, str]) -> str:
    """The GPU's name ("Radeon 780M") where the owner knows it, else the key; "-" before placement."""
    if not device:
        return "-"
    return names.get(device, device)


def reason_shown(t: TaskView) -> str:
    """The task's reason, with its exit status where the reason does not already say how it ended, and
    a pending task's run-elsewhere offer with the command that takes it (the tray asks in a notification;
    on the command line this is where it is seen)."""
    reason, code = reason_text(t), t.exit_code
    if t.offer is not None and t.state in ("queued", "waiting"):
        o = t.offer
        offer = (
            f"{o.device_name} is free and would run it in {about(o.run_s)}:"
            f" gputray edit {t.id} --device {o.device_key}"
            f" (keep waiting: gputray edit {t.id} --decline-offer)"
        )
        return f"{reason}; {offer}" if reason else offer
    if t.state != "failed" or code is None:
        return reason
    from gputray.scheduler.reasons.codes import says_how_it_ended

    if says_how_it_ended(t.reason):
        return reason
    return f"exit {code}" + (f"; {reason}" if reason else "")


def duration(task: TaskView, now_s: float) -> str:
    started, ended = task.started_at, task.ended_at
    if started is None or (ended is None and task.state != "running"):
        return "-"
    end = ended if ended is not None else now_s
    paused = task.paused_s + (max(0.0, end - task.paused_at) if task.paused_at is not None else 0.0)
    seconds = max(0, round(end - started - paused))  # how long it has worked: pauses left out
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}" if m else f"{s}s"


def terminal_width() -> int | None:
    """The width to fit: ``COLUMNS`` when set, the terminal's when stdout is one, else None (no limit)."""
    text = os.environ.get("COLUMNS", "")
    if text.isdigit() and int(text) > 0:
        return int(text)
    if sys.stdout.isatty():
        return shutil.get_terminal_size((80, 24)).columns
    return None


def cut_to_cells(text: str, width: int) -> str:
    """``text`` in at most ``width`` terminal columns: cut with "…" when it is wider."""
    if terminal_cells(text) <= width:
        return text
    out, used = "", 0
    for c in text:
        cells = terminal_cells(c)
        if used + cells > width - 1:
            break
        out += c
        used += cells
    return out + "…"


def progress_cell(task: TaskView) -> str:
    """``45% ~25 s`` (done, and the time left at its pace), ``3%`` (too early to tell, or its job is
    paused: a frozen job has no time left to tell, as the tray's row says none), "-" (none)."""
    if task.progress is None or task.state != "running":
        return "-"
    done = f"{math.floor(task.progress * 100)}%"
    return done if task.eta_s is None or task.paused_at is not None else f"{done} {about(task.eta_s)}"


def energy_cell(task: TaskView) -> str:
    """``850 J``, ``12.3 kJ*`` (shared: the device ran other work too), "-" where none was measured."""
    if task.energy_j is None:
        return "-"
    marks = (SHARED_MARK if task.energy_shared else "") + (
        ESTIMATED_MARK if task.energy_estimated_s > 0 else ""
    )
    return format_energy_j(task.energy_j) + marks


def _rows(
    tasks: Sequence[TaskView], names: Mapping[str, str], now_s: float, short: bool, headers: Sequence[str]
) -> list[list[str]]:
    rows = [list(headers)]
    energy, progress = "ENERGY" in headers, "PROGRESS" in headers
    for t in tasks:
        rows.append(
            [
                str(t.id),
                t.shown_state,
                str(t.priority),
                shown(device_label(t.device, names)),
                shown(t.env or "-"),
                local_time(t.started_at, now_s, short=short),
                local_time(t.ended_at, now_s, short=short),
                duration(t, now_s),
                *([progress_cell(t)] if progress else []),
                *([energy_cell(t)] if energy else []),
                shown(t.name),
                shown(reason_shown(t)),
            ]
        )
    return rows


def _share(natural: dict[int, int], room: int) -> dict[int, int]:
    """Split ``room`` cells among columns fairly: a column that needs less than an equal share keeps
    its width, the rest share what is left (water filling)."""
    out: dict[int, int] = {}
    left = dict(natural)
    while left:
        share = room // len(left)
        small = {i: w for i, w in left.items() if w <= share}
        if not small:
            for n, i in enumerate(sorted(left)):
                out[i] = share + (1 if n < room - share * len(left) else 0)
            return out
        for i, w in small.items():
            out[i] = w
            room -= w
            del left[i]
    return out


def _fit(rows: list[list[str]], width: int | None, gap: int) -> list[int] | None:
    headers = rows[0]
    """Column widths that make the table fit ``width`` with ``gap`` spaces between columns: NAME,
    REASON and DEVICE share what the other columns leave; None when they would get less than
    ``SHRINK`` says."""
    natural = [max(terminal_cells(r[i]) for r in rows) for i in range(len(headers))]
    if width is None or sum(natural) + gap * (len(natural) - 1) <= width:
        return natural
    flex = [headers.index(name) for name in SHRINK]
    room = width - gap * (len(natural) - 1) - sum(w for i, w in enumerate(natural) if i not in flex)
    if room < sum(SHRINK.values()):
        return None
    shared = _share({i: natural[i] for i in flex}, room)
    return [shared.get(i, w) for i, w in enumerate(natural)]


def format_tasks(
    tasks: Sequence[TaskView],
    device_names: Mapping[str, str] | None = None,
    *,
    width: int | None = None,
    now_s: float | None = None,
) -> str:
    """The queue as a table that fits ``width`` terminal columns (None: every cell in full). Narrow
    terminals get one-space gaps, then dates without their time, before the columns get too narrow."""
    if not tasks:
        return "the queue is empty"
    now = time.time() if now_s is None else now_s
    names = device_names or {}
    headers = ENERGY_HEADERS if any(t.energy_j is not None for t in tasks) else HEADERS
    if any(t.progress is not None and t.state == "running" for t in tasks):
        headers = (*headers[:8], "PROGRESS", *headers[8:])
    layout: tuple[list[list[str]], list[int], int] | None = None
    for short, gap in ((False, 2), (False, 1), (True, 2), (True, 1)):
        rows = _rows(tasks, names, now, short, headers)
        widths = _fit(rows, width, gap)
        if widths is not None:
            layout = rows, widths, gap
            break
    if layout is None:  # narrower than any sensible table: the narrowest one
        widths = [
            min(max(terminal_cells(r[i]) for r in rows), SHRINK.get(h, 99)) for i, h in enumerate(headers)
        ]
        layout = rows, widths, 1
    rows, widths, gap = layout
    lines = []
    for r in rows:
        cells = [cut_to_cells(cell, widths[i]) for i, cell in enumerate(r)]
        padded = [c + " " * (widths[i] - terminal_cells(c)) for i, c in enumerate(cells[:-1])]
        lines.append((" " * gap).join([*padded, cells[-1]]).rstrip())
    if any(t.energy_shared and t.energy_j is not None for t in tasks):
        lines.append(cut_to_cells(SHARED_NOTE, width) if width is not None else SHARED_NOTE)
    if any(t.energy_estimated_s > 0 and t.energy_j is not None for t in tasks):
        lines.append(cut_to_cells(ESTIMATED_NOTE, width) if width is not None else ESTIMATED_NOTE)
    return "\n".join(lines)


def format_devices(devices: Sequence[DeviceSlots]) -> str:
    """``jobs: GeForce RTX 5060 Ti 1/1 (frees in ~12 min) · Radeon 780M 0/1 (busy, frees in ~80 s) · CPU
    2/4 (paused)``: running/slots per device and when a busy one is estimated to free up; "busy" where a
    slot is open yet something else (an LLM server) holds the device (only the owner knows the slots:
    "" without it)."""
    parts = []
    for d in devices:
        if d.slots is None:
            continue
        paused = " (paused)" if d.paused else ""
        busy = "busy, " if d.running < d.slots else ""
        frees = f" ({busy}frees in {about(d.free_in_s)})" if d.free_in_s and not d.paused else ""
        parts.append(f"{shown(d.name or d.key)} {d.running}/{d.slots}{paused}{frees}")
    return "jobs: " + " · ".join(parts) if parts else ""


class TaskFilter(msgspec.Struct, frozen=True):
    """``state=failed,device=780m``: every key must match (AND), any value of a repeated key (OR)."""

    wanted: Mapping[str, tuple[str, ...]]

    @property
    def names_a_state(self) -> bool:
        return "state" in self.wanted

    def matches(self, task: TaskView, names: Mapping[str, str]) -> bool:
        for key, values in self.wanted.items():
            if key == "state":
                ok = task.state in values
            elif key == "device":
                device = task.device or ""
                label = _squash(device_label(device, names) + " " + device)
                ok = bool(device) and any(_squash(v) in label for v in values)
            elif key == "env":
                ok = (task.env or "") in values
            else:
                ok = any(v.lower() in task.name.lower() for v in values)
            if not ok:
                return False
        return True


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def parse_filter(items: Sequence[str], states: Sequence[str]) -> TaskFilter:
    """``--filter`` values → TaskFilter; ValueError naming what is wrong."""
    wanted: dict[str, list[str]] = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            key, value = key.strip().lower(), value.strip()
            if not sep or not value:
                raise ValueError(f"--filter takes KEY=VALUE like state=failed,device=780m, not {part!r}")
            if key not in FILTER_KEYS:
                raise ValueError(f"--filter {key!r}: filter by {', '.join(FILTER_KEYS)}")
            if key == "state" and value not in states:
                raise ValueError(f"--filter state={value!r}: the states are {', '.join(states)}")
            wanted.setdefault(key, []).append(value)
    return TaskFilter({k: tuple(v) for k, v in wanted.items()})
