"""The owner's answers to the requests about tasks: submit, run, list, look at, cancel, pause, move,
edit, remove, clean, wait for, and read the log of. ``Owner`` takes them in as the mixin ``TaskRequests``
(moved out of owner.py whole, so that the owner stays its wiring: start, stop, the other requests).

Also the refusals the owner answers with, and the small readers of a request's arguments (task ids,
paths against the caller's folder, the caller's environment)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import UNSET

from gputray.scheduler import protocol as rq
from gputray.scheduler import replies as rp
from gputray.scheduler.jobs.log_files import decode_utf8_prefix as _decode_utf8_prefix
from gputray.scheduler.jobs.log_files import read_log
from gputray.scheduler.queue.wait_book import States
from gputray.scheduler.reasons.refusals import NoSuchFiles, Refused
from gputray.scheduler.reasons.taskfile_codes import RunCommand, Submitted
from gputray.scheduler.tasks.records import TaskPatch, TaskRecord
from gputray.scheduler.tasks.taskfile import load_task_file, spec_from_patch

if TYPE_CHECKING:
    from gputray.scheduler.queue.job_pause import JobPauser
    from gputray.scheduler.queue.service import QueueService

LOG_CHUNK_MAX_BYTES = 128 * 1024  # JSON escaping can grow text ×6; stays under ipc.MAX_FRAME_BYTES


class OwnerRequestError(rq.Refusal, ValueError):
    """A request the owner understood but cannot do; the message is for the person who asked (English),
    ``said`` the same as a code where there is one (``reasons/refusals``), for the tray to word."""

    def __init__(self, said: Refused | str) -> None:
        from gputray.scheduler.reasons.render import render

        super().__init__(said if isinstance(said, str) else render(said))
        self.said: Refused | None = None if isinstance(said, str) else said


class OwnerStopping(OwnerRequestError):
    """The owner is shutting down; clients that keep watching treat this as the owner going away."""


def waited_reply(now: States) -> rp.Waited:
    """A ``wait``'s answer: the tasks as they are now (one removed meanwhile says so)."""
    tasks = tuple(
        rp.TaskView.of(r) if not isinstance(r, int) else rp.TaskView(id=r, state="removed") for r in now
    )
    return rp.Waited(
        tasks=tasks, done=all(t.state in ("succeeded", "failed", "cancelled", "removed") for t in tasks)
    )


def task_id_of(value: int | str, what: str = "task", listing: str = "gputray queue") -> int:
    if isinstance(value, int):
        return value
    text = value.strip().lstrip("#")
    if not text.isdigit():
        raise OwnerRequestError(f"{what} ids are whole numbers from 1, not {value!r}; see `{listing}`")
    return int(text)


def caller_path(path: str, cwd: str | None) -> Path:
    p = Path(path).expanduser()
    if not p.is_absolute():
        if not cwd:
            raise OwnerRequestError(f"{path}: a relative path needs the caller's working folder")
        p = Path(cwd) / p
    return p


def _with_caller_env(req: rq.Submit | rq.SubmitFiles | rq.Run) -> TaskPatch:
    """A request's task options, plus the environment the CLI sent (``caller_env``) as ``base_env``."""
    overrides = req.overrides or TaskPatch()
    if req.caller_env is not None:  # values that are not UTF-8 came as bytes: the job gets those bytes
        overrides = overrides.then(TaskPatch(base_env={k: rq.os_str(v) for k, v in req.caller_env.items()}))
    return overrides


def _cwd(value: str | rq.RawText | None) -> str | None:
    return None if value is None else rq.os_str(value)


