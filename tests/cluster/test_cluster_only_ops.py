"""Cluster-only ops (``cluster_update``, ``cluster_sync``) from a plain local client are refused in
words by a real owner (``gputray daemon``), with no cluster configured and with one configured (only
the bridge this owner started has its key), and the running job is left untouched: it runs once and
ends as it would have. A step its task's state does not allow is refused even with the key."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import task_steps as steps
import tomli_w
from real_owner import paths_of, start_daemon, stop_daemon
from test_link import _link
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.reasons.codes import Said
from gputray.scheduler.tasks import cluster_steps as remote
from gputray.scheduler.tasks.records import TaskSpec

PY = sys.executable
REQUEUE = remote.LostThere(why=Said(text="laptop left the cluster while it ran"), now=1.0)
DONE = remote.RemoteRun(into="succeeded", remote_state="fetched", reason=Said(text="done"), exit_code=0)


def _refusal(paths_home: Path, request: rq.Request[object]) -> str:
    with pytest.raises(ipc.RemoteError) as caught:
        ipc.ask(paths_of(paths_home), request)
    return str(caught.value)


@pytest.mark.skipif(sys.platform == "win32", reason="the daemon test runs on POSIX")
def test_a_plain_client_cannot_requeue_or_finish_a_running_task(tmp_path: Path) -> None:
    home = tmp_path / "home"
    go, marks = tmp_path / "go", tmp_path / "marks"
    script = tmp_path / "job.py"
    script.write_text(
        f"import pathlib, time\nopen({str(marks)!r}, 'a').write('start\\n')\n"
        f"while not pathlib.Path({str(go)!r}).exists():\n    time.sleep(0.05)\n"
    )
    proc = start_daemon(home, tmp_path / "daemon.err")
    try:
        paths = paths_of(home)
        (task,) = ipc.ask(paths, rq.Run(argv=[PY, str(script)], cwd=str(tmp_path))).tasks
        wait_for(lambda: marks.exists(), 30, "the job to start")
        running = ipc.ask(paths, rq.Get(id=task.id)).task
        assert running is not None and running.state == "running"

        for step in (REQUEUE, DONE):  # no [cluster] here: nobody may send them
            said = _refusal(home, rq.ClusterUpdate(id=task.id, step=step))
            assert "refused: this gputray is in no cluster" in said, said
        assert "in no cluster" in _refusal(home, rq.ClusterSync())

        # a cluster configured: only its bridge (which holds this owner's key) may send them
        cluster = {"cluster": {"address": "127.0.0.1:9", "machine": "desk"}}
        paths.config_dir.mkdir(parents=True, exist_ok=True)
        paths.config_file.write_text(tomli_w.dumps(cluster), encoding="utf-8")
        wait_for(lambda: ipc.ask(paths, rq.Status(cluster=True)).cluster.configured, 30, "[cluster] read")  # type: ignore[union-attr]
        for key in ("", "0" * 64):
            said = _refusal(home, rq.ClusterUpdate(id=task.id, step=REQUEUE, bridge_key=key))
            assert "only the cluster bridge this owner started may send it" in said, said

        now = ipc.ask(paths, rq.Get(id=task.id)).task
        assert now is not None
        assert (now.state, now.attempts, now.started_at) == ("running", running.attempts, running.started_at)
        go.touch()
        wait_for(lambda: ipc.ask(paths, rq.Get(id=task.id)).task.state == "succeeded", 30, "the job to end")  # type: ignore[union-attr]
        assert marks.read_text() == "start\n"  # it ran once
    finally:
        stop_daemon(proc)


def test_the_bridge_key_moves_no_task_along_a_step_its_state_does_not_allow(tmp_path: Path) -> None:
    link, store = _link(tmp_path, {"address": "127.0.0.1:6379", "machine": "desk"})
    key = link.bridge_key
    local = store.add(TaskSpec(kind="command", name="here", argv=("true",)))
    steps.start(store, local.id)
    with pytest.raises(rq.Refusal, match=r"task #1 is this machine's own"):
        link.update(rq.ClusterUpdate(id=local.id, step=REQUEUE, bridge_key=key))
    placed_here = store.add(TaskSpec(kind="command", name="any", argv=("true",), machine="any"))
    store.must_apply(placed_here.id, remote.PlaceHere(machine="desk"))
    steps.start(store, placed_here.id)
    with pytest.raises(rq.Refusal, match="is not on another machine"):
        link.update(rq.ClusterUpdate(id=placed_here.id, step=DONE, bridge_key=key))
    handed = store.add(TaskSpec(kind="command", name="there", argv=("true",), machine="laptop"))
    steps.hand_over(store, handed.id, "laptop", 7)
    steps.cancel(store, handed.id)
    with pytest.raises(
        rq.Refusal, match=r"refused: task #3 is cancelled: RemoteRun is not a move from there"
    ):
        link.update(rq.ClusterUpdate(id=handed.id, step=DONE, bridge_key=key))
    assert [store.get(i).state for i in (1, 2, 3)] == ["running", "running", "cancelled"]
    store.close()
