"""Residents as Windows names them (issue 27, item 4), and where a resident's port comes from when the
owner of its socket cannot be seen (Wine, another user's process). The Windows processes themselves
are found for real under Wine in tests/wine/test_wine_residents.py; here the rules, and on Linux a
real ``python main.py`` run inside a ComfyUI checkout whose path does not name ComfyUI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from resident_stubs import STUB
from waiting import wait_for

from gputray.monitor.resident_api import lms_path
from gputray.monitor.resident_kinds import BUILTIN, ResidentKind, kind_named
from gputray.monitor.resident_ports import PortGuess, choose_port, named_ports
from gputray.monitor.residents import Found, ResidentWatch, _one_per_port


def _kind_of(name: str, cmdline: str) -> str | None:
    return next((k.name for k in BUILTIN if k.matches(name, cmdline)), None)


@pytest.mark.parametrize(
    ("process", "cmdline", "kind"),
    [
        ("ollama.exe", r"C:\Users\ai\AppData\Local\Programs\Ollama\ollama.exe serve", "Ollama"),
        ("Ollama.EXE", "ollama serve", "Ollama"),  # Windows names are case-insensitive
        ("llama-server.exe", r"llama-server.exe -m C:\models\qwen3-14b.gguf --port 8080", "llama-server"),
        ("llama-swap.exe", r"llama-swap.exe --config C:\ls\config.yaml --listen :8080", "llama-swap"),
        ("LM Studio.exe", r'"C:\Program Files\LM Studio\LM Studio.exe"', "LM Studio"),
        # the portable build's own run_nvidia_gpu.bat line
        (
            "python.exe",
            r".\python_embeded\python.exe -s ComfyUI\main.py --windows-standalone-build",
            "ComfyUI",
        ),
        ("python.exe", r"C:\ComfyUI\.venv\Scripts\python.exe C:\ComfyUI\main.py --port 8000", "ComfyUI"),
        (
            "ComfyUI.exe",
            r"C:\Users\ai\AppData\Local\Programs\@comfyorgcomfyui-electron\ComfyUI.exe",
            "ComfyUI",
        ),
        ("pythonw.exe", r"pythonw.exe D:\AI\ComfyUI\main.py", "ComfyUI"),
        # not residents: Ollama's tray launcher (its child `ollama.exe serve` is), LM Studio's CLI, any Python
        ("ollama app.exe", r'"C:\Users\ai\AppData\Local\Programs\Ollama\ollama app.exe"', None),
        ("lms.exe", r"C:\Users\ai\.lmstudio\bin\lms.exe unload --all", None),
        ("python.exe", r"python.exe C:\work\train.py", None),
    ],
)
def test_windows_process_names_and_command_lines(process: str, cmdline: str, kind: str | None) -> None:
    assert _kind_of(process, cmdline) == kind


def test_a_script_run_by_name_is_looked_at_only_for_a_kind_that_says_so() -> None:
    comfy = kind_named("ComfyUI")
    assert comfy is not None and comfy.script_beside == ("comfy", "comfy_extras")
    assert comfy.may_match_by_script("python.exe", "python.exe main.py --port 8190")
    assert not comfy.may_match_by_script("node.exe", "node.exe main.py")
    ollama = kind_named("ollama")
    assert ollama is not None and not ollama.may_match_by_script("ollama.exe", "ollama.exe x.py")


@pytest.mark.parametrize(
    ("argv", "environ", "ports"),
    [
        (["python.exe", "-s", "ComfyUI\\main.py", "--port", "8190"], None, [(8190, "command line")]),
        (["main.py", "--port=8000"], None, [(8000, "command line")]),
        (["llama-swap", "--listen", ":9292"], None, [(9292, "command line")]),
        (["llama-swap", "--listen=127.0.0.1:9293"], None, [(9293, "command line")]),
        (["ollama.exe", "serve"], {"OLLAMA_HOST": "0.0.0.0:11500"}, [(11500, "environment")]),
        (["ollama", "serve"], {"OLLAMA_HOST": "http://127.0.0.1:11435/"}, [(11435, "environment")]),
        (["ollama", "serve"], {"OLLAMA_HOST": "127.0.0.1"}, []),  # no port: the usual one
        (["main.py", "--port", "0", "--port", "99999", "--port"], None, []),  # none of them a port
    ],
)
def test_ports_named_by_the_command_line_or_the_environment(
    argv: list[str], environ: dict[str, str] | None, ports: list[tuple[int, str]]
) -> None:
    assert [(g.port, g.source) for g in named_ports(argv, environ)] == ports


def test_a_port_is_seen_listening_first_then_named_then_usual_where_no_owner_is_seen() -> None:
    ollama = kind_named("Ollama")
    assert ollama is not None
    named = [PortGuess(11500, "environment")]
    assert choose_port(ollama, [5000, 11434], [], named, None) == PortGuess(11434, "listening")
    assert choose_port(ollama, [5000], [], named, None) == PortGuess(5000, "listening")
    assert choose_port(ollama, [], [8000], named, None) == PortGuess(8000, "listening")  # a child listens
    # nothing seen: a named port, or the usual one, only where a socket listens whose owner is unseen
    assert choose_port(ollama, [], [], named, frozenset({11500, 11434})) == named[0]
    assert choose_port(ollama, [], [], named, frozenset({11434})) == PortGuess(11434, "usual port")
    assert choose_port(ollama, [], [], named, frozenset({2024})) is None  # a client: `ollama run`
    assert choose_port(ollama, None, [], [], None) == PortGuess(11434, "usual port")  # no table at all


def test_two_residents_claiming_one_unseen_port_leave_it_to_the_oldest() -> None:
    kind = ResidentKind("Ollama", "ollama", ("ollama",), port=11434)
    server = Found(kind, 10, 11434, frozenset({10}), "usual port")
    client = Found(kind, 20, 11434, frozenset({20}), "usual port")
    other = Found(kind, 30, 11500, frozenset({30}), "environment")
    started = {10: SimpleNamespace(create_time=lambda: 100.0), 20: SimpleNamespace(create_time=lambda: 200.0)}
    kept = {f.pid: f.port for f in _one_per_port([client, server, other], started)}
    assert kept == {10: 11434, 20: None, 30: 11500}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a real process's cwd read through /proc")
def test_comfyui_run_as_python_main_py_in_a_checkout_not_named_comfyui(tmp_path: Path) -> None:
    checkout = tmp_path / "sd-webui"  # `git clone … sd-webui`, then `python main.py` inside it
    for folder in ("comfy", "comfy_extras"):
        (checkout / folder).mkdir(parents=True)
    shutil.copy(STUB, checkout / "main.py")
    plain = tmp_path / "plain"  # a main.py without ComfyUI's folders beside it is not ComfyUI
    plain.mkdir()
    shutil.copy(STUB, plain / "main.py")
    holds = tmp_path / "holds"
    holds.mkdir()
    procs = []
    try:
        for folder in (checkout, plain):
            args = ["--port-file", "port", "--calls", "calls.jsonl"]  # naming no ComfyUI
            env = {"GPUTRAY_SIM_HOLDS": str(holds), "RESIDENT_STUB_API": "comfyui"}
            procs.append(subprocess.Popen([sys.executable, "main.py", *args], cwd=folder, env=env))
        wait_for(lambda: all((f / "port").exists() for f in (checkout, plain)), what="both to listen")
        views = {v.pid: v for v in ResidentWatch().look(None) if v.name == "ComfyUI"}
        assert procs[1].pid not in views
        view = views[procs[0].pid]
        assert view.port == int((checkout / "port").read_text()) and view.port_from == "listening"
        assert view.answered and not view.busy
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)


def test_lms_is_found_where_lm_studio_puts_it_when_not_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("USERPROFILE", str(tmp_path))
    assert lms_path() is None
    lms = tmp_path / ".lmstudio" / "bin" / ("lms.exe" if sys.platform == "win32" else "lms")
    lms.parent.mkdir(parents=True)
    lms.write_text("")
    assert lms_path() == str(lms)