class TaskRequests:
    """The ``_op_*`` handlers of the task requests; ``Owner`` is the one class that takes them in."""

    if TYPE_CHECKING:  # what the owner provides
        clock: Callable[[], float]
        files_opener: Callable[[list[str]], None] | None

        @property
        def queue(self) -> QueueService: ...

        @property
        def pauses(self) -> JobPauser: ...

        def _device_names(self) -> dict[str, str]: ...

    # QueueService.submit checks that the program, script and files exist (ToolNotFound, SubmitError).
    def _submitted(self, records: list[TaskRecord]) -> rp.Submitted:
        # A task for another machine (or any): its devices may be another machine's, the bridge places it.
        notes = [
            f"#{r.id}: {note}"
            for r in records
            if r.spec.machine is None
            for note in self.queue.absent_device_notes(r.spec)
        ]
        return rp.Submitted(tasks=rp.views(records), notes=tuple(notes))

    def _op_submit(self, req: rq.Submit) -> rp.Submitted:
        overrides = _with_caller_env(req)
        if req.task_file is not None:
            path = caller_path(rq.os_str(req.task_file), _cwd(req.cwd))
            spec = spec_from_patch(overrides, base=load_task_file(path), source=str(path))
        elif req.spec is not None:
            spec = spec_from_patch(req.spec.then(overrides), source=Submitted())
        else:
            raise OwnerRequestError("submit needs a task file or a task spec")
        if spec.cwd is None and req.cwd:  # no `cwd` key or --cwd: where the command was typed
            spec = spec_from_patch(TaskPatch(cwd=_cwd(req.cwd)), base=spec, source=Submitted())
        return self._submitted([self.queue.submit(spec)])

    def _op_submit_files(self, req: rq.SubmitFiles) -> rp.Submitted:
        files = [caller_path(rq.os_str(f), _cwd(req.cwd)) for f in req.files]
        overrides = _with_caller_env(req)
        if req.cwd and overrides.cwd is UNSET:  # the CLI's: jobs run where the command was typed
            overrides = overrides.then(TaskPatch(cwd=_cwd(req.cwd)))
        records = self.queue.submit_files(files, recipe=req.recipe, overrides=overrides)
        return self._submitted(list(records))

    def _op_open_files(self, req: rq.OpenFiles) -> rp.Submitted:
        """Files opened with gputray: to the tray's drop confirm when a tray owns the queue, else queued
        as ``submit_files`` would (recipe defaults). Missing files are refused before anything happens."""
        files = [caller_path(f, req.cwd) for f in req.files]
        opener = self.files_opener
        if opener is None:
            return self._op_submit_files(rq.SubmitFiles(files=[str(f) for f in files]))
        missing = [str(f) for f in files if not f.exists()]
        if missing:
            raise OwnerRequestError(NoSuchFiles(files=tuple(missing)))
        opener([str(f) for f in files])
        return rp.Submitted(tasks=(), handed_to="tray")

    def _op_run(self, req: rq.Run) -> rp.Submitted:
        command = TaskPatch(
            kind="command",
            argv=tuple(rq.os_str(a) for a in req.argv),
            cwd=_cwd(req.cwd) if req.cwd else UNSET,
            name=req.name or UNSET,
        )
        spec = spec_from_patch(command.then(_with_caller_env(req)), source=RunCommand())
        return self._submitted([self.queue.submit(spec)])

    def _op_queue(self, req: rq.Queue) -> rp.QueueReply:
        return rp.QueueReply(
            tasks=self.queue.estimates.views(
                self.queue.runs.with_energy_so_far(self.queue.list(include_finished=bool(req.all)))
            ),
            paused=self.queue.paused(),
            # device key → the name people know it by, for listings (the JSON keeps the key)
            device_names=self._device_names(),
            devices=self.queue.devices(),
        )

    def _op_get(self, req: rq.Get) -> rp.TaskReply:
        rec = self.queue.get(task_id_of(req.id))
        view = self.queue.estimates.with_progress(rp.TaskView.of(rec), rec, self.queue.clock())
        return rp.TaskReply(task=view, spec=rec.spec.plain(), pid=rec.pid)

    def _op_cancel(self, req: rq.Cancel) -> rp.TasksDone:
        done: list[TaskRecord] = []
        errors: list[str] = []
        refused: list[Refused] = []
        for raw in req.ids:
            try:
                done.append(self.queue.cancel(task_id_of(raw)))
            except rq.Refusal as exc:
                errors.append(str(exc))
                if (said := getattr(exc, "said", None)) is not None:
                    refused.append(said)
        return rp.TasksDone(tasks=rp.views(done), errors=tuple(errors), refused=tuple(refused))

    def _op_pause_job(self, req: rq.PauseJob) -> rp.TaskReply:
        return rp.TaskReply(task=rp.TaskView.of(self.pauses.pause(task_id_of(req.id))))

    def _op_resume_job(self, req: rq.ResumeJob) -> rp.TaskReply:
        return rp.TaskReply(task=rp.TaskView.of(self.pauses.resume(task_id_of(req.id))))

    def _op_retry(self, req: rq.Retry) -> rp.TaskReply:
        return rp.TaskReply(task=rp.TaskView.of(self.queue.retry(task_id_of(req.id))))

    def _op_move(self, req: rq.Move) -> rp.TaskReply:
        task_id = task_id_of(req.id)
        if req.delta is not None:
            return rp.TaskReply(task=rp.TaskView.of(self.queue.edits.move(task_id, req.delta)))
        moved = self.queue.edits.move_to(
            task_id,
            top=req.top,
            bottom=req.bottom,
            before=None if req.before is None else task_id_of(req.before),
            after=None if req.after is None else task_id_of(req.after),
        )
        return rp.TaskReply(task=rp.TaskView.of(moved))

    def _op_edit(self, req: rq.Edit) -> rp.TaskReply:
        return rp.TaskReply(task=rp.TaskView.of(self.queue.edits.edit(task_id_of(req.id), req.changes)))

    def _op_remove(self, req: rq.Remove) -> rp.TasksDone:
        ids: list[int] = []
        errors: list[str] = []
        for raw in req.ids:
            try:
                ids.append(task_id_of(raw))
            except rq.Refusal as exc:
                errors.append(str(exc))
        gone, refused = self.queue.edits.remove(ids, force=req.force)
        return rp.TasksDone(tasks=rp.views(gone), errors=(*errors, *refused))

    def _op_clean(self, req: rq.Clean) -> rp.Cleaned:
        from gputray.scheduler.tasks.records import FINISHED_STATES

        states = FINISHED_STATES if not req.states else frozenset(req.states)
        gone, kept = self.queue.edits.clean(older_than_s=req.older_than_s, keep=req.keep, states=states)
        if req.older_than_s is not None:  # the runtimes of job families not seen for as long go too
            self.queue.estimates.history.forget_unseen(self.clock() - req.older_than_s)
        return rp.Cleaned(tasks=rp.views(gone), kept=tuple(kept))

    def _op_wait(self, req: rq.WaitFor) -> rp.Waited:
        ids = [task_id_of(raw) for raw in req.ids]
        return waited_reply(self.queue.edits.wait_ended(ids, req.timeout_s))

    def _op_logs(self, req: rq.Logs) -> rp.LogChunk:
        rec = self.queue.get(task_id_of(req.id))
        offset = max(0, req.offset or 0)
        max_bytes = min(max(1, req.max_bytes or LOG_CHUNK_MAX_BYTES), LOG_CHUNK_MAX_BYTES)
        text, next_offset, size = "", offset, 0
        if rec.log_path:  # a FIFO, a link, /dev/zero in its place: refused, never waited on or followed
            data, size = read_log(rec.log_path, offset, max_bytes)
            # The last chunk there will be: the log of an ended task read to its end, or a read that
            # stops where the client said it stops (`logs` without --follow). A cut sequence is then
            # U+FFFD, as the offline reader prints it, not left for a read that never comes.
            ended = rec.finished and offset + len(data) >= size
            bounded = req.max_bytes is not None and len(data) == req.max_bytes <= LOG_CHUNK_MAX_BYTES
            text, used = _decode_utf8_prefix(data, final=ended or bounded)
            # past the end: a retry cut what the earlier attempts left (``job_log.make_room``); a
            # follower goes on from the end as it is now
            next_offset = offset + used if offset <= size else size
        return rp.LogChunk(
            id=rec.id,
            state=rec.state,
            log_path=rec.log_path,
            text=text,
            offset=next_offset,
            size=size,
            finished=rec.finished,
        )
