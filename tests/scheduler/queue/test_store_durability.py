"""Power cuts: an acknowledged submit is on disk (the WAL synced) before its reply leaves the owner.

A power cut cannot be staged here, but what survives one can be seen at the OS boundary: strace shows
every ``fdatasync``/``fsync`` of the queue's files and every reply the owner sends, in order. With the
old ``synchronous=NORMAL`` there were none at all during 20 acknowledged submits.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths
from gputray.scheduler.queue.store import NO_FSYNC_VAR, TaskStore
from gputray.scheduler.tasks.records import TaskSpec

PY = sys.executable


def spec(name: str) -> TaskSpec:
    return TaskSpec(kind="command", name=name, argv=("echo", name))


def test_the_store_syncs_every_commit_unless_told_not_to_for_a_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TaskStore(tmp_path / "q.db")
    assert store.durable
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    store.close()
    monkeypatch.setenv(NO_FSYNC_VAR, "1")
    fast = TaskStore(tmp_path / "q.db")
    assert not fast.durable
    assert fast._db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_submits_that_arrive_together_share_one_commit(tmp_path: Path) -> None:
    """While one commit waits (here: for another writer's lock), the submits that arrive meanwhile are
    committed together by the next one, each acknowledged with its own id."""
    db = tmp_path / "q.db"
    store = TaskStore(db)
    before = store.commits
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # holds SQLite's write lock: the first commit waits for it
    results: dict[str, int] = {}

    def submit(name: str) -> None:
        results[name] = store.add(spec(name)).id

    first = threading.Thread(target=submit, args=("first",))
    first.start()
    # The first submit leads: it took the queue of pending submits (its own) and now waits in BEGIN.
    wait_for(lambda: store._committing and not store._commit_queue, 10, "the first commit to start")
    others = [threading.Thread(target=submit, args=(f"t{i}",)) for i in range(7)]
    for t in others:
        t.start()
    wait_for(lambda: len(store._commit_queue) == 7, 10, "the other submits to queue up")
    blocker.execute("ROLLBACK")
    for t in (first, *others):
        t.join(timeout=30)
    assert store.commits - before == 2  # the first alone, then the seven together
    assert sorted(results.values()) == list(range(1, 9))
    store.close()
    assert sorted(r.name for r in TaskStore(db).list()) == sorted(results)


_SYNC = re.compile(r"^(\d+)\s+(fdatasync|fsync)\((\d+)<([^>]*)>\)\s+=\s+0")
_SYNC_START = re.compile(r"^(\d+)\s+(fdatasync|fsync)\((\d+)<([^>]*)>\s+<unfinished")
_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (fdatasync|fsync) resumed>.*=\s+0")
_RECV = re.compile(r"^(\d+)\s+recvfrom\(")
_REPLY = re.compile(r'^(\d+)\s+sendto\(.*\\"tasks\\":\[\{\\"id\\":(\d+)')


def _synced_replies(trace: str, queue_file: str) -> tuple[dict[int, bool], int]:
    """Per task id in a submit reply: whether the thread that sent it synced the queue's files after
    the request arrived. Also the number of syncs of the queue's files seen in all."""
    fresh: dict[str, bool] = {}  # thread -> a sync since its last recv
    starting: dict[str, bool] = {}
    replies: dict[int, bool] = {}
    syncs = 0
    for line in trace.splitlines():
        if m := _SYNC.match(line):
            if m.group(4).startswith(queue_file):
                fresh[m.group(1)] = True
                syncs += 1
        elif m := _SYNC_START.match(line):
            starting[m.group(1)] = m.group(4).startswith(queue_file)
        elif m := _RESUMED.match(line):
            if starting.pop(m.group(1), False):
                fresh[m.group(1)] = True
                syncs += 1
        elif m := _RECV.match(line):
            fresh[m.group(1)] = False
        elif m := _REPLY.match(line):
            replies[int(m.group(2))] = fresh.get(m.group(1), False)
    return replies, syncs


@pytest.mark.skipif(sys.platform != "linux", reason="strace is Linux's")
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed (apt-get install strace)")
def test_each_acknowledged_submit_is_synced_before_its_reply(tmp_path: Path) -> None:
    probe = subprocess.run(["strace", "-qq", "-e", "trace=none", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"strace cannot trace here: {probe.stderr.strip()}")
    home = tmp_path / "home"
    paths = Paths(home / "config", home / "data", home / "state", home / "run")
    trace = tmp_path / "trace.txt"
    cmd = [
        "strace", "-f", "-qq", "-e", "signal=none", "-y", "-s", "96",
        "-e", "trace=fsync,fdatasync,sendto,recvfrom", "-o", str(trace),
        PY, "-m", "gputray.gui.entry", "daemon", "--demo", "--log-level", "WARNING",
    ]  # fmt: skip
    env = {**os.environ, "GPUTRAY_HOME": str(home)}
    env.pop(NO_FSYNC_VAR, None)
    with (tmp_path / "stderr.txt").open("w") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:

        def ready() -> bool:
            assert proc.poll() is None, (tmp_path / "stderr.txt").read_text()
            try:
                return bool(ipc.ask(paths, rq.Ping()).ready)
            except ipc.IpcError:
                return False

        wait_for(ready, 120, "the daemon under strace")
        with ipc.IpcClient(paths, timeout_s=60) as client:
            client.ask(rq.Pause(device=None))
            acked = [
                client.ask(rq.Run(argv=[PY, "-c", "pass"], name=f"durable {i}")).tasks[0].id
                for i in range(20)
            ]
            client.ask(rq.Shutdown())
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    replies, syncs = _synced_replies(trace.read_text(errors="replace"), str(paths.queue_db))
    assert syncs >= 20, f"only {syncs} syncs of the queue's files during 20 acknowledged submits"
    assert set(acked) <= set(replies), "every reply was seen in the trace"
    assert [i for i in acked if not replies[i]] == [], "replied before the WAL was synced"
