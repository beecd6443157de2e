"""Panel geometry on several monitors with different scales (Qt's offscreen platform with a screens
file): wholly on the screen that holds the icon for every panel edge, a fixed size while cards
change, queue rows that stay put, nothing cut off, in English and Japanese, alone and in a cluster of
three machines × two GPUs (one machine offline). On 1366×768 and larger screens the panel fits
without scrolling inside itself, with the config banner up (in Japanese too) and the drop zone whole.

Runs in a subprocess: the screens are fixed when the QGuiApplication starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputray.gui.panel_geometry import nearest_edge, panel_position

SCREENS = {
    "synchronousWindowSystemEvents": True,
    "windowFrameMargins": False,
    "screens": [
        {"name": "desk", "x": 0, "y": 0, "width": 1920, "height": 1080, "logicalDpi": 96, "dpr": 1},
        {"name": "hidpi", "x": 1920, "y": 0, "width": 1280, "height": 800, "logicalDpi": 96, "dpr": 2},
        {"name": "laptop-2x", "x": 3200, "y": 0, "width": 683, "height": 384, "logicalDpi": 96, "dpr": 2},
        {"name": "hd", "x": 4000, "y": 0, "width": 1366, "height": 768, "logicalDpi": 96, "dpr": 1},
        {"name": "mid", "x": 5366, "y": 0, "width": 1600, "height": 1000, "logicalDpi": 96, "dpr": 1},
    ],
}

PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
import gputray.gui
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QApplication
app = QApplication([])
from gui_snapshots import snapshot
from gputray.gui.i18n import install_language
from gputray.gui.layout_audit import audit
from gputray.gui.panel import Panel
from gputray.gui.panel_geometry import screen_for
from gputray.gui.queue_model import QueueModel
from gputray.monitor.records import ProcessUse
from gputray.scheduler.replies import TaskView
from gputray.scheduler.reasons.codes import DevicePaused, WaitingFor

language = sys.argv[1]
install_language(language)
cluster = sys.argv[3] == "cluster"
if cluster:
    from cluster_views import NOW_S, three_machines
    from gputray.scheduler.paths import app_paths
    pictures = [three_machines(app_paths(), util_4070=u) for u in (97.0, 3.0)]
model = QueueModel()
model.apply([
    TaskView(id=i, name=f"job {i} with a long name.py", state=("waiting", "running", "failed")[i % 3],
             reason=WaitingFor(label="GeForce RTX 5060 Ti", why=DevicePaused()), started_at=None)
    for i in range(1, 9)
])
panel = Panel(model, demo=True)
from gputray.gui.messages import counted_note, note
from gputray.gui.tray_app import CONFIG_PROBLEMS_NOTE, NO_GPU_NOTE
bad = "monitor.interval_s = -3 is not a number"
banner = [note(NO_GPU_NOTE), counted_note(CONFIG_PROBLEMS_NOTE, 2, first=bad)]
panel.set_notice(lambda: "\n".join(n.text() for n in banner))  # in the panel's language
# icons on every edge of every screen, and a 1x1 cursor anchor (StatusNotifierItem)
anchors = {
    "desk bottom-right": QRect(1880, 1050, 24, 24), "desk top-right": QRect(1880, 4, 24, 24),
    "desk left-bottom": QRect(4, 900, 24, 24), "desk right-middle": QRect(1892, 500, 24, 24),
    "desk cursor": QRect(960, 1079, 1, 1),
    "hidpi bottom-right": QRect(3170, 780, 16, 16), "hidpi top-left": QRect(1930, 2, 16, 16),
    "laptop-2x bottom-right": QRect(3860, 366, 16, 16),
    "hd bottom-right": QRect(5326, 740, 22, 22), "mid top-right": QRect(6930, 4, 22, 22),
}
out = []
busy_states = [
    dict(busy_5060=("llama-server holds 14.0 GiB and is active",)),
    dict(busy_5060=()),
    dict(busy_5060=("llama-server uses 14.2 GiB, 97 %", "GeForce RTX 5060 Ti is hot: 91 °C (limit 85 °C)")),
]
for name, anchor in anchors.items():
    panel.hide()
    if cluster:
        panel.set_cluster(pictures[0], NOW_S)
    panel.update_snapshot(snapshot(**busy_states[0]))
    panel.show_at(anchor)
    app.processEvents()
    screen = screen_for(anchor)
    frame = panel.frameGeometry()
    table_y = panel.table.mapTo(panel, panel.table.rect().topLeft()).y()
    row_y = panel.table.visualRect(model.index(3, 0)).y()
    sizes, table_ys, row_ys = [], [], []
    for t, kw in enumerate(busy_states * 2):
        snap = snapshot(t=1000.0 + t, **kw)
        if t % 2:  # processes come and go
            snap = snap.__class__(
                snap.timestamp_s, snap.readings, snap.host, processes=(), verdicts=snap.verdicts
            )
        panel.update_snapshot(snap)
        if cluster:  # the other machines' readings change too
            panel.set_cluster(pictures[t % 2], NOW_S)
        model.tick(2000.0 + t)
        app.processEvents()
        sizes.append([panel.width(), panel.height(), panel.x(), panel.y()])
        table_ys.append(panel.table.mapTo(panel, panel.table.rect().topLeft()).y())
        row_ys.append(panel.table.visualRect(model.index(3, 0)).y())
    report = audit(panel)
    viewport = panel.scroll_area.viewport()
    zone = panel.drop_zone
    zone_rect = QRect(zone.mapTo(viewport, zone.rect().topLeft()), zone.size())
    out.append({
        "drop_zone_whole": viewport.rect().contains(zone_rect), "primary": report.primary,
        "anchor": name, "screen": screen.name(), "available": screen.availableGeometry().getRect(),
        "frame": frame.getRect(), "icon": anchor.getRect(), "sizes": sizes, "table_y": [table_y, *table_ys],
        "row_y": [row_y, *row_ys], "problems": [str(p) for p in report.problems], "checked": report.checked,
        "scrolls": panel.scroll_area.verticalScrollBar().maximum() > 0,
        "machines": sorted(panel.cluster_section.groups),
    })
print(json.dumps(out))
"""


