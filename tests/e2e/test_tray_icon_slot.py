"""The icon in a real tray slot (Xvfb + trayer): trayer gives it 22×30 px, and it must sit in the middle
of that slot, not at its top (issue 21). Read from a screenshot of the slot."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QImage
from test_tray_x11 import Case, desktop, pytestmark, tray_icon_geometry, wait_for  # noqa: F401 - same marks


def drawn_rows(image: QImage) -> list[int]:
    """Rows with any pixel unlike the slot's own background (its bottom-left corner)."""
    ground = image.pixelColor(0, image.height() - 1)
    return [
        y
        for y in range(image.height())
        if any(image.pixelColor(x, y) != ground for x in range(image.width()))
    ]


def test_the_icon_sits_in_the_middle_of_its_tray_slot(tmp_path: Path) -> None:
    with desktop(Case("en", "dark", "bottom", 1), tmp_path / "home") as (display, _app):
        icon = wait_for("the icon in the tray", lambda: tray_icon_geometry(display))
        assert isinstance(icon, tuple)
        _x, _y, width, height = icon
        assert height != width, f"trayer gave a square slot {icon}: nothing to check"
        shot = tmp_path / "slot.png"

        def picture_rows() -> list[int] | None:
            display.screenshot(shot, crop=icon)
            rows = drawn_rows(QImage(str(shot)))
            return rows if len(rows) >= min(width, height) - 2 else None  # the picture is up

        rows = wait_for("the icon's picture", picture_rows)
        assert isinstance(rows, list)
        top, bottom = rows[0], height - 1 - rows[-1]
        where = f"the picture fills rows {rows[0]}–{rows[-1]} of a {width}×{height} slot"
        assert abs(top - bottom) <= 1, where
