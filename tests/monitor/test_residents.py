"""Residents recognised (issue 27, item 1): each of Ollama, llama-server, llama-swap, ComfyUI and LM
Studio running as a real process named like the real program (tests/resident_stubs.py), speaking its
documented API on 127.0.0.1, is found with its port, the models it holds and the memory, asked through
its own free call, and really gives the memory back (its hold on the simulated GPU drops). A resident
serving a request is seen as busy; a user-defined one from the config is found by its pattern."""

from __future__ import annotations

import json
import os
import stat
import sys
import urllib.request
from pathlib import Path

import pytest
from resident_stubs import resident
from waiting import wait_for

from gputray.monitor.resident_api import free
from gputray.monitor.resident_kinds import FreeCall, ResidentKind
from gputray.monitor.residents import ResidentView, ResidentWatch
from gputray.monitor.sim_holds import read_holds
from gputray.monitor.units import GIB

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="psutil ports, symlinked names")


def _only(watch: ResidentWatch, name: str, pid: int | None = None) -> ResidentView:
    """The one resident of that name (of that pid: the machine may run a real one beside the stub)."""
    views = [v for v in watch.look(None) if v.name == name and pid in (None, v.pid)]
    assert len(views) == 1, views
    return views[0]


def _held(holds: Path, pid: int) -> int:
    return next((h.vram_bytes for h in read_holds(holds) if h.pid == pid), -1)


@pytest.mark.parametrize(
    ("api", "name", "models", "free_path"),
    [
        ("ollama", "Ollama", ("qwen3:14b",), "/api/generate"),
        ("comfyui", "ComfyUI", (), "/free"),
        ("llama-server", "llama-server", ("qwen3:14b",), "/models/unload"),
        ("llama-swap", "llama-swap", ("qwen3:14b",), "/unload"),
        ("lmstudio", "LM Studio", ("qwen3:14b",), "/test/unload-all"),
    ],
)
def test_each_resident_is_found_asked_and_gives_memory_back(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    api: str,
    name: str,
    models: tuple[str, ...],
    free_path: str,
) -> None:
    holds = tmp_path / "holds"
    with resident(tmp_path, api, holds=holds, hold_gib=6) as stub:
        if api == "lmstudio":  # `lms unload --all`, answered as LM Studio's CLI does: through its server
            _stand_in_lms(tmp_path, monkeypatch, stub.port)
        view = _only(ResidentWatch(), name, stub.proc.pid)
        assert (view.pid, view.port, view.models, view.answered) == (stub.proc.pid, stub.port, models, True)
        assert not view.busy and view.can_free
        if api in ("ollama", "comfyui"):  # their API says what they hold
            assert view.held_bytes == 6 * GIB
        assert _held(holds, stub.proc.pid) == 6 * GIB
        kind = ResidentWatch().kinds
        said = free(next(k for k in kind if k.name == name).api, view.port, view.models)
        assert said.ok, said
        wait_for(lambda: _held(holds, stub.proc.pid) == 0, what=f"{name} to give its memory back")
        assert free_path in [c["path"] for c in stub.calls() if c["method"] in ("POST", "GET")]


def _stand_in_lms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, port: int) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    lms = bin_dir / "lms"
    lms.write_text(
        f"#!{sys.executable}\nimport sys, urllib.request\n"
        "assert sys.argv[1:] == ['unload', '--all'], sys.argv\n"
        f"urllib.request.urlopen(urllib.request.Request('http://127.0.0.1:{port}/test/unload-all', "
        "data=b'{}', method='POST'), timeout=5).read()\n"
    )
    lms.chmod(lms.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_a_resident_serving_a_request_is_busy(tmp_path: Path) -> None:
    holds = tmp_path / "holds"
    with (
        resident(tmp_path, "comfyui", holds=holds, busy=True) as comfy,
        resident(tmp_path, "llama-server", holds=holds, busy=True) as llama,
        resident(tmp_path, "ollama", holds=holds) as ollama,
    ):
        watch = ResidentWatch()
        ours = {comfy.proc.pid, llama.proc.pid, ollama.proc.pid}  # not another test's stand-ins
        views = {v.name: v for v in watch.look(None) if v.pid in ours}
        assert views["ComfyUI"].busy and views["ComfyUI"].idle_since_s is None  # a prompt is running
        assert views["llama-server"].busy  # a slot is processing
        assert not views["Ollama"].busy
        body = json.dumps({"model": "qwen3:14b", "prompt": "hi"}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{ollama.port}/api/generate", data=body, method="POST"
        )
        urllib.request.urlopen(request, timeout=5).read()
        assert _only(watch, "Ollama", ollama.proc.pid).busy  # it served a request since the last look
        assert not _only(watch, "Ollama", ollama.proc.pid).busy


def test_a_user_defined_resident_is_found_and_freed_by_its_call(tmp_path: Path) -> None:
    holds = tmp_path / "holds"
    with resident(tmp_path, "custom", holds=holds, hold_gib=3, program="my-server") as stub:
        call = FreeCall("POST", "/release", '{"all": true}')
        kind = ResidentKind("my-server", "custom", ("my-serv*",), port=stub.port, free_call=call)
        view = _only(ResidentWatch((kind,)), "my-server", stub.proc.pid)
        assert view.port == stub.port and view.can_free
        assert free("custom", view.port, (), call).ok
        wait_for(lambda: _held(holds, stub.proc.pid) == 0, what="the user's resident to give its memory back")
        assert stub.calls()[-1] == {"method": "POST", "path": "/release", "body": {"all": True}}


def test_a_look_that_cannot_list_processes_keeps_the_last_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Out of open files (EMFILE) the process table cannot be read: the look keeps what it last saw and
    logs one line, not a traceback every 2 s from the owner's timer (seen in an owner out of fds)."""
    import errno

    failing = True

    def finder(kinds: object) -> list[object]:
        if failing:
            raise OSError(errno.EMFILE, "Too many open files", "/proc")
        return []

    watch = ResidentWatch(finder=finder)  # type: ignore[arg-type]
    caplog.set_level("INFO", logger="gputray.monitor.residents")
    for _ in range(3):
        assert watch.look(None) == ()
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "cannot list processes" in said[0] and "Too many open files" in said[0], said
    failing = False
    assert watch.look(None) == ()
    assert [r.getMessage() for r in caplog.records][1:] == ["residents: processes can be listed again"]