def run_probe(language: str, tmp_path: Path, cluster: bool = False) -> list[dict[str, object]]:
    screens = tmp_path / "screens.json"
    screens.write_text(json.dumps(SCREENS))
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": f"offscreen:configfile={screens}",
        "GPUTRAY_HOME": str(tmp_path / "home"),
    }
    tests_gui = str(Path(__file__).resolve().parent)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, language, tests_gui, "cluster" if cluster else ""],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    results: list[dict[str, object]] = json.loads(out.stdout.strip().splitlines()[-1])
    return results


def inside(inner: list[int], outer: list[int]) -> bool:
    x, y, w, h = inner
    ox, oy, ow, oh = outer
    return x >= ox and y >= oy and x + w <= ox + ow and y + h <= oy + oh


def overlaps(a: list[int], b: list[int]) -> bool:
    return not (a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0] or a[1] + a[3] <= b[1] or b[1] + b[3] <= a[1])


@pytest.mark.parametrize("cluster", [False, True], ids=["alone", "cluster"])
@pytest.mark.parametrize("language", ["en", "ja"])
def test_panel_stays_on_the_icons_screen_keeps_its_size_and_cuts_nothing(
    language: str, cluster: bool, tmp_path: Path
) -> None:
    results = run_probe(language, tmp_path, cluster)
    assert len(results) == 10
    assert all(r["machines"] == (["laptop", "nas"] if cluster else []) for r in results)
    expected_screen = {"desk": "desk", "hidpi": "hidpi", "laptop-2x": "laptop-2x", "hd": "hd", "mid": "mid"}
    for r in results:
        anchor = str(r["anchor"])
        assert r["screen"] == expected_screen[anchor.split()[0]], r
        assert inside(r["frame"], r["available"]), f"{anchor}: {r['frame']} is not wholly on {r['available']}"  # type: ignore[arg-type]
        assert not overlaps(r["frame"], r["icon"]), f"{anchor}: the panel covers the icon"  # type: ignore[arg-type]
        sizes = r["sizes"]
        assert isinstance(sizes, list) and all(s == sizes[0] for s in sizes), (
            f"{anchor}: size changed {sizes}"
        )
        assert len(set(r["table_y"])) == 1, f"{anchor}: the queue moved {r['table_y']}"  # type: ignore[arg-type]
        assert len(set(r["row_y"])) == 1, f"{anchor}: a queue row moved {r['row_y']}"  # type: ignore[arg-type]
        assert r["problems"] == [], f"{anchor}: {r['problems']}"
        assert int(r["checked"]) > 20  # type: ignore[call-overload]
        assert int(r["primary"]) >= 6, r  # type: ignore[call-overload]
    short = next(r for r in results if r["anchor"] == "laptop-2x bottom-right")
    assert short["scrolls"], "on a 384 px tall screen the panel scrolls instead of being cut"
    for name in ("desk bottom-right", "hd bottom-right", "mid top-right"):  # 1366×768 and larger
        fits = next(r for r in results if r["anchor"] == name)
        assert not fits["scrolls"], f"{name}: the panel scrolls inside itself"
        assert fits["drop_zone_whole"], f"{name}: the drop zone is cut"


def test_position_beside_the_icon_on_every_edge() -> None:
    from PySide6.QtCore import QPoint, QRect, QSize

    screen = QRect(0, 0, 1920, 1050)
    size = QSize(460, 560)
    # bottom-right tray (Windows, KDE): above the icon, right edges aligned
    assert panel_position(QRect(1800, 1020, 24, 24), size, screen) == QPoint(1823 - 460, 1020 - 560 - 4)
    # top bar (GNOME-like, SNI cursor anchor 1×1): below, kept on screen
    assert panel_position(QRect(1900, 5, 1, 1), size, screen) == QPoint(1900 - 460, 5 + 4)
    # near the left edge of a top bar: clamped
    assert panel_position(QRect(10, 5, 24, 24), size, screen).x() == 0
    # a vertical panel on the left: to the right of the icon, bottom-aligned in the lower half
    assert panel_position(QRect(2, 900, 24, 24), size, screen) == QPoint(2 + 23 + 4, 923 - 560 + 1)
    # on the right: to the left of it
    assert panel_position(QRect(1894, 300, 24, 24), size, screen) == QPoint(1894 - 460 - 4, 300)
    # a corner is a top or bottom tray (the common case), not a vertical one
    assert nearest_edge(QRect(1896, 0, 24, 24), screen) == "top"
    assert nearest_edge(QRect(1896, 1026, 24, 24), screen) == "bottom"
    # a second monitor to the right, with its own origin
    right = QRect(1920, 0, 1280, 800)
    pos = panel_position(QRect(3170, 780, 16, 16), size, right)
    assert right.contains(QRect(pos, size)) and pos.y() + 560 <= 780
    # a screen shorter than the panel: clamped to it (the panel is given the screen's height)
    assert panel_position(QRect(600, 360, 16, 16), QSize(460, 800), QRect(0, 0, 683, 384)).y() == 0
