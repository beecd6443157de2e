"""Input at its edges, through a real owner and its socket: a NUL byte in a name, a family, an origin or
a base64 argument or variable is refused at submit in words (nothing queued); ``gputray logs`` gives
the same text through the owner and without one for a log cut inside a UTF-8 sequence; a task file
saved with a UTF-8 byte order mark (Windows Notepad) is read like any other."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_owner import home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler import replies as rp
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths
from gputray.scheduler.tasks.records import TaskPatch

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses the Unix socket transport")
PY = sys.executable
GPUTRAY = [PY, "-m", "gputray.gui.entry"]


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    return home_paths(tmp_path, monkeypatch)


@pytest.fixture
def owner(paths: Paths) -> Iterator[Owner]:
    with running_owner(paths) as o:
        yield o


@pytest.fixture
def client(owner: Owner, paths: Paths) -> Iterator[ipc.IpcClient]:
    with ipc.IpcClient(paths) as c:
        yield c


def raw(data: bytes) -> rq.RawText:
    return rq.RawText(b64=base64.b64encode(data).decode("ascii"))


def refused(client: ipc.IpcClient, request: rq.Request[rp.Submitted]) -> str:
    with pytest.raises(ipc.RemoteError) as caught:
        client.ask(request)
    message = caught.value.message
    assert "\n" not in message.strip() and "Traceback" not in message
    return message


def test_a_nul_in_a_name_family_origin_argument_or_variable_is_refused_at_submit(
    client: ipc.IpcClient,
) -> None:
    """Before: ``name = "a\\x00"`` passed the "not blank, no NUL" pattern (``\\S`` matches NUL), and a
    base64 argument or variable holding NUL was queued, then failed at start ("embedded null byte")."""
    argv = [PY, "-c", "pass"]
    for patch in (TaskPatch(name="job\x00"), TaskPatch(family="fam\x00"), TaskPatch(origin="\x00")):
        message = refused(client, rq.Run(argv=argv, overrides=patch))
        assert "no NUL character" in message, message
    said = refused(client, rq.Run(argv=[PY, "-c", "pass", raw(b"a\x00b")]))
    assert "NUL" in said, said
    said = refused(client, rq.Run(argv=argv, caller_env={"ODD": raw(b"\xff\x00")}))
    assert "NUL" in said, said
    said = refused(client, rq.Run(argv=argv, cwd=raw(b"/tmp\x00x")))
    assert "NUL" in said, said
    assert client.ask(rq.Queue(all=True)).tasks == ()  # nothing was queued
    fine = client.ask(rq.Run(argv=[PY, "-c", "pass", raw(b"caf\xe9")], name="odd but fine"))
    assert fine.tasks[0].name == "odd but fine"


def test_logs_give_the_same_text_through_the_owner_and_without_one_for_a_cut_utf8_sequence(
    owner: Owner, client: ipc.IpcClient, paths: Paths
) -> None:
    """The job's output ends inside a UTF-8 sequence (a cut "é"): the owner left the cut bytes for a
    next read that never came, the offline reader printed U+FFFD; now both print U+FFFD."""
    code = "import sys; sys.stdout.buffer.write('héllo wörld\\n'.encode() + b'end \\xc3'); sys.stdout.flush()"
    task_id = client.ask(rq.Run(argv=[PY, "-c", code], name="cut")).tasks[0].id
    wait_for(lambda: client.ask(rq.Get(id=task_id)).task.state == "succeeded")
    env = {**os.environ, "GPUTRAY_HOME": os.environ["GPUTRAY_HOME"]}
    through_owner = subprocess.run([*GPUTRAY, "logs", str(task_id)], env=env, capture_output=True, timeout=60)
    assert through_owner.returncode == 0, through_owner.stderr
    owner.stop()
    offline = subprocess.run([*GPUTRAY, "logs", str(task_id)], env=env, capture_output=True, timeout=60)
    assert offline.returncode == 0, offline.stderr
    assert b"no gputray owner is running" in offline.stderr
    assert through_owner.stdout == offline.stdout
    assert "héllo wörld\nend \ufffd".encode() in through_owner.stdout


def test_a_task_file_with_a_utf8_byte_order_mark_is_accepted(client: ipc.IpcClient, tmp_path: Path) -> None:
    """Notepad's "UTF-8 with BOM": before, "Invalid statement (at line 1, column 1)"."""
    task = tmp_path / "bom.toml"
    task.write_bytes(
        b"\xef\xbb\xbf" + f'kind = "command"\nname = "with a BOM"\nargv = ["{PY}", "-c", "pass"]\n'.encode()
    )
    submitted = client.ask(rq.Submit(task_file=str(task)))
    assert submitted.tasks[0].name == "with a BOM"
    wait_for(lambda: client.ask(rq.Get(id=submitted.tasks[0].id)).task.state == "succeeded")
