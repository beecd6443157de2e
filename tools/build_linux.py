"""Build the frozen Linux app: PyInstaller, one folder, packed as ``gputray-<version>-linux-x86_64.tar.gz``.

    python3 tools/build_linux.py [--out DIR] [--work DIR]

1. A build venv (``WORK/venv``) gets gputray from this checkout (a plain, non-editable install, as a
   user's pip would make it) and PyInstaller.
2. PyInstaller freezes ``tools/frozen_entry.py`` with the spec of ``tools/freeze_spec.py``.
3. The tarball holds ``gputray-<version>/``: ``gputray/`` (the executable and its ``_internal``),
   ``share/applications/gputray.desktop`` and the icon in the freedesktop sizes
   (``share/icons/hicolor/<N>x<N>/apps/gputray.png``, drawn from the SVG by Qt, and ``scalable``), and a
   ``README.txt`` saying how to put it in place.

Slow (a few minutes: the venv, then PyInstaller's analysis of Qt): ``.ci/run`` runs it in its frozen step
before the suite, then ``tests/frozen/test_frozen_linux.py`` with ``GPUTRAY_FROZEN_LINUX`` naming the
tarball. It prints the size and where the tarball is.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from freeze_spec import spec_text

ROOT = Path(__file__).resolve().parent.parent
ICON_SIZES = (16, 22, 24, 32, 48, 64, 128, 256)
PYINSTALLER = "pyinstaller>=6.10"

README = """gputray {version}, frozen for Linux x86_64 (no Python needed).

Run it where it is:      ./gputray/gputray            (the tray; `./gputray/gputray --help` for the CLI)
Put it in place:         mkdir -p ~/.local/opt ~/.local/bin
                         cp -r gputray ~/.local/opt/gputray
                         ln -sf ~/.local/opt/gputray/gputray ~/.local/bin/gputray
                         cp -r share ~/.local/          (the menu entry and icons; Exec=gputray)
"Open with gputray" and autostart point at the executable itself: `gputray --install-desktop-entry`.
Qt's X11 libraries come from the system: where one is missing, gputray names the package to install.
"""


def project_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])


def run(cmd: list[str], **kw: object) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]


def build_venv(work: Path) -> Path:
    venv = work / "venv"
    if not (venv / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", str(ROOT), PYINSTALLER])
    return python


def freeze(python: Path, work: Path) -> Path:
    spec = work / "gputray.spec"
    spec.write_text(spec_text(ROOT / "tools" / "frozen_entry.py", windowed_too=False), encoding="utf-8")
    dist = work / "dist"
    run(
        [str(python), "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
         "--distpath", str(dist), "--workpath", str(work / "pyi-build"), str(spec)],
        cwd=work,
    )  # fmt: skip
    return dist / "gputray"


ICON_SCRIPT = """
import sys
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer
app = QGuiApplication([])
svg, out = QSvgRenderer(sys.argv[1]), sys.argv[2]
for size in map(int, sys.argv[3:]):
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    svg.render(painter)
    painter.end()
    assert image.save(f"{out}/{size}.png"), size
"""


def icons(python: Path, share: Path) -> None:
    svg = ROOT / "resources" / "icons" / "gputray.svg"
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
        run([str(python), "-c", ICON_SCRIPT, str(svg), tmp, *map(str, ICON_SIZES)], env=env)
        for size in ICON_SIZES:
            folder = share / "icons" / "hicolor" / f"{size}x{size}" / "apps"
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(tmp) / f"{size}.png", folder / "gputray.png")
    scalable = share / "icons" / "hicolor" / "scalable" / "apps"
    scalable.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(svg, scalable / "gputray.svg")


def desktop_file(python: Path) -> str:
    """The menu entry: ``Exec=gputray`` (on PATH once put in place) and the themed icon name."""
    code = (
        "from gputray.gui import desktop_integration as d\n"
        "print(d.desktop_entry_text('gputray', d.mime_types_for_patterns(d.recipe_patterns())), end='')"
    )
    text = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout
    lines = ["Icon=gputray" if line.startswith("Icon=") else line for line in text.splitlines()]
    return "\n".join([*lines, "TryExec=gputray"]) + "\n"


def package(app: Path, python: Path, out: Path, version: str) -> Path:
    name = f"gputray-{version}"
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp) / name
        shutil.copytree(app, top / "gputray", symlinks=True)
        share = top / "share"
        icons(python, share)
        (share / "applications").mkdir(parents=True)
        (share / "applications" / "gputray.desktop").write_text(desktop_file(python), encoding="utf-8")
        (top / "README.txt").write_text(README.format(version=version), encoding="utf-8")
        out.mkdir(parents=True, exist_ok=True)
        tarball = out / f"{name}-linux-x86_64.tar.gz"
        with tarfile.open(tarball, "w:gz") as tar:
            tar.add(top, arcname=name)
    return tarball


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=ROOT / "dist", help="where the tarball goes (default dist/)"
    )
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "frozen-linux", help="build folder")
    args = parser.parse_args(argv)
    if not sys.platform.startswith("linux"):
        parser.error("the Linux build runs on Linux (tools/build_windows.py makes the Windows one)")
    args.work.mkdir(parents=True, exist_ok=True)
    version = project_version()
    python = build_venv(args.work)
    app = freeze(python, args.work)
    tarball = package(app, python, args.out, version)
    folder_mib = sum(p.lstat().st_size for p in app.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20
    print(f"built {tarball}: {tarball.stat().st_size / 2**20:.0f} MiB packed, {folder_mib:.0f} MiB unpacked")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
