"""Replies a fake owner (a plain handler given to ``ipc.IpcServer``) answers with: the real reply types,
carrying the request's arguments where a test checks that they arrived."""

from __future__ import annotations

from gputray.scheduler import protocol as rq
from gputray.scheduler import replies as rp
from gputray.scheduler.tasks.records import TaskSpec

PONG = rp.Pong(pid=0, protocol=rq.PROTOCOL_VERSION, demo=False, ready=True, started_at=None, address=None)
STATUS = rp.StatusReply(
    pid=0,
    demo=False,
    snapshot=None,
    devices=(),
    paused=rp.Paused(),
    counts={},
    monitor_failures=0,
    monitor_last_failure=None,
)


def echo_reply(req: rq.Request[rp.Reply]) -> rp.Reply:
    """ping and status: fixed answers; submit_files, cancel and move, get: their arguments echoed."""
    if isinstance(req, rq.Ping):
        return PONG
    if isinstance(req, rq.Status):
        return STATUS
    if isinstance(req, rq.SubmitFiles):
        return rp.Submitted(tasks=(), notes=tuple(rq.os_str(f) for f in req.files))
    if isinstance(req, rq.Cancel):
        return rp.TasksDone(tasks=(), errors=tuple(str(i) for i in req.ids))
    if isinstance(req, rq.Move):
        return rp.TaskReply(task=rp.TaskView(id=int(req.id), state="queued", priority=req.delta or 0))
    if isinstance(req, rq.Get):
        spec = TaskSpec(kind="command", name=f"task {req.id}", argv=("true",))
        return rp.TaskReply(task=rp.TaskView(id=int(req.id), state="queued"), spec=spec)
    raise NotImplementedError(req.op)
