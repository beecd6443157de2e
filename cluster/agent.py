"""The agent: one Ray actor per machine, pinned to that machine's Ray node, that only forwards to the
machine's own gputray owner over its local socket. It holds no queue: a task sent here goes into the
owner's durable queue (``cluster_submit``), and state, log and results are read from there.

This module does not import Ray: the bridge wraps ``Agent`` with ``ray.remote`` (the actor runs in a
Ray worker process on this machine, started by the machine's raylet as the same user).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from gputray.cluster.staging import list_outputs, safe_rel, write_manifest
from gputray.cluster.view import local_view
from gputray.cluster.wire import TaskChunk
from gputray.scheduler.client import connection as ipc
from gputray.scheduler.client import requests as rq
from gputray.scheduler.client.connection import Paths
from gputray.scheduler.client.replies import TasksDone, TaskView
from gputray.scheduler.client.requests import R
from gputray.scheduler.cluster_port.reasons import Reason
from gputray.scheduler.cluster_port.records import TaskRecord, TaskSpec
from gputray.scheduler.cluster_port.shared import LogNotReadable, read_log

LOG_CHUNK_BYTES = 1 << 20


def inbox_dir(paths: Paths) -> Path:
    return paths.data_dir / "cluster" / "inbox"


def staging_key(origin: str) -> str:
    """A folder name for one origin (``desk#12.1`` → ``desk_12.1``)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in origin)[:120]


class Agent:
    def __init__(self, machine: str, dirs: dict[str, str], gputray_home: str | None) -> None:
        if gputray_home:
            os.environ["GPUTRAY_HOME"] = gputray_home  # the doctor's cache and envs, as the owner sees them
        self.machine = machine
        self.paths = Paths(
            Path(dirs["config_dir"]),
            Path(dirs["data_dir"]),
            Path(dirs["state_dir"]),
            Path(dirs["runtime_dir"]),
        )
        self._client = ipc.IpcClient(self.paths, timeout_s=30.0)

    def _ask(self, request: rq.Request[R]) -> R:
        try:
            return self._client.ask(request)
        except ipc.IpcError:
            self._client.close()  # one retry on a fresh connection (the owner may have restarted)
            return self._client.ask(request)

    def ping(self) -> int:
        """This agent's process id (the bridge's own agent: the same version as the bridge)."""
        return os.getpid()

    def view(self) -> bytes:
        """This machine's view, stamped with its wire version (``MachineView.to_wire``)."""
        return local_view(self._client, self.machine).to_wire()

    # --- inputs ------------------------------------------------------------------------------------

    def _staging(self, key: str) -> Path:
        return inbox_dir(self.paths) / staging_key(key)

    def staging_dir(self, key: str) -> str:
        return str(self._staging(key))

    def put_chunk(self, key: str, rel: str, offset: int, data: bytes) -> int:
        path = self._staging(key) / safe_rel(rel)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.lseek(fd, offset, os.SEEK_SET)
            os.write(fd, data)
        finally:
            os.close(fd)
        return len(data)

    def submit(self, origin: str, spec: TaskSpec, staged: list[str]) -> TaskRecord | None:
        staging = self._staging(origin)
        staging.mkdir(parents=True, exist_ok=True, mode=0o700)  # the job's working folder, inputs or not
        if staged:
            write_manifest(staging, staged)
        return self._ask(rq.ClusterSubmit(origin=origin, spec=spec)).task

    # --- state, log, results -----------------------------------------------------------------------

    def task(self, task_id: int, log_offset: int) -> TaskChunk:
        """The task and its log's raw bytes from ``log_offset`` (at most 1 MiB)."""
        task: TaskView = self._ask(rq.Get(id=task_id)).task
        data = b""
        size = 0
        if task.log_path:  # a FIFO or a link the job put in its place: refused, never waited on
            with contextlib.suppress(LogNotReadable):
                data, size = read_log(task.log_path, log_offset, LOG_CHUNK_BYTES)
        return TaskChunk(task=task, log=data, log_size=size)

    def outputs(self, key: str) -> list[tuple[str, int]]:
        staging = self._staging(key)
        return list_outputs(staging) if staging.is_dir() else []

    def read_chunk(self, key: str, rel: str, offset: int, size: int) -> bytes:
        with open(self._staging(key) / safe_rel(rel), "rb") as f:
            f.seek(offset)
            return f.read(size)

    def withdraw(self, task_id: int, origin: str, reason: Reason) -> TaskRecord | None:
        """Take back the copy ``origin`` handed here as ``task_id`` if it has not started here: the
        cancelled record, or None when it started first (it then runs here, and only here)."""
        return self._ask(rq.ClusterWithdraw(id=task_id, origin=origin, reason=reason)).task

    def cancel(self, task_id: int) -> TasksDone:
        return self._ask(rq.Cancel(ids=[task_id]))

    def cleanup(self, key: str) -> None:
        shutil.rmtree(self._staging(key), ignore_errors=True)
