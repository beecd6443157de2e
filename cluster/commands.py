"""``gputray cluster status|join|leave`` and ``gputray status --cluster``. No Ray in this process:
the owner's bridge knows the cluster, and ``join`` checks it through the bridge's probe (a child)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any, cast

from gputray.cluster.config import (
    WINDOWS_NOTE,
    ClusterConfigError,
    check_machine_name,
    default_machine_name,
    is_windows,
    write_cluster_table,
)
from gputray.cluster.wire import qualified
from gputray.monitor.records import DeviceInfo, DeviceKind, DeviceReading, Sample, Vendor
from gputray.monitor.units import DASH
from gputray.scheduler.client import connection as ipc
from gputray.scheduler.client import requests as rq
from gputray.scheduler.client.connection import app_paths
from gputray.scheduler.client.program import print_json, say_error
from gputray.scheduler.cluster_port import DeviceLine
from gputray.scheduler.cluster_port.reasons import render
from gputray.scheduler.cluster_port.records import ClusterStatus, DeviceView

EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_NO_OWNER = 3  # the command line's exit statuses (README)
INSECURE_REASON = (
    "it does not use token authentication, so anyone who can reach its ports can run any code on "
    "every machine in it (Ray's own security advice). Start every Ray node with RAY_AUTH_MODE=token and "
    "the same token (`ray get-auth-token --generate` on the head; see docs/cluster.md), or pass "
    "--insecure to join anyway"
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "cluster",
        help="several machines in one queue, on Ray",
        description="Join this machine's gputray to a Ray cluster, leave it, or see its machines. "
        "Ray supports Windows as a single node only. See docs/cluster.md.",
    )
    s = p.add_subparsers(dest="cluster_cmd", metavar="ACTION")
    st = s.add_parser("status", help="the machines, their GPUs, Ray version, token auth, last contact")
    st.add_argument("--json", action="store_true")
    join = s.add_parser(
        "join",
        help="join a Ray cluster: writes [cluster] to the config and checks the connection",
        description="Check the Ray cluster at ADDRESS (reachable, token authentication on) and write "
        "[cluster] address and machine to the config; the running owner connects within seconds. "
        + WINDOWS_NOTE
        + ".",
    )
    join.add_argument("address", metavar="ADDRESS", help="the Ray head, HOST:6379 (or auto)")
    join.add_argument("--machine", metavar="NAME", help="this machine's name (default: the host name)")
    join.add_argument(
        "--insecure", action="store_true", help="join even a cluster without token authentication"
    )
    join.add_argument("--json", action="store_true")
    leave = s.add_parser("leave", help="leave the cluster (removes [cluster] from the config)")
    leave.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_cluster, _parser=p)


def cmd_cluster(args: argparse.Namespace) -> int:
    if args.cluster_cmd == "status":
        return _status(args)
    if args.cluster_cmd == "join":
        return _join(args)
    if args.cluster_cmd == "leave":
        return _leave(args)
    args._parser.print_help()
    return 2


def _owner_cluster() -> ClusterStatus | None:
    try:
        with ipc.IpcClient(app_paths(), timeout_s=10.0) as client:
            return client.ask(rq.Status(cluster=True)).cluster
    except ipc.IpcError:
        return None


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _clock(epoch: float | None) -> str:
    if epoch is None:
        return DASH
    t = dt.datetime.fromtimestamp(epoch)
    same_day = t.date() == dt.date.today()
    return t.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M")


def status_doc(doc: ClusterStatus) -> dict[str, Any]:
    """The owner's cluster document in the shape `cluster status --json` promises."""
    report, bridge = doc.report, doc.bridge
    machines = [
        {
            "name": m.name,
            "local": m.local,
            "online": m.alive,
            "last_contact": _iso(m.last_contact),
            "offline_since": _iso(m.left_at) if not m.alive else None,
            "gpus": [d.name for d in m.devices],
            "demo": m.demo,
        }
        for m in (report.machines if report is not None else ())
    ]
    return {
        "configured": doc.configured,
        "address": doc.address,
        "machine": doc.machine,
        "state": (report.state if report is not None else None) if bridge.active else "no bridge",
        "note": (report.note if report is not None else None) if bridge.active else (bridge.note or None),
        "ray_version": report.ray_version if report is not None else None,
        "token_auth": None if report is None else report.auth == "token",
        "bridge_pid": bridge.pid,
        "machines": machines,
    }


def _status(args: argparse.Namespace) -> int:
    doc = _owner_cluster()
    if doc is None:
        from gputray.cluster.config import load_cluster_config

        try:
            cfg = load_cluster_config(app_paths().config_file)
            where = (
                f"[cluster] address = {cfg.address} as {cfg.machine}" if cfg.enabled else "not in a cluster"
            )
        except Exception as exc:
            where = f"bad config: {exc}"
        return error(f"{where}; no gputray owner is running, so nothing is connected: {ipc.HOW_TO_START}", 3)
    out = status_doc(doc)
    if args.json:
        print_json(out)
        return 0
    if not out["configured"]:
        print("not in a cluster (gputray cluster join HEAD:6379)")
        return 0
    auth = {True: "token authentication on", False: "NO token authentication", None: "auth unknown"}
    ray = f"Ray {out['ray_version']}" if out["ray_version"] else "Ray ?"
    print(f"cluster {out['address']} as {out['machine']}: {out['state']} ({ray}, {auth[out['token_auth']]})")
    if out["note"] and out["note"] != "connected":
        print(f"  {out['note']}")
    rows = [("MACHINE", "STATE", "GPUS")]
    for m in out["machines"]:
        if m["local"]:
            state = "this machine"
        elif m["online"]:
            state = f"online, seen {_clock(_epoch(m['last_contact']))}"
        else:
            state = f"offline since {_clock(_epoch(m['offline_since']))}"
        rows.append((m["name"], state, ", ".join(m["gpus"]) or DASH))
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    for r in rows:
        print(f"{r[0].ljust(widths[0])}  {r[1].ljust(widths[1])}  {r[2]}")
    return 0


