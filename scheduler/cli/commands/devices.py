"""``gputray devices``: every name each physical GPU goes by — NVML, CUDA, ROCm, Vulkan, DRM, Windows.

The Vulkan index is computed for the current environment (Mesa's device-select layer, ``DRI_PRIME`` and
``MESA_VK_DEVICE_SELECT`` reorder devices), so run it with the variables your job will get.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gputray.monitor.device_map import VulkanMapping, drm_nodes, kfd_gpus, map_vulkan_devices
from gputray.monitor.device_names import friendly_name
from gputray.monitor.records import DeviceInfo
from gputray.monitor.scenario import ScenarioError
from gputray.monitor.units import DASH
from gputray.monitor.vulkan import DEFAULT_TIMEOUT_S, VulkanEnumeration, enumerate_devices
from gputray.monitor.vulkan_why import MappingWhy, NotEnumerated, VulkanWhy
from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.common import (
    EXIT_REFUSED,
    add_monitor_source_args,
    error,
    monitor_from_args,
    positive_seconds,
    print_json,
    uses_custom_source,
)
from gputray.scheduler.cli.commands.listing import cut_to_cells, terminal_width
from gputray.scheduler.pyenvs.doctor_cache import PairResult
from gputray.scheduler.pyenvs.selection import Selection, selected_by

VENDOR_BY_PCI = {0x10DE: "nvidia", 0x1002: "amd", 0x8086: "intel"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "devices",
        help="list every GPU with all the names it goes by (NVML, CUDA, ROCm, Vulkan, DRM, Windows)",
        description=(
            "One entry per physical GPU: its key (PCI address), friendly name, NVML index, CUDA UUID "
            "(use it in CUDA_VISIBLE_DEVICES), ROCm index (ROCR_VISIBLE_DEVICES), Vulkan index "
            "(GGML_VK_VISIBLE_DEVICES, -g N) for the current environment, DRM card and render node, and "
            "Windows adapter LUID. Vulkan devices that are not one of these GPUs (lavapipe/llvmpipe, a "
            "second driver for the same GPU) are listed separately with the reason."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print a JSON document instead of text")
    parser.add_argument(
        "--vulkan-timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"give up on a hanging Vulkan driver after SECONDS (default {DEFAULT_TIMEOUT_S:g})",
    )
    add_monitor_source_args(parser)
    parser.set_defaults(func=run)


def _monitor_devices(args: argparse.Namespace, notes: list[str]) -> list[DeviceInfo]:
    """The GPUs the monitor sees. A monitor that cannot start costs a note, not the whole listing."""
    monitor = monitor_from_args(args)
    try:
        snapshot = monitor.sample_once()
    finally:
        monitor.stop()
    if snapshot.notes:
        from gputray.scheduler.reasons.render import render

        notes.extend(render(n) for n in snapshot.notes)
    return [r.info for r in snapshot.readings if r.info.kind != "cpu"]


def _why(why: VulkanWhy | MappingWhy | None) -> tuple[str | None, Any]:
    """A Vulkan reason for the document: its English words (``reason``) and its code (``reason_code``)."""
    if why is None:
        return None, None
    import msgspec

    from gputray.scheduler.reasons.render import render

    return render(why), msgspec.to_builtins(why)


def _vendor_of(vendor_id: int | None) -> str:
    return VENDOR_BY_PCI.get(vendor_id or 0, "other")


def add_torch_selections(doc: dict[str, Any], pairs: Sequence[PairResult] | None = None) -> None:
    """Each device row's ``torch``: per configured env, the doctor's verdict there, the ``selection`` a
    job gets (the variables set) and the ``seen_device`` torch reported under it (from the doctor's
    cache: nothing is probed here; ``gputray doctor`` fills it)."""
    from gputray.scheduler.pyenvs.doctor_cache import cached_results  # reads the config: at call time

    results = cached_results() if pairs is None else pairs
    for row in doc.get("devices", ()):
        mine = [p for p in results if p.device_key == row.get("key")]
        row["torch"] = [
            {
                "env": p.env_name,
                "verdict": p.verdict,
                "selection": None if p.selection is None else _builtins(p.selection),
                "selection_status": p.selection_status,
                "seen_device": None if p.seen_device is None else _builtins(p.seen_device),
            }
            for p in mine
        ]


def _builtins(record: object) -> Any:
    import msgspec

    return msgspec.to_builtins(record, enc_hook=dict)


def build_document(
    known: list[DeviceInfo],
    vulkan: VulkanEnumeration | None,
    sysfs_root: Path,
    *,
    demo: bool = False,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """The ``--json`` document. Pure apart from reading ``sysfs_root``; the text view renders it. Each
    Vulkan reason is there in English (``reason``) and as its code (``reason_code``, ``vulkan_why``)."""
    mappings: tuple[VulkanMapping, ...] = map_vulkan_devices(vulkan.devices, known) if vulkan else ()
    kfd = {} if demo else {g.key: g for g in kfd_gpus(sysfs_root)}
    drm = {} if demo else drm_nodes(sysfs_root)

    rows: dict[str, dict[str, Any]] = {}

    def row(key: str) -> dict[str, Any]:
        if key not in rows:
            rows[key] = {
                "key": key,
                "name": None,
                "vendor": None,
                "kind": None,
                "pci_bdf": key.removeprefix("pci:") if key.startswith("pci:") else None,
                "nvml_index": None,
                "cuda_uuid": None,
                "rocm_index": None,
                "gfx_target": None,
                "vulkan_index": None,
                "vulkan_name": None,
                "vulkan_driver": None,
                "vulkan_other_indices": [],
                "drm_card": None,
                "render_node": None,
                "windows_luid": None,
                "seen_by": [],
            }
        return rows[key]

    for info in known:
        r = row(info.key)
        r.update(name=info.name, vendor=info.vendor, kind=info.kind, nvml_index=info.nvml_index)
        r["pci_bdf"] = info.pci_bdf or r["pci_bdf"]
        if info.vendor == "nvidia" and info.uuid:
            r["cuda_uuid"] = info.uuid
        r["drm_card"] = info.drm_card
        r["render_node"] = info.render_node
        r["gfx_target"] = info.gfx_target
        r["windows_luid"] = info.windows_luid
        r["seen_by"].append("monitor")
    for key, gpu in kfd.items():
        r = row(key)
        r["rocm_index"] = gpu.rocm_index
        r["gfx_target"] = r["gfx_target"] or gpu.gfx_target
        r["vendor"] = r["vendor"] or "amd"
        if r["name"] is None and gpu.pci_vendor_id is not None and gpu.pci_device_id is not None:
            r["name"] = friendly_name(gpu.pci_vendor_id, gpu.pci_device_id, compute_units=gpu.compute_units)
        if r["kind"] is None and gpu.integrated is not None:
            r["kind"] = "integrated" if gpu.integrated else "discrete"
        r["seen_by"].append("kfd")
    unmapped: list[dict[str, Any]] = []
    for m in mappings:
        dev = m.device
        reason, reason_code = _why(m.note)
        if m.key is None:
            unmapped.append(
                {
                    "vulkan_index": dev.index,
                    "name": dev.name,
                    "device_type": dev.device_type,
                    "driver": dev.driver_name,
                    "vendor_id": dev.vendor_id,
                    "device_id": dev.device_id,
                    "uuid": dev.uuid,
                    "reason": reason,
                    "reason_code": reason_code,
                }
            )
            continue
        r = row(m.key)
        if m.status == "duplicate":
            r["vulkan_other_indices"].append(
                {"index": dev.index, "driver": dev.driver_name, "reason": reason, "reason_code": reason_code}
            )
            continue
        r.update(vulkan_index=dev.index, vulkan_name=dev.name, vulkan_driver=dev.driver_name)
        if r["name"] is None:
            r["name"] = friendly_name(dev.vendor_id, dev.device_id, fallback=dev.name)
        r["vendor"] = r["vendor"] or _vendor_of(dev.vendor_id)
        r["kind"] = r["kind"] or (
            dev.device_type if dev.device_type in ("integrated", "discrete") else "other"
        )
        r["windows_luid"] = r["windows_luid"] or dev.luid
        if r["cuda_uuid"] is None and dev.vendor_id == 0x10DE and dev.nvidia_uuid:
            r["cuda_uuid"] = dev.nvidia_uuid
        r["seen_by"].append("vulkan")
    for key, nodes in drm.items():
        if key in rows:  # a DRM node alone (a display-only GPU the monitor skips) is not listed
            rows[key]["drm_card"] = rows[key]["drm_card"] or nodes.card
            rows[key]["render_node"] = rows[key]["render_node"] or nodes.render_node
    for r in rows.values():
        if r["name"] is None:
            r["name"] = f"GPU {r['key']}"

    vulkan_doc: dict[str, Any]
    if vulkan is None:
        reason, reason_code = _why(NotEnumerated())
        vulkan_doc = {
            "available": False,
            "reason": reason,
            "reason_code": reason_code,
            "instance_version": None,
        }
    else:
        reason, reason_code = _why(vulkan.why)
        vulkan_doc = {
            "available": vulkan.available,
            "reason": reason,
            "reason_code": reason_code,
            "instance_version": vulkan.instance_version,
            "device_count": len(vulkan.devices),
        }
    return {
        "devices": sorted(rows.values(), key=lambda r: r["key"]),
        "unmapped_vulkan": unmapped,
        "vulkan": vulkan_doc,
        "demo": demo,
        "notes": list(notes or []),
    }


def _value(v: Any) -> str:
    return DASH if v is None else str(v)


def torch_lines(row: dict[str, Any]) -> list[str]:
    """Under a GPU: per env the doctor probed there, how a job is pointed at it and what torch saw
    (``torch-cpu: HIP_VISIBLE_DEVICES=0 ✓ Radeon 780M``, as ``doctor``'s SELECTED BY); none when no env
    was probed (the row's ``torch``, from ``add_torch_selections``)."""
    out = []
    for entry in row.get("torch") or ():
        chosen = entry.get("selection")
        selection = None
        if chosen is not None:
            selection = Selection(chosen["variables"], tuple(chosen["unset"]), chosen["torch_device"])
        seen = entry.get("seen_device") or {}
        text = f"{entry['env']}: {selected_by(selection, entry.get('selection_status'), seen.get('name'))}"
        if entry.get("verdict") not in (None, "works"):
            text += f" (doctor: {entry['verdict']})"
        out.append(text)
    return out


def render_text(doc: dict[str, Any], width: int | None = None) -> str:
    """The text view of ``doc``; ``width``: the terminal's, which the torch lines are cut to."""
    lines: list[str] = []
    if doc["demo"]:
        lines.append("DEMO — simulated GPUs, not this machine's")
    if not doc["devices"]:
        lines.append("No GPU found.")
    for d in doc["devices"]:
        lines.append(f"{d['name']}  ({d['key']})")
        vk = _value(d["vulkan_index"])
        if d["vulkan_index"] is not None and d["vulkan_driver"]:
            vk += f"  [{d['vulkan_driver']}]"
        for other in d["vulkan_other_indices"]:
            vk += f"; also {other['index']} [{other['driver'] or '?'}, second driver]"
        rocm = _value(d["rocm_index"])
        if d["gfx_target"]:
            rocm += f"  [{d['gfx_target']}]"
        for label, value in (
            ("NVML index", _value(d["nvml_index"])),
            ("CUDA UUID", _value(d["cuda_uuid"])),
            ("ROCm index", rocm),
            ("Vulkan index", vk),
            ("DRM", f"{_value(d['drm_card'])} / {_value(d['render_node'])}"),
            ("Windows LUID", _value(d["windows_luid"])),
        ):
            lines.append(f"  {label:<13} {value}")
        for i, text in enumerate(torch_lines(d)):
            line = f"  {'Selected by' if i == 0 else '':<13} {text}"
            lines.append(line if width is None else cut_to_cells(line, width))
    vulkan = doc["vulkan"]
    if not vulkan["available"]:
        lines.append(f"Vulkan: {vulkan['reason']}")
    if doc["unmapped_vulkan"]:
        lines.append("Vulkan devices that are not one of these GPUs:")
        for u in doc["unmapped_vulkan"]:
            lines.append(
                f"  Vulkan {u['vulkan_index']}  {u['name']}  [{u['device_type']}, {u['driver'] or '?'}]"
                f" — {u['reason']}"
            )
    lines.extend(f"note: {n}" for n in doc["notes"])
    return "\n".join(lines)


DEMO_OWNER_NOTE = (
    "the running gputray is a demo (a simulated RTX 5060 Ti + Radeon 780M); the list above is this "
    "machine's real hardware. `gputray devices --demo` lists the simulated pair."
)


def owner_is_demo() -> bool:
    """Whether a running tray or daemon shows the demo, so `devices` can say why it lists other GPUs."""
    from gputray.scheduler import ipc
    from gputray.scheduler.paths import app_paths

    try:
        with ipc.IpcClient(app_paths(), timeout_s=2.0) as client:
            return bool(client.ask(rq.Ping()).demo)
    except ipc.IpcError:
        return False


def run(args: argparse.Namespace) -> int:
    notes: list[str] = []
    demo = bool(args.demo or args.demo_scenario is not None)
    if not demo and not uses_custom_source(args) and owner_is_demo():
        notes.append(DEMO_OWNER_NOTE)
    try:
        known = _monitor_devices(args, notes)
    except ScenarioError as exc:
        return error(str(exc), EXIT_REFUSED)
    except Exception as exc:
        known = []
        notes.append(f"GPU monitor unavailable ({type(exc).__name__}: {exc}); showing Vulkan and sysfs only")
    backed = any(info.vulkan_name for info in known)  # a demo scenario backs its GPUs with real devices
    enumerated = not demo or backed
    vulkan = enumerate_devices(dict(os.environ), timeout_s=args.vulkan_timeout) if enumerated else None
    doc = build_document(known, vulkan, args.sysfs_root, demo=demo, notes=notes)
    if not demo:
        add_torch_selections(doc)
    if args.json:
        print_json(doc)
    else:
        print(render_text(doc, terminal_width()))
    return 0
