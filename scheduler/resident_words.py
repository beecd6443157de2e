"""A resident in words, for the command line and the logs ("ComfyUI holds 9.8 GiB · idle 14 min");
the tray says the same through its translations (gui/resident_text.py)."""

from __future__ import annotations

from gputray.monitor.residents import ResidentView
from gputray.monitor.units import format_bytes


def idle_text(resident: ResidentView, now_s: float) -> str:
    if resident.busy:
        return "serving"
    minutes = int(resident.idle_s(now_s) // 60)
    return f"idle {minutes} min" if minutes else "idle < 1 min"


def resident_line(resident: ResidentView, now_s: float, device_name: str | None = None) -> str:
    held = "holds —" if resident.held_bytes is None else f"holds {format_bytes(resident.held_bytes)}"
    where = f" on {device_name}" if device_name else ""
    models = f" ({', '.join(resident.models)})" if resident.models else ""
    # its port, else its pid: what names it to free-resident where several share a name
    port = f", port {resident.port}" if resident.port is not None else f", pid {resident.pid}"
    api = "" if resident.answered else ", its API does not answer"
    return f"{resident.name} {held}{where} · {idle_text(resident, now_s)}{models}{port}{api}"
