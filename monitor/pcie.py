"""A GPU's PCIe link to the host from sysfs: generation and lanes, now and at best.

``current_link_speed`` reads "16.0 GT/s PCIe" (2.5/5/8/16/32/64 GT/s = generation 1–6) and
``current_link_width`` "16"; ``max_link_*`` are what the device can do. Reading them does not wake a
device, but the backends skip them for a sleeping one anyway (a device in D3cold reads garbage).

Which device's files: an NVIDIA card (or an eGPU behind a Thunderbolt/OCuLink adapter) is itself the
PCIe endpoint, so its own files describe its link. An AMD (Navi and later) or Intel Arc discrete card
carries its own PCIe switch: the GPU function's files describe the board-internal link, and the link
to the host is the switch's upstream port's, two levels up (GPU → switch downstream port → switch
upstream port). That is recognised by both bridges above it being PCI bridges (class 0x0604) of the
GPU's own vendor. A captured tree without the parents reads the GPU's own files.

Links downclock when idle (to 2.5 GT/s, "PCIe 1.0"): compare under load before calling a link slow.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TypedDict

from gputray.monitor.sysfs import int_of, text_of

_GT_S = re.compile(r"([\d.]+)\s*GT/s")
GEN_BY_GT_S = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
PCI_BRIDGE_CLASS = 0x0604


@dataclass(frozen=True)
class PcieLink:
    gen: int | None = None
    width: int | None = None
    max_gen: int | None = None
    max_width: int | None = None


def gen_of_speed(text: str | None) -> int | None:
    """``"16.0 GT/s PCIe"`` → 4; ``"Unknown"``, garbage or an unlisted rate → None."""
    if text is None:
        return None
    match = _GT_S.search(text)
    if match is None:
        return None
    try:
        return GEN_BY_GT_S.get(float(match.group(1)))
    except ValueError:
        return None


def _width(text: str | None) -> int | None:
    value = int_of(text.removeprefix("x") if text else text)
    return value if value is not None and value > 0 else None


def _read(path: str) -> str | None:
    from gputray.monitor.fdinfo import read_file_bytes  # the sysfs side; the words need none of it

    return text_of(read_file_bytes(path, 256))


def link_folder(device_dir: str, vendor_id: int | None) -> str:
    """The PCI device folder whose link files describe the link to the host (see the module doc)."""
    real = os.path.realpath(device_dir)
    parent = os.path.dirname(real)
    grandparent = os.path.dirname(parent)
    if vendor_id is None:
        return device_dir
    for bridge in (parent, grandparent):
        klass = int_of(_read(f"{bridge}/class"))
        if klass is None or klass >> 8 != PCI_BRIDGE_CLASS or int_of(_read(f"{bridge}/vendor")) != vendor_id:
            return device_dir
    return grandparent


def read_max(folder: str) -> tuple[int | None, int | None]:
    """(max generation, max lanes): fixed for a device, so read once."""
    return gen_of_speed(_read(f"{folder}/max_link_speed")), _width(_read(f"{folder}/max_link_width"))


def read_link(folder: str, maximum: tuple[int | None, int | None] | None = None) -> PcieLink | None:
    """The link now (and at best: ``maximum`` if already known); None when no link file is there."""
    speed, width = _read(f"{folder}/current_link_speed"), _read(f"{folder}/current_link_width")
    if speed is None and width is None:
        return None
    max_gen, max_width = maximum if maximum is not None else read_max(folder)
    return PcieLink(gen_of_speed(speed), _width(width), max_gen, max_width)


GEN_NAMES = {1: "1.0", 2: "2.0", 3: "3.0", 4: "4.0", 5: "5.0", 6: "6.0"}


class LinkFields(TypedDict):
    """The link as the Sample's four fields (None where unknown), for ``Sample(..., **link_fields(...))``."""

    pcie_gen: int | None
    pcie_width: int | None
    pcie_max_gen: int | None
    pcie_max_width: int | None


def link_fields(folder: str | None, maximum: tuple[int | None, int | None] | None = None) -> LinkFields:
    """The host link read from ``folder`` (None: an integrated GPU, no link of its own)."""
    link = read_link(folder, maximum) if folder is not None else None
    return LinkFields(
        pcie_gen=link.gen if link else None,
        pcie_width=link.width if link else None,
        pcie_max_gen=link.max_gen if link else None,
        pcie_max_width=link.max_width if link else None,
    )


@dataclass(frozen=True)
class LinkWords:
    """The words of a link description; the tray passes them translated (``monitor/`` speaks English)."""

    of: str = "of"
    idle_short: str = "(idle)"
    idle_long: str = "(idle: links slow down to save power)"


def describe(
    gen: int | None,
    width: int | None,
    max_gen: int | None,
    max_width: int | None,
    util_percent: float | None = None,
    *,
    short: bool = False,
    words: LinkWords | None = None,
) -> str | None:
    """``PCIe 4.0 ×4 of 5.0 ×8``; None when nothing is known. A link below its best while the GPU is
    idle gets "(idle: links slow down to save power)" (``short``: "(idle)"): an idle link drops its
    rate, which is normal.
    Fewer lanes than the best (an eGPU on OCuLink: ×4 of ×8) is how the GPU is connected, no fault."""
    if gen is None and width is None:
        return None

    def part(g: int | None, w: int | None) -> str:
        gen_text = GEN_NAMES.get(g, "?") if g is not None else "?"
        return gen_text + (f" ×{w}" if w is not None else "")

    w = words or LinkWords()
    text = "PCIe " + part(gen, width)
    if (max_gen, max_width) != (None, None) and (max_gen, max_width) != (gen, width):
        text += f" {w.of} " + part(max_gen if max_gen is not None else gen, max_width)
    below = gen is not None and max_gen is not None and gen < max_gen
    if below and (util_percent is None or util_percent < 10.0):
        text += " " + (w.idle_short if short else w.idle_long)
    return text
