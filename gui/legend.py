"""Which bar is which GPU: one order and one colour per GPU, shared by the icon, its tooltip, the panel
and the dashboard, so "the green bar" means the same card everywhere.

Colours are the vendors' own (NVIDIA green, AMD red, Intel blue); a second card of the same vendor gets
a lighter shade, a third a darker one. The order is the devices' keys (PCI address), which does not
change while the machine runs, whatever order the backends report them in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputray.gui.i18n import tr, tr_noop

if TYPE_CHECKING:  # records are only read here; not importing them keeps the first icon quick
    from gputray.monitor.records import DeviceReading, Snapshot

# (colour, its name) per vendor, for the 1st, 2nd, 3rd card of that vendor
VENDOR_SHADES: dict[str, tuple[tuple[str, str], ...]] = {
    "nvidia": (
        ("#76b900", tr_noop("green")),
        ("#b8e35a", tr_noop("light green")),
        ("#3d6100", tr_noop("dark green")),
    ),
    "amd": (("#ed1c24", tr_noop("red")), ("#ff8a8e", tr_noop("pink")), ("#8f0d12", tr_noop("dark red"))),
    "intel": (
        ("#0071c5", tr_noop("blue")),
        ("#6cb8ff", tr_noop("light blue")),
        ("#003b68", tr_noop("dark blue")),
    ),
    "other": (
        ("#9e9e9e", tr_noop("grey")),
        ("#d0d0d0", tr_noop("light grey")),
        ("#5c5c5c", tr_noop("dark grey")),
    ),
}


@dataclass(frozen=True)
class LegendEntry:
    key: str
    name: str  # the full name ("GeForce RTX 5060 Ti")
    short: str  # the tooltip's name ("RTX 5060 Ti")
    color: str  # "#76b900"
    color_word: str  # untranslated ("green"); shown through tr()
    position: int  # 0 = the leftmost bar

    def label(self) -> str:
        """``green: RTX 5060 Ti`` in the current language."""
        return tr("{color}: {name}").format(color=tr(self.color_word), name=self.short)


def short_name(name: str) -> str:
    for prefix in ("NVIDIA ", "GeForce ", "AMD ", "Radeon(TM) ", "Intel(R) "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


def gpu_readings(snapshot: Snapshot) -> list[DeviceReading]:
    """The GPUs of a snapshot (no CPU), in the legend's order."""
    gpus = [r for r in snapshot.readings if r.info.kind != "cpu" and r.info.key != "cpu"]
    return sorted(gpus, key=lambda r: r.info.key)


def legend_for(readings: Iterable[DeviceReading]) -> tuple[LegendEntry, ...]:
    out: list[LegendEntry] = []
    seen: dict[str, int] = {}
    for i, r in enumerate(sorted(readings, key=lambda r: r.info.key)):
        vendor = r.info.vendor if r.info.vendor in VENDOR_SHADES else "other"
        n = seen.get(vendor, 0)
        seen[vendor] = n + 1
        shades = VENDOR_SHADES[vendor]
        color, word = shades[n % len(shades)]
        out.append(LegendEntry(r.info.key, r.info.name, short_name(r.info.name), color, word, i))
    return tuple(out)


def legend(snapshot: Snapshot | None) -> tuple[LegendEntry, ...]:
    return () if snapshot is None else legend_for(gpu_readings(snapshot))


def color_of(entries: Sequence[LegendEntry], key: str) -> str:
    return next((e.color for e in entries if e.key == key), VENDOR_SHADES["other"][0][0])
