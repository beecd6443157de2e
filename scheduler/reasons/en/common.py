"""What every area of the English catalogue shares: the catalogue itself (``EN``) and the small helpers its
wordings use."""

from __future__ import annotations

from gputray.monitor import busy_why as b
from gputray.scheduler.reasons.say import Catalogue

EN = Catalogue(
    "en", joiner="; ", sentences="; ", unit_s="{n} s", unit_min="{m} min", unit_h_min="{h} h {m:02d} min"
)


def _where(device: str | None) -> str:
    return "the CPU" if device is None else device


def _demo(demo_for: str | None) -> str:
    return f" (demo: in place of {demo_for})" if demo_for else ""


def _pct(value: float) -> str:
    return f"{value:.0f} %"


def _who(who: b.Who) -> tuple[str, bool]:
    if not who.others:
        return who.name, False
    return f"{who.name} and {who.others} other{'s' if who.others > 1 else ''}", True


def _aside(words: str, lead: str = "") -> str:
    """Words put aside after what they explain: `` (lead words)``; where the words have brackets of their
    own, ``: lead words`` instead, so that English never nests brackets ("busy (… (busy above 30 %))")."""
    return f": {lead}{words}" if "(" in words else f" ({lead}{words})"


def _processes(count: int) -> str:
    return "1 process" if count == 1 else f"{count} processes"
