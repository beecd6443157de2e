"""``gputray status``: one line per GPU plus the host; ``--json`` for scripts; ``--watch`` refreshes."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from gputray.monitor.monitor import Monitor
from gputray.monitor.readings_text import json_extras
from gputray.monitor.scenario import ScenarioError
from gputray.monitor.serialize import snapshot_to_json
from gputray.monitor.units import DASH, format_number, format_pair
from gputray.scheduler import ipc
from gputray.scheduler.cli.commands.common import (
    EXIT_NO_OWNER,
    EXIT_REFUSED,
    add_monitor_source_args,
    error,
    monitor_from_args,
    positive_seconds,
    print_json,
    uses_custom_source,
)
from gputray.scheduler.paths import app_paths

BAR_CELLS = 10
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


def device_line(dev: dict[str, Any], name_width: int) -> str:
    name = dev["name"].ljust(name_width)
    if dev["state"] != "ok":
        return f"{name}  {dev['state']}: {dev['reason'] or DASH}"
    parts = [
        name,
        bar(dev["util_percent"]),
        format_number(dev["util_percent"], " %").rjust(5),
        format_number(dev["temp_c"], " °C").rjust(6),
        format_number(dev["power_w"], " W", 1).rjust(8),
        "VRAM " + format_pair(dev["vram_used_bytes"], dev["vram_total_bytes"]),
    ]
    if dev["shared_total_bytes"] is not None or dev["shared_used_bytes"] is not None:
        parts.append("shared " + format_pair(dev["shared_used_bytes"], dev["shared_total_bytes"]))
    if dev["sclk_mhz"] is not None:
        parts.append(f"{dev['sclk_mhz']} MHz")
    if dev["throttle"]:
        parts.append("throttled: " + ", ".join(dev["throttle"]))
    line = "  ".join(parts)
    extras = json_extras(dev)  # link, fan, power limit, memory clock, video engines: where known
    if extras:
        line += "\n" + " " * (name_width + 2) + "  ".join(extras)
    return line


def render_text(doc: dict[str, Any]) -> str:
    lines: list[str] = []
    if doc.get("demo"):
        lines.append("DEMO — simulated GPUs, not this machine's")
    devices = doc["devices"]
    if not devices:
        lines.append("No GPU found. (`gputray status --demo` shows a simulated RTX 5060 Ti + Radeon 780M.)")
        lines.extend(f"  {note}" for note in doc.get("notes", []))
    width = max((len(d["name"]) for d in devices), default=4)
    lines.extend(device_line(d, width) for d in devices)
    host = doc["host"]
    lines.append(
        f"{'Host'.ljust(width)}  {bar(host['cpu_percent'])}"
        f" {format_number(host['cpu_percent'], ' %').rjust(5)} CPU"
        f"  RAM {format_pair(host['ram_used_bytes'], host['ram_total_bytes'])}"
    )
    procs = doc["processes"]
    if procs:
        names = {d["key"]: d["name"] for d in devices}
        lines.append("")
        lines.append(f"{'PID':>7}  {'process':<20} {'GPU':<22} {'memory':>10} {'busy':>6}")
        for p in sorted(procs, key=lambda p: -((p["vram_bytes"] or 0) + (p["shared_bytes"] or 0))):
            mem = (p["vram_bytes"] or 0) + (p["shared_bytes"] or 0)
            mem_text = format_pair(mem, None) if p["vram_bytes"] or p["shared_bytes"] else DASH
            lines.append(
                f"{p['pid']:>7}  {p['name'][:20]:<20} {names.get(p['device'], p['device'])[:22]:<22}"
                f" {mem_text:>10} {format_number(p['util_percent'], ' %'):>6}"
            )
    return "\n".join(lines)


def _snapshot_doc(monitor: Monitor) -> dict[str, Any]:
    return snapshot_to_json(monitor.sample_once())


def _owner_doc(client: ipc.IpcClient) -> dict[str, Any] | None:
    """The running owner's latest readings, or None when no owner answers (or it has no sample yet)."""
    try:
        reply = client.request("status")
    except ipc.IpcError:
        return None
    return reply.snapshot  # type: ignore[no-any-return]


def _show(doc: dict[str, Any], as_json: bool, refresh: bool) -> None:
    if as_json:
        print_json(doc)
        return
    text = render_text(doc)
    tty = sys.stdout.isatty()
    sys.stdout.write(
        ("\x1b[H\x1b[J" if tty and refresh else "") + text + "\n" + ("\n" if refresh and not tty else "")
    )
    sys.stdout.flush()


def _show_and_watch(
    doc: dict[str, Any], next_doc: Callable[[], dict[str, Any] | None], args: argparse.Namespace
) -> int:
    """Show ``doc``; with --watch, show ``next_doc()`` every interval until Ctrl+C (or the owner goes)."""
    try:
        while True:
            _show(doc, args.json, args.watch is not None)
            if args.watch is None:
                return 0
            time.sleep(max(0.2, args.watch))
            refreshed = next_doc()
            if refreshed is None:
                return error("the gputray owner stopped answering", EXIT_NO_OWNER)
            doc = refreshed
    except KeyboardInterrupt:
        return 0


def run(args: argparse.Namespace) -> int:
    if args.cluster:
        cluster = args.cluster_commands  # handed from above (cluster_port): the scheduler never imports it
        if cluster is None:
            return error("this gputray has no cluster support", EXIT_REFUSED)
        status_cluster: Callable[[argparse.Namespace], int] = cluster.status
        return status_cluster(args)
    # Poll from one place only: while the tray or `gputray daemon` runs, show what it reads.
    if not uses_custom_source(args):
        client = ipc.IpcClient(app_paths(), timeout_s=5.0)
        local: list[Monitor] = []  # read the GPUs ourselves once the owner is gone

        def next_doc() -> dict[str, Any] | None:
            doc = None if local else _owner_doc(client)
            if doc is not None:
                return doc
            if not local:
                print("gputray: the gputray owner stopped; reading the GPUs directly", file=sys.stderr)
                local.append(monitor_from_args(args))
                local[0].sample_once()
                time.sleep(RATE_GAP_S)
            return _snapshot_doc(local[0])

        try:
            doc = _owner_doc(client)
            if doc is not None:
                return _show_and_watch(doc, next_doc, args)
        except ScenarioError as exc:
            return error(str(exc), EXIT_REFUSED)
        finally:
            client.close()
            for monitor in local:
                monitor.stop()
    try:
        monitor = monitor_from_args(args)
    except ScenarioError as exc:
        return error(str(exc), EXIT_REFUSED)
    try:
        monitor.sample_once()
        time.sleep(RATE_GAP_S)
        return _show_and_watch(_snapshot_doc(monitor), lambda: _snapshot_doc(monitor), args)
    except KeyboardInterrupt:
        return 0
    finally:
        monitor.stop()
