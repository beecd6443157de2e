"""Residents on Windows (issue 27, item 4): real Windows processes under Wine that look like Ollama
and ComfyUI, found by gputray's owner running as a Windows process, their idle state read from their
API, and a free call reaching the Ollama stand-in.

* ``ollama.exe``: a copy of the embeddable CPython's ``python.exe`` renamed, running
  ``tests/fixtures/residents/resident_stub.py``, which speaks Ollama's documented API on 127.0.0.1 at
  the port ``OLLAMA_HOST`` names, as ``ollama serve`` reads it;
* ComfyUI as its portable build runs it: ``ComfyUI_windows_portable\\python_embeded\\python.exe -s
  ComfyUI\\main.py --port N`` from the portable folder (the stub copied as ``ComfyUI\\main.py``);
* ComfyUI as ``python.exe main.py`` run inside a checkout that is not named ComfyUI (``sd\\main.py``
  with ``comfy\\`` and ``comfy_extras\\`` beside it);
* a game, ``cs2.exe`` (another renamed copy), using the 780M: ``[exclusive] apps = ["cs2"]`` matches it.

What Wine shows on the way (docs/windows.md): psutil's ``name()`` raises for every process (the
name comes from ``QueryFullProcessImageNameW``), and no listening socket has an owner (pid 0), so
each port is the one the command line or ``OLLAMA_HOST`` names, confirmed by the API answering.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from waiting import wait_for
from winpython import Owner, WinePython, winpath

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI

STUB = Path(__file__).resolve().parents[1] / "fixtures" / "residents" / "resident_stub.py"
GIB = 1 << 30


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _calls(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _held(holds: Path, pid: int) -> int | None:
    hold = holds / f"{pid}.json"
    return int(json.loads(hold.read_text())["vram_bytes"]) if hold.exists() else None


class _Stubs:
    def __init__(self, win: WinePython, root: Path) -> None:
        self.win, self.root = win, root
        self.holds = root / "holds"
        self.holds.mkdir()
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(
        self, exe: Path, argv: list[str], name: str, *, cwd: Path, env: Mapping[str, str] | None = None
    ) -> tuple[Path, Path]:
        port_file, calls = self.root / f"{name}.port", self.root / f"{name}.calls"
        args = ["--port-file", winpath(port_file), "--calls", winpath(calls), "--hold-gib", "6"]
        proc = subprocess.Popen(
            [self.win.wine, str(exe), *argv, *args],
            cwd=cwd,
            env=self.win.env({"GPUTRAY_SIM_HOLDS": winpath(self.holds), **(env or {})}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(proc)
        return port_file, calls

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            proc.wait(timeout=30)


@pytest.fixture
def stubs(win: WinePython, tmp_path: Path) -> Iterator[_Stubs]:
    running = _Stubs(win, tmp_path)
    try:
        yield running
    finally:
        running.stop()


def _python_copy(win: WinePython, into: Path, exe_name: str) -> Path:
    """The embeddable CPython copied to ``into`` with its ``python.exe`` named ``exe_name``."""
    shutil.copytree(win.python_dir, into)
    if exe_name != "python.exe":
        (into / "python.exe").rename(into / exe_name)
    return into / exe_name


def test_ollama_and_comfyui_are_found_idle_and_ollama_freed_under_wine(
    win: WinePython, stubs: _Stubs, tmp_path: Path
) -> None:
    ollama_exe = _python_copy(win, tmp_path / "Ollama", "ollama.exe")
    portable = tmp_path / "ComfyUI_windows_portable"
    embedded = _python_copy(win, portable / "python_embeded", "python.exe")
    (portable / "ComfyUI").mkdir()
    shutil.copy(STUB, portable / "ComfyUI" / "main.py")
    checkout = tmp_path / "sd"
    for folder in ("comfy", "comfy_extras"):
        (checkout / folder).mkdir(parents=True)
    shutil.copy(STUB, checkout / "main.py")

    ollama_port, comfy_port, checkout_port = _free_port(), _free_port(), _free_port()
    ollama_ready, ollama_calls = stubs.start(
        ollama_exe,
        [winpath(STUB), "ollama"],
        "ollama",
        cwd=tmp_path,
        env={"OLLAMA_HOST": f"127.0.0.1:{ollama_port}"},
    )
    comfy_ready, _ = stubs.start(
        embedded, ["-s", "ComfyUI\\main.py", "comfyui", "--port", str(comfy_port)], "comfy", cwd=portable
    )
    checkout_ready, _ = stubs.start(  # its command line names no ComfyUI: the folders beside main.py do
        Path(win.python_dir / "python.exe"),
        ["main.py", "--port", str(checkout_port), "--device", "780m"],
        "checkout",
        cwd=checkout,
        env={"RESIDENT_STUB_API": "comfyui"},
    )
    game_ready, _ = stubs.start(  # a game: [exclusive] apps = ["cs2"] matches cs2.exe on the 780M
        _python_copy(win, tmp_path / "Counter-Strike 2", "cs2.exe"),
        [winpath(STUB), "custom", "--device", "780m", "--port", "0"],
        "game",
        cwd=tmp_path,
    )
    wait_for(
        lambda: all(p.exists() for p in (ollama_ready, comfy_ready, checkout_ready, game_ready)),
        what="the four Windows stand-ins to start",
        timeout_s=60,
    )

    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text('[exclusive]\napps = ["cs2"]\n', encoding="utf-8")
    owner = Owner(win, home, "--demo", env={"GPUTRAY_SIM_HOLDS": winpath(stubs.holds)})
    try:

        def residents() -> list[dict[str, object]]:
            listed = win.gputray("residents", "--json", home=home)
            assert listed.returncode == 0, listed.text
            doc = json.loads(listed.stdout)
            assert isinstance(doc, list)
            return [r for r in doc if isinstance(r, dict)]

        found = wait_for(
            lambda: (rs := residents()) and sum(r["answered"] is True for r in rs) >= 3 and rs,
            what="the owner under Wine to find and ask all three",
            timeout_s=90,
        )
        by_port = {r["port"]: r for r in found}
        ollama = by_port[ollama_port]
        assert ollama["name"] == "Ollama" and ollama["port_from"] == "environment", ollama
        assert ollama["models"] == ["qwen3:14b"] and ollama["held_bytes"] == 6 * GIB
        assert ollama["busy"] is False and ollama["idle_since_s"] is not None and ollama["can_free"]
        assert ollama["device"] == RTX_5060_TI.key, ollama  # its hold on the demo's simulated GPU
        for port in (comfy_port, checkout_port):
            comfy = by_port[port]
            assert comfy["name"] == "ComfyUI" and comfy["port_from"] == "command line", comfy
            assert comfy["busy"] is False and comfy["idle_since_s"] is not None, comfy  # its /queue is empty
            assert comfy["held_bytes"] == 6 * GIB  # /system_stats' torch_vram_total
        assert by_port[checkout_port]["device"] == RADEON_780M.key

        status = win.gputray("status", "--json", home=home)
        assert status.returncode == 0, status.text
        assert json.loads(status.stdout)["taken"] == {RADEON_780M.key: "cs2.exe"}  # named as Windows names it

        text = win.gputray("residents", home=home)  # as a user types it, on a cp1252 pipe
        assert text.returncode == 0 and text.stderr == "", text.text
        line = next(x for x in text.stdout.splitlines() if x.startswith("Ollama "))
        assert line.startswith("Ollama holds 6.0 GiB on GeForce RTX 5060 Ti · idle "), line
        assert line.endswith(f"(qwen3:14b), port {ollama_port}"), line

        freed = win.gputray("free-resident", "ollama", home=home)
        assert freed.returncode == 0, freed.text
        assert freed.stdout.startswith("asked Ollama (idle "), freed.stdout
        assert "keep_alive: 0" in freed.stdout
        generate = [c for c in _calls(ollama_calls) if c["path"] == "/api/generate"]
        assert generate == [
            {"method": "POST", "path": "/api/generate", "body": {"model": "qwen3:14b", "keep_alive": 0}}
        ]
        wait_for(
            lambda: _held(stubs.holds, int(str(ollama["pid"]))) == 0,
            what="Ollama's stand-in to give its memory back",
        )
    finally:
        owner.stop()
