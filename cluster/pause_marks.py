"""How a machine's pause shows on its devices in the cluster report (``status --cluster``): one place
for the bridge, which writes the report from each machine's view, and for this machine's owner, which
lays its own pause over its devices in that report the moment ``pause`` or ``resume`` answers (the
bridge's copy may be a second old)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gputray.scheduler.replies import Paused


def _marks(machine: str) -> tuple[str, str]:
    return f"the queue is paused on {machine}", f"paused on {machine}"


def mark_paused(
    doc: dict[str, Any], machine: str, *, queue_paused: bool, device_paused: bool
) -> dict[str, Any]:
    """``doc`` (one device of ``machine``) with ``paused`` and its first reason as the pause says."""
    queue_mark, device_mark = _marks(machine)
    reasons = [r for r in doc.get("reasons") or () if r not in (queue_mark, device_mark)]
    paused = queue_paused or device_paused
    if paused:  # paused there: it takes no job of ours
        reasons.insert(0, queue_mark if queue_paused else device_mark)
    return {**doc, "paused": paused, "reasons": reasons}


def with_local_pause(report: dict[str, Any], machine: str, paused: Paused) -> dict[str, Any]:
    """The bridge's ``report`` with ``machine``'s devices paused as ``paused`` says (the owner's own)."""
    devices: Sequence[Any] = report.get("devices") or ()
    if not devices:
        return report
    out = []
    for doc in devices:
        if isinstance(doc, dict) and doc.get("machine") == machine:
            key = doc.get("local_key")
            doc = mark_paused(doc, machine, queue_paused=paused.all, device_paused=key in paused.devices)
        out.append(doc)
    return {**report, "devices": out}
