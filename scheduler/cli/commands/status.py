"""``gputray status``: one line per GPU plus the host; ``--json`` for scripts; ``--watch`` refreshes."""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gputray.monitor.readings_text import extra_parts
from gputray.monitor.units import DASH, format_number, format_pair
from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.common import (
    EXIT_NO_OWNER,
    EXIT_REFUSED,
    add_monitor_source_args,
    error,
    monitor_from_args,
    positive_seconds,
    print_json,
    terminal_cells,
    uses_custom_source,
)
from gputray.scheduler.cli.commands.listing import cut_to_cells, terminal_width
from gputray.scheduler.paths import app_paths

if TYPE_CHECKING:  # the monitor itself loads only where this command reads the GPUs itself
    from gputray.monitor.busy_why import BackendNote, SampleWhy
    from gputray.monitor.monitor import Monitor
    from gputray.monitor.records import DeviceReading, Snapshot
    from gputray.monitor.scenario import ScenarioError
    from gputray.scheduler.cluster_port import DeviceLine
    from gputray.scheduler.replies import StatusReply

BAR_CELLS = 10
MIN_ROOM = 16  # the fewest columns a line under a GPU's name keeps for its fields, else it starts at 2
# Rates (per-process engine %, host CPU %) need two readings; this gap keeps `status` quick.
RATE_GAP_S = 0.25


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "status",
        help="show every GPU and the host",
        description=(
            "Print one line per GPU (utilisation, temperature, power, VRAM, shared memory, clock), "
            "under it what the GPU reports of its PCIe link (now and at best: an idle link slows "
            "down, which is normal), fan, power limit, memory clock and video encoder/decoder load, "
            "and one line for the host. A sleeping GPU is shown as asleep and is not woken."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print a JSON document instead of text")
    parser.add_argument(
        "--watch",
        nargs="?",
        type=positive_seconds,
        const=1.0,
        metavar="SECONDS",
        help="refresh in place every SECONDS (default 1) until Ctrl+C",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="every machine of the cluster, grouped by machine; each device carries `machine` and a key "
        "unique across machines (desk/pci:0000:01:00.0)",
    )
    add_monitor_source_args(parser)
    parser.set_defaults(func=run)


def bar(percent: float | None) -> str:
    if percent is None:
        return "[" + " " * BAR_CELLS + "]"
    filled = round(max(0.0, min(100.0, percent)) / 100 * BAR_CELLS)
    return "[" + "█" * filled + "░" * (BAR_CELLS - filled) + "]"


def laid_out(head: Sequence[str], below: Sequence[str], indent: int, width: int | None) -> str:
    """``head`` joined by two spaces on one line and ``below`` on a line under it, indented by ``indent``.
    With a ``width`` (a terminal's), no line is wider: the head takes the fields that fit, the rest go
    first under it, and each line under it takes as many whole fields as fit; a field too wide even
    for a line of its own is cut with "…". The terminal then never wraps a line inside a word."""
    if width is None:
        return "\n".join(["  ".join(head), *([" " * indent + "  ".join(below)] if below else [])])
    if width - indent < MIN_ROOM:
        indent = 2
    first = head[0]
    spilled: list[str] = []
    for i, field in enumerate(head[1:], 1):
        if terminal_cells(first) + 2 + terminal_cells(field) > width:
            spilled = list(head[i:])
            break
        first += "  " + field
    lines = [cut_to_cells(first, width)]
    line = ""
    for field in (f.strip() for f in [*spilled, *below]):
        longer = f"{line}  {field}" if line else " " * indent + field
        if line and terminal_cells(longer) > width:
            lines.append(cut_to_cells(line, width))
            longer = " " * indent + field
        line = longer
    if line:
        lines.append(cut_to_cells(line, width))
    return "\n".join(lines)


def _words(code: SampleWhy | BackendNote) -> str:
    """A backend's reason (a ``busy_why`` code) in English; the renderer loads only when one is shown."""
    from gputray.scheduler.reasons.render import render

    return render(code)


def device_line(reading: DeviceReading, name_width: int, width: int | None = None) -> str:
    info, s = reading.info, reading.sample
    name = info.name.ljust(name_width)
    if s.state != "ok":
        said = f"{s.state}: {_words(s.reason) if s.reason is not None else DASH}"
        if width is None or terminal_cells(f"{name}  {said}") <= width:
            return f"{name}  {said}"
        indent = name_width + 2 if width - name_width - 2 >= MIN_ROOM else 2
        words = textwrap.wrap(said, width - indent, break_on_hyphens=False)  # the reason, at spaces
        if indent == 2:  # too narrow for anything beside the name: the reason under it
            return "\n".join([cut_to_cells(name.rstrip(), width), *("  " + w for w in words)])
        return "\n".join([f"{name}  {words[0]}", *(" " * indent + w for w in words[1:])])
    vram_total = s.vram_total_bytes if s.vram_total_bytes is not None else info.vram_total_bytes
    shared_total = s.shared_total_bytes if s.shared_total_bytes is not None else info.shared_total_bytes
    parts = [
        name,
        bar(s.util_percent),
        format_number(s.util_percent, " %").rjust(5),
        format_number(s.temp_c, " °C").rjust(6),
        format_number(s.power_w, " W", 1).rjust(8),
        "VRAM " + format_pair(s.vram_used_bytes, vram_total),
    ]
    if shared_total is not None or s.shared_used_bytes is not None:
        parts.append("shared " + format_pair(s.shared_used_bytes, shared_total))
    if s.sclk_mhz is not None:
        parts.append(f"{s.sclk_mhz} MHz")
    if s.throttle:
        parts.append("throttled: " + ", ".join(s.throttle))
    extras = extra_parts(s)  # link, fan, power limit, memory clock, video engines: where known
    return laid_out(parts, extras, name_width + 2, width)


def render_text(snap: Snapshot, width: int | None = None) -> str:
    """The text of ``status``; with a ``width`` (a terminal's) every line fits it (see ``laid_out``)."""
    lines: list[str] = []
    if snap.simulated:
        lines.append("DEMO — simulated GPUs, not this machine's")
    readings = snap.readings
    if not readings:
        lines.append("No GPU found. (`gputray status --demo` shows a simulated RTX 5060 Ti + Radeon 780M.)")
        lines.extend(f"  {_words(note)}" for note in snap.notes)
    name_width = max((len(r.info.name) for r in readings), default=4)
    lines.extend(device_line(r, name_width, width) for r in readings)
    host = snap.host
    cpu = f"{bar(host.cpu_percent)} {format_number(host.cpu_percent, ' %').rjust(5)} CPU"
    ram = "RAM " + format_pair(host.ram_used_bytes, host.ram_total_bytes)
    lines.append(laid_out([f"{'Host'.ljust(name_width)}  {cpu}", ram], [], name_width + 2, width))
    procs = snap.processes
    if procs:
        names = {r.info.key: r.info.name for r in readings}
        lines.append("")
        lines.append(
            _columns(
                (f"{'PID':>7} ", f"{'process':<20}", f"{'GPU':<22}", f"{'memory':>10}", f"{'busy':>6}"), width
            )
        )
        for p in sorted(procs, key=lambda p: -((p.vram_bytes or 0) + (p.shared_bytes or 0))):
            mem = (p.vram_bytes or 0) + (p.shared_bytes or 0)
            mem_text = format_pair(mem, None) if p.vram_bytes or p.shared_bytes else DASH
            row = (
                f"{p.pid:>7} ",
                f"{p.name[:20]:<20}",
                f"{names.get(p.device, p.device)[:22]:<22}",
                f"{mem_text:>10}",
                f"{format_number(p.util_percent, ' %'):>6}",
            )
            lines.append(_columns(row, width))
    return "\n".join(lines)


def _columns(cells: Sequence[str], width: int | None) -> str:
    """One row of the process table: the columns that fit ``width`` whole, from the left."""
    line = cells[0]
    for cell in cells[1:]:
        if width is not None and terminal_cells(line) + 1 + terminal_cells(cell) > width:
            break
        line += " " + cell
    return line


# The residents the owner's last status named (Ollama, ComfyUI …), and when: shown under the GPUs.
_RESIDENTS: list[StatusReply] = []


def _owner_snapshot(client: ipc.IpcClient) -> Snapshot | None:
    """The running owner's latest readings, or None when no owner answers (or it has no sample yet)."""
    try:
        reply = client.ask(rq.Status())
    except ipc.IpcError:
        _RESIDENTS.clear()
        return None
    _RESIDENTS[:] = [reply]
    return reply.snapshot


def _show(snap: Snapshot, as_json: bool, refresh: bool) -> None:
    owner = _RESIDENTS[0] if _RESIDENTS else None
    if as_json:
        import msgspec

        from gputray.monitor.serialize import snapshot_to_json

        doc = snapshot_to_json(snap, _words)
        if owner is not None:
            doc["residents"] = msgspec.to_builtins(owner.residents)
            doc["taken"] = dict(owner.taken)
        print_json(doc)
        return
    text = render_text(snap, terminal_width())  # a terminal's width (or COLUMNS); a pipe's lines stay whole
    if owner is not None and owner.taken:
        names = {r.info.key: r.info.name for r in snap.readings}
        text += "\n" + "\n".join(
            f"taken: {names.get(key, key)} by {app} (gputray's jobs there are paused)"
            for key, app in owner.taken.items()
        )
    if owner is not None and owner.residents:
        from gputray.scheduler.resident_words import resident_line

        names = {r.info.key: r.info.name for r in snap.readings}
        now_s = owner.now_s or time.time()
        text += "\n" + "\n".join(
            "resident: " + resident_line(r, now_s, names.get(r.device or "")) for r in owner.residents
        )
    tty = sys.stdout.isatty()
    sys.stdout.write(
        ("\x1b[H\x1b[J" if tty and refresh else "") + text + "\n" + ("\n" if refresh and not tty else "")
    )
    sys.stdout.flush()


def _show_and_watch(
    snap: Snapshot, next_snap: Callable[[], Snapshot | None], args: argparse.Namespace
) -> int:
    """Show ``snap``; with --watch, show ``next_snap()`` every interval until Ctrl+C (exit status 130,
    from ``cli.main``) or the owner goes."""
    while True:
        _show(snap, args.json, args.watch is not None)
        if args.watch is None:
            return 0
        time.sleep(max(0.2, args.watch))
        refreshed = next_snap()
        if refreshed is None:
            return error("the gputray owner stopped answering", EXIT_NO_OWNER)
        snap = refreshed


def run(args: argparse.Namespace) -> int:
    if args.cluster:
        cluster = args.cluster_commands  # handed from above (cluster_port): the scheduler never imports it
        if cluster is None:
            return error("this gputray has no cluster support", EXIT_REFUSED)
        status_cluster: Callable[[argparse.Namespace, DeviceLine], int] = cluster.status
        return status_cluster(args, device_line)
    # Poll from one place only: while the tray or `gputray daemon` runs, show what it reads.
    if not uses_custom_source(args):
        client = ipc.IpcClient(app_paths(), timeout_s=5.0)
        local: list[Monitor] = []  # read the GPUs ourselves once the owner is gone

        def next_snap() -> Snapshot | None:
            snap = None if local else _owner_snapshot(client)
            if snap is not None:
                return snap
            if not local:
                print("gputray: the gputray owner stopped; reading the GPUs directly", file=sys.stderr)
                local.append(monitor_from_args(args))
                local[0].sample_once()
                time.sleep(RATE_GAP_S)
            return local[0].sample_once()

        try:
            first = _owner_snapshot(client)
            if first is not None:
                return _show_and_watch(first, next_snap, args)
        except _scenario_error() as exc:
            return error(str(exc), EXIT_REFUSED)
        finally:
            client.close()
            for monitor in local:
                monitor.stop()
    try:
        monitor = monitor_from_args(args)
    except _scenario_error() as exc:
        return error(str(exc), EXIT_REFUSED)
    try:
        monitor.sample_once()
        time.sleep(RATE_GAP_S)
        return _show_and_watch(monitor.sample_once(), monitor.sample_once, args)
    finally:
        monitor.stop()


def _scenario_error() -> type[ScenarioError]:
    """A bad ``--demo-scenario`` file's error, looked up only when something went wrong (an ``except``
    clause's class is evaluated then): the scenario reader is not loaded for an owner's snapshot."""
    from gputray.monitor.scenario import ScenarioError

    return ScenarioError
