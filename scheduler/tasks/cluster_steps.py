"""The steps of a task the cluster places or another machine runs: the bridge sends these to the owner
(``protocol.ClusterUpdate``, ``ClusterStep``), the owner's link checks what the cluster may do to the
row, and the store writes them as it writes every step (``lifecycle``: the table, ``check``, ``Step``).
A task handed elsewhere moves ``HandOver`` (being sent) → ``Handed`` (its id there) → ``RemoteRun``
(what it does there; ``RemoteMark`` the bookkeeping) → back with ``TakeBack`` or ``LostThere``.
"""

from __future__ import annotations

from typing import Literal

from msgspec import UNSET, UnsetType

from gputray.scheduler.reasons.codes import Reason
from gputray.scheduler.tasks.lifecycle import (
    ANY_STATE,
    PENDING,
    Columns,
    Count,
    ExitCode,
    Fail,
    Id,
    Joules,
    Note,
    Row,
    Seconds,
    Step,
    TaskState,
    Text,
    Wait,
    retries_left,
    retry_columns,
)


class PlaceHere(Step, frozen=True, tag="place_here"):
    """A task for any machine is placed on this one: this queue starts it."""

    SOURCES = PENDING
    machine: Text

    def columns(self, row: Row) -> Columns:
        return {"machine": self.machine}


class HandOver(Step, frozen=True, tag="hand_over"):
    """Handed to ``machine`` (being sent). ``to``: the pending state it is written in (the other one
    than a local start would expect makes that start lose its compare-and-set); ``attempts``: a new
    attempt (None: the same one, handed on); ``again``: it was on another machine before."""

    SOURCES = PENDING
    machine: Text
    device: Text
    reason: Reason
    into: Literal["queued", "waiting"]
    attempts: Count | None = None
    again: bool = False

    def to(self, row: Row) -> TaskState:
        return self.into

    def columns(self, row: Row) -> Columns:
        cols: Columns = {"machine": self.machine}
        if self.again:
            cols["remote_id"] = None
        cols.update(remote_state="sending", device=self.device)
        if self.attempts is not None:
            cols["attempts"] = self.attempts
        cols.update(state=self.into, reason=self.reason)
        return cols


class Handed(Step, frozen=True, tag="handed"):
    """The other machine's queue took it, as its ``remote_id``."""

    SOURCES = PENDING
    remote_id: Id
    remote_state: Text
    log_path: Text
    reason: Reason

    def columns(self, row: Row) -> Columns:
        return {
            "remote_id": self.remote_id,
            "remote_state": self.remote_state,
            "log_path": self.log_path,
            "reason": self.reason,
        }


class TakeBack(Step, frozen=True, tag="take_back"):
    """Withdrawn from the machine it waited on before it started there (no attempt was made): queued
    here again, placed afresh (``machine`` None) or for this machine's queue."""

    SOURCES = PENDING
    machine: Text | None
    reason: Reason
    attempts: Count

    def to(self, row: Row) -> TaskState:
        return "queued"

    def columns(self, row: Row) -> Columns:
        return {
            "machine": self.machine,
            "remote_id": None,
            "remote_state": None,
            "device": None,
            "attempts": self.attempts,
            "state": "queued",
            "reason": self.reason,
        }


class HandOverFailed(Step, frozen=True, tag="hand_over_failed"):
    """It could not be sent, or the other machine's queue refused it: failed."""

    SOURCES = PENDING
    reason: Reason
    ended_at: Seconds

    def to(self, row: Row) -> TaskState:
        return "failed"

    def columns(self, row: Row) -> Columns:
        return {"state": "failed", "reason": self.reason, "ended_at": self.ended_at, "remote_state": "lost"}


RemoteState = Literal["waiting", "running", "succeeded", "failed", "cancelled"]


class RemoteRun(Step, frozen=True, tag="remote_run"):
    """What its run on the other machine did, mirrored here (``into``), with the fields seen there."""

    SOURCES = frozenset({"queued", "waiting", "running"})
    into: RemoteState
    remote_state: Text
    reason: Reason
    device: Text | UnsetType = UNSET
    started_at: Seconds | UnsetType | None = UNSET
    exit_code: ExitCode | UnsetType | None = UNSET
    ended_at: Seconds | UnsetType | None = UNSET
    energy_j: Joules | UnsetType | None = UNSET
    energy_shared: bool | UnsetType = UNSET

    def to(self, row: Row) -> TaskState:
        return self.into

    def columns(self, row: Row) -> Columns:
        cols: Columns = {"remote_state": self.remote_state, "state": self.into}
        for name in ("started_at", "exit_code", "ended_at", "energy_j", "energy_shared", "device"):
            value = getattr(self, name)
            if value is not UNSET:
                cols[name] = value
        cols["reason"] = self.reason
        return cols


class RemoteMark(Step, frozen=True, tag="remote_mark"):
    """Bookkeeping only: the last state seen there, ``fetched`` (results back), ``lost``."""

    SOURCES = ANY_STATE
    remote_state: Text

    def columns(self, row: Row) -> Columns:
        return {"remote_state": self.remote_state}


class LostThere(Step, frozen=True, tag="lost_there"):
    """The machine it was handed to left the cluster: the retry policy decides (placed afresh while
    retries remain, else failed and its copy there given up)."""

    SOURCES = frozenset({"queued", "waiting", "running", "interrupted"})
    why: Reason
    now: Seconds

    def to(self, row: Row) -> TaskState:
        return "queued" if retries_left(row) else "failed"

    def columns(self, row: Row) -> Columns:
        also: Columns = (
            {"machine": None, "remote_id": None, "remote_state": None, "device": None}
            if retries_left(row)
            else {"remote_state": "lost"}
        )
        return retry_columns(row, self.why, self.now, {"ended_at": self.now, **also})


#: The steps the cluster's bridge may send (``protocol.ClusterUpdate``).
ClusterStep = (
    PlaceHere
    | HandOver
    | Handed
    | TakeBack
    | HandOverFailed
    | RemoteRun
    | RemoteMark
    | LostThere
    | Wait
    | Fail
    | Note
)