def _epoch(iso: str | None) -> float | None:
    if not iso:
        return None
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _join(args: argparse.Namespace) -> int:
    from gputray.cluster.bridge_probe import run_probe
    from gputray.cluster.link import is_loopback

    address = args.address.strip()
    if is_windows():
        print(f"gputray: note: {WINDOWS_NOTE}", file=sys.stderr)
        if not is_loopback(address):
            return error(f"cannot join {address} from Windows: {WINDOWS_NOTE}", EXIT_REFUSED)
    try:
        machine = check_machine_name(args.machine or default_machine_name(), "--machine")
    except ClusterConfigError as exc:
        return error(str(exc), 2)
    open_check = run_probe(address, with_token=False)
    if open_check.no_ray:
        return error("Ray is not installed here: pip install 'gputray[cluster]'", EXIT_REFUSED)
    if open_check.ok and not args.insecure:
        return error(f"refusing to join the Ray cluster at {address}: {INSECURE_REASON}", EXIT_REFUSED)
    checked = open_check if open_check.ok else run_probe(address, with_token=True)
    if not checked.ok:
        if checked.auth_refused:
            why = (
                "it refused this machine's token: copy the head's token (~/.ray/auth_token, or set "
                "RAY_AUTH_TOKEN) here"
            )
        else:
            why = f"cannot reach it: {checked.error}"
        return error(f"cannot join the Ray cluster at {address}: {why}", EXIT_REFUSED)
    values: dict[str, Any] = {"address": address, "machine": machine}
    if args.insecure:
        values["insecure"] = True
    paths = app_paths()
    write_cluster_table(paths.config_file, values)
    result = {
        "address": address,
        "machine": machine,
        "ray_version": checked.ray_version,
        "nodes": checked.nodes,
        "token_auth": not open_check.ok,
        "config_file": str(paths.config_file),
    }
    if args.json:
        print_json(result)
        return 0
    auth = "token authentication on" if result["token_auth"] else "WITHOUT token authentication (--insecure)"
    print(
        f"joined {address} as {machine}: Ray {result['ray_version']}, {result['nodes']} node(s), {auth}; "
        f"written to {paths.config_file}. A running gputray connects within seconds."
    )
    return 0


def _leave(args: argparse.Namespace) -> int:
    paths = app_paths()
    write_cluster_table(paths.config_file, None)
    if args.json:
        print_json({"left": True, "config_file": str(paths.config_file)})
    else:
        print(
            f"left the cluster ([cluster] removed from {paths.config_file}); tasks already on other "
            "machines run on there"
        )
    return 0


def error(message: str, code: int = EXIT_USAGE) -> int:
    return say_error(message, code)


def status_cluster(args: argparse.Namespace, device_line: DeviceLine) -> int:
    """``gputray status --cluster``: every machine's GPUs, grouped by machine (``device_line``: how
    ``gputray status`` writes a GPU's line, handed by the command line)."""
    from gputray.monitor.serialize import device_to_json

    doc = _owner_cluster()
    if doc is None:
        return error(f"no gputray owner is running: {ipc.HOW_TO_START}", EXIT_NO_OWNER)
    summary = status_doc(doc)
    devices: list[dict[str, Any]] = []
    lines: list[tuple[str, DeviceReading]] = []
    for m in doc.report.machines if doc.report is not None else ():
        for d in m.devices:
            reading = _reading(m.name, d)
            row = device_to_json(reading, render)
            row.update(backend="cluster", machine=m.name, local_key=d.key, key=reading.info.key)
            row.update(busy=d.busy, reasons=[render(r) for r in d.reasons], running=list(d.running_names))
            devices.append(row)
            lines.append((m.name, reading))
    out = {"devices": devices, "machines": summary["machines"], "cluster": summary}
    if args.json:
        print_json(out)
        return 0
    if not summary["configured"]:
        print("not in a cluster (gputray cluster join HEAD:6379); `gputray status` shows this machine")
        return 0
    width = max((len(r.info.name) for _, r in lines), default=4)
    for m in summary["machines"]:
        label = f"{m['name']} (this machine)" if m["local"] else m["name"]
        if not m["online"] and not m["local"]:
            print(f"{label}: offline since {_clock(_epoch(m['offline_since']))}")
            continue
        print(f"{label}{' — DEMO, simulated GPUs' if m.get('demo') else ''}")
        mine = [r for machine, r in lines if machine == m["name"]]
        for r in mine:
            print("  " + device_line(r, width))
        if not mine:
            print("  no GPU")
    return 0


def _reading(machine: str, d: DeviceView) -> DeviceReading:
    """A device of the cluster report as the monitor's record (under ``machine/key``), for ``status``'s
    line and ``--json`` row: its own machine's reading as that machine's monitor took it."""
    key = qualified(machine, d.key)
    info = DeviceInfo(
        key=key,
        name=d.name,
        vendor=cast(Vendor, d.vendor or "other"),
        kind=cast(DeviceKind, d.kind or "other"),
        backend="cluster",
        pci_bdf=d.pci_bdf,
    )
    sample = d.reading if d.reading is not None else Sample(key=d.key, timestamp_s=0.0)
    return DeviceReading(info, sample)
