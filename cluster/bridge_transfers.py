"""The bridge's transfers room: sending a placed task and its inputs to the machine it goes to (Ray's
object store, in chunks), following its state and log there into the local row and log, and fetching
its results and log back beside its input when it ends.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, cast

import msgspec

from gputray.cluster import bridge_base
from gputray.cluster.bridge_base import (
    CALL_TIMEOUT_S,
    IN_FLIGHT_CHUNKS,
    BridgeBase,
    _short,
    log,
)
from gputray.cluster.config import (
    CHUNK_BYTES,
)
from gputray.cluster.placer import handed_prefs
from gputray.cluster.staging import TransferRefused, check_size, plan_inputs, staged_spec
from gputray.cluster.wire import TaskChunk, qualified, split_qualified
from gputray.scheduler.client import connection as ipc
from gputray.scheduler.cluster_port import reasons as c
from gputray.scheduler.cluster_port import steps
from gputray.scheduler.cluster_port.records import FINISHED_STATES, TaskRecord
from gputray.scheduler.cluster_port.shared import free_out_path


class Transfers(BridgeBase):
    """Sending, following, fetching; see the module docstring."""

    def _send(self, rec: TaskRecord) -> None:
        machine = str(rec.machine)
        handle = self.handle_for(machine)
        if handle is None:
            return  # not reachable now; _judge_lost decides when it has left
        ray = bridge_base.ray()
        origin = self._origin(rec)
        try:
            plan = plan_inputs(rec.spec, self.config)
            if not plan.shared_in_place:
                check_size(plan, self.config, machine)
        except TransferRefused as exc:
            self._step(rec, steps.HandOverFailed(reason=c.Said(text=str(exc)), ended_at=time.time()))
            return
        try:
            staging = ray.get(handle.staging_dir.remote(origin), timeout=CALL_TIMEOUT_S)
            for f in plan.files:
                self._send_file(handle, origin, f.source, f.rel)
            spec = staged_spec(rec.spec, plan, staging)
            _, device_key = split_qualified(rec.device or "")
            spec = spec.replace(
                device_prefs=handed_prefs(rec.spec.device_prefs, machine, device_key)
                if device_key
                else spec.device_prefs,
                machine=None,
                origin=origin,
                base_env=None,  # the submitter's shell environment stays here: the task's [env] goes
                after=(),  # met here before it was placed; the ids are ours, not the target's
                after_any=False,
            )
            remote = ray.get(
                handle.submit.remote(origin, spec.plain(), [f.rel for f in plan.files]),
                timeout=CALL_TIMEOUT_S,
            )
        except Exception as exc:
            refusal = _refusal(exc)
            if refusal is not None:  # the other machine's queue refused it (a program it lacks ...)
                refused = c.RefusedBy(machine=machine, refusal=refusal)
                failed = steps.HandOverFailed(reason=refused, ended_at=time.time())
                self._step(rec, failed)
            else:
                log.warning("sending task #%d to %s failed: %s", rec.id, machine, _short(exc))
            return
        log_path = self.paths.logs_dir / f"task-{rec.id}.log"
        self.paths.logs_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.close(fd)
        self._step(
            rec,
            steps.Handed(
                remote_id=remote.id,
                remote_state=remote.state,
                log_path=str(log_path),
                reason=c.HandedTo(machine=machine, remote_id=remote.id),
            ),
        )
        log.info("task #%d handed to %s as #%s", rec.id, machine, remote.id)

    def _send_file(self, handle: Any, origin: str, source: str, rel: str) -> None:
        ray = bridge_base.ray()
        pending: list[Any] = []
        with open(source, "rb") as f:
            offset = 0
            while True:
                data = f.read(CHUNK_BYTES)
                if not data and offset:
                    break
                pending.append(handle.put_chunk.remote(origin, rel, offset, ray.put(data)))
                offset += len(data)
                if len(pending) >= IN_FLIGHT_CHUNKS:
                    done, pending = ray.wait(pending, num_returns=1, timeout=CALL_TIMEOUT_S)
                    ray.get(done)
                if not data:
                    break
        ray.get(pending, timeout=CALL_TIMEOUT_S)

    def _follow(self, rec: TaskRecord) -> None:
        machine = str(rec.machine)
        handle = self.handle_for(machine)
        if handle is None or rec.remote_id is None:
            return
        ray = bridge_base.ray()
        log_path = Path(rec.log_path) if rec.log_path else self.paths.logs_dir / f"task-{rec.id}.log"
        try:
            local_size = log_path.stat().st_size
        except FileNotFoundError:
            local_size = 0
        offset = local_size - _header_growth(rec, log_path) if local_size else 0
        try:
            info = ray.get(handle.task.remote(rec.remote_id, offset), timeout=CALL_TIMEOUT_S)
        except Exception as exc:
            log.info("task #%d on %s: no answer (%s)", rec.id, machine, _short(exc))
            return
        if not isinstance(info, TaskChunk):  # an agent of another gputray version (a dict, ISO times)
            self._note_other_version(machine, "its tasks come in another version's shape")
            return
        t = info.task
        data = info.log
        if offset == 0:
            data = _with_local_id(data, rec)
        if data:
            with open(log_path, "ab") as f:
                f.write(data)
        remote_state = t.state
        log_complete = offset + len(info.log) >= info.log_size
        remote_done = remote_state in FINISHED_STATES
        if rec.finished:  # cancelled (or failed) here while it still ran there
            key = (machine, rec.remote_id)
            if not remote_done and key not in self._cancel_sent:
                self._cancel_sent.add(key)
                with contextlib.suppress(Exception):
                    ray.get(handle.cancel.remote(rec.remote_id), timeout=CALL_TIMEOUT_S)
            if remote_done and log_complete:
                self._fetch(rec, handle)
                self._step(rec, steps.RemoteMark(remote_state="fetched"))
            elif remote_state != rec.remote_state:
                self._step(rec, steps.RemoteMark(remote_state=remote_state))
            return
        if remote_done and not log_complete:
            return  # the rest of the log first: `logs --follow` stops at the final state
        reason = c.OnMachine(machine=machine, remote_id=rec.remote_id, why=t.reason)
        device = qualified(machine, t.device) if t.device else msgspec.UNSET
        run: steps.RemoteRun
        if remote_state == "running":
            run = steps.RemoteRun(
                into="running",
                remote_state=remote_state,
                started_at=t.started_at,
                device=device,
                reason=reason,
            )
        elif remote_done:
            self._fetch(rec, handle)
            run = steps.RemoteRun(
                into=cast(steps.RemoteState, remote_state),
                remote_state="fetched",
                exit_code=t.exit_code,
                ended_at=t.ended_at,
                energy_j=t.energy_j,  # measured there
                energy_shared=t.energy_shared,
                # a short job may end between two looks: it did start
                started_at=t.started_at if t.started_at is not None else msgspec.UNSET,
                device=device,
                reason=reason,
            )
        else:
            run = steps.RemoteRun(into="waiting", remote_state=remote_state, device=device, reason=reason)
        if any(getattr(rec, k) != v for k, v in run.columns(rec).items()):
            self._step(rec, run)

    def _mark_silent(self, rows: list[TaskRecord]) -> None:
        """A task on a machine whose gputray (or agent) stopped answering says so in its row here: it
        is not known to run any more. Its queue there keeps it; it is followed again once that machine
        answers, or follows its retry policy once the machine has left the cluster (``_judge_lost``)."""
        for r in rows:
            if r.finished or r.machine in (None, self.local) or not self.head_ok():
                continue
            with self.lock:
                m = self.machines.get(str(r.machine))
                silent_since = m.left_at if m is not None else None
            if silent_since is None:
                continue
            reason = c.Unanswered(machine=str(r.machine), remote_id=r.remote_id, since_s=silent_since)
            if r.reason != reason:
                self._step(r, steps.Note(reason=reason))

    def _fetch(self, rec: TaskRecord, handle: Any) -> None:
        """Results and the log, beside the input here; never over an existing file."""
        ray = bridge_base.ray()
        origin = self._origin(rec)
        plan = plan_inputs(rec.spec, self.config)
        base = Path(plan.base)
        notes = []
        if not plan.shared_in_place:
            for rel, size in ray.get(handle.outputs.remote(origin), timeout=CALL_TIMEOUT_S):
                (base / rel).parent.mkdir(parents=True, exist_ok=True)
                dest = Path(free_out_path(str(base / rel), set()))  # taken: created empty, exclusively
                part = dest.with_name(dest.name + ".gputray-part")
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
                with open(os.open(part, flags | getattr(os, "O_BINARY", 0), 0o666), "wb") as f:  # no link
                    offset = 0
                    while offset < size:
                        chunk = ray.get(
                            handle.read_chunk.remote(origin, rel, offset, CHUNK_BYTES), timeout=CALL_TIMEOUT_S
                        )
                        if not chunk:
                            break
                        f.write(chunk)
                        offset += len(chunk)
                os.replace(part, dest)
                notes.append(f"{rel} → {dest}")
        if rec.log_path and Path(rec.log_path).exists():
            first = rec.spec.script or (plan.files[0].source if plan.files else None)
            if first:  # beside the script or first input, named after it (`sub/x.py` → `sub/x.log`)
                beside = Path(os.path.abspath(Path(rec.spec.cwd or base) / first))
                dest_dir, stem = beside.parent, beside.stem
            else:  # no input: in the folder it was run from
                dest_dir, stem = base, f"task-{rec.id}"
            dest_log = Path(free_out_path(str(dest_dir / f"{stem}.log"), set()))
            with contextlib.suppress(OSError):
                dest_log.write_bytes(Path(rec.log_path).read_bytes())
                notes.append(f"log → {dest_log}")
        with contextlib.suppress(Exception):
            ray.get(handle.cleanup.remote(origin), timeout=CALL_TIMEOUT_S)
        if notes and rec.log_path:
            with open(rec.log_path, "a", encoding="utf-8") as f:
                f.write("".join(f"gputray: from {rec.machine}: {n}\n" for n in notes))


def _header_prefixes(rec: TaskRecord) -> tuple[bytes, bytes]:
    """The log header's start as the other machine writes it, and as this machine's log shows it."""
    there = f"=== gputray task #{rec.remote_id} ".encode()
    here = f"=== gputray task #{rec.id} (#{rec.remote_id} on {rec.machine}) ".encode()
    return there, here


def _with_local_id(data: bytes, rec: TaskRecord) -> bytes:
    """The log's first bytes with this machine's task id in its header (the id the user typed here)."""
    there, here = _header_prefixes(rec)
    return here + data[len(there) :] if data.startswith(there) else data


def _header_growth(rec: TaskRecord, log_path: Path) -> int:
    """How many more bytes the local log has than the remote one (its header names the local id)."""
    there, here = _header_prefixes(rec)
    try:
        with open(log_path, "rb") as f:
            head = f.read(len(here))
    except OSError:
        return 0
    return len(here) - len(there) if head == here else 0


def _refusal(exc: BaseException) -> str | None:
    """The owner's refusal inside a Ray error (the agent re-raises the owner's RemoteError)."""
    cause = getattr(exc, "cause", None) or exc.__cause__
    for e in (cause, exc):
        if isinstance(e, ipc.RemoteError):
            return e.message
    text = str(exc)
    if "RemoteError" in text:
        return text.rsplit("RemoteError:", 1)[-1].strip().splitlines()[0]
    return None
