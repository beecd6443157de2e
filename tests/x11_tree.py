"""Reading `xwininfo -root -tree`: where trayer embedded gputray's icon. Shared by the X11 tray test
and bench/gui_cost.py."""

from __future__ import annotations

import re

_ICON = re.compile(r'"gputray": \(.*?"gputray"\)\s+(\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)')


def tray_icon_geometry(tree: str) -> tuple[int, int, int, int] | None:
    """The gputray window embedded in trayer's panel (XEmbed): absolute x, y, w, h."""
    inside_panel = False
    for line in tree.splitlines():
        if '"panel": ("panel" "trayer")' in line:
            inside_panel = True
            continue
        if inside_panel:
            m = _ICON.search(line)
            if m:
                w, h, x, y = (int(g) for g in m.groups())
                return x, y, w, h
    return None
