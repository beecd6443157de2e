"""The owner's protocol: one typed request per op, shared by the CLI, the tray (in-process) and the server.

On the wire a request is ``{"op": NAME, "args": {...}, "v": PROTOCOL_VERSION}`` (see ``ipc`` for the
frames). ``decode_request`` turns one into the op's Struct, or raises ``BadRequest``; ``checked``
does the same for a Struct built in-process (the tray), so both paths see the same limits. The limits
live on the types (``Meta``): strings, lists and tables are bounded, ids are whole numbers or short
text, numbers are finite. The limits on task values (times within the years 1970–9999, durations up
to 10 years, sizes up to 1 PiB) are here too, and ``taskfile`` applies them to every task key.

A handler's exception that a user caused (a missing file, a task id that does not exist, a bad task
file) derives from ``Refusal``: its message is the answer. Anything else is a bug in the owner, logged
with its traceback and answered as an internal error.

To add an op: a Struct here, ``class Name(Request[NameReply])`` with ``op = "name"`` (fields = its
arguments, defaults for optional ones), its reply type in ``replies`` (or one an op of the same answer
uses), and a handler ``Owner._op_<name>(req)`` in ``owner.py`` (the owner checks at
start that every request type has one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, ClassVar, Generic, Literal, TypeVar, cast, get_args

import msgspec
from msgspec import Meta

from gputray.scheduler import replies as rp
from gputray.scheduler.lazy_import import lazy_module
from gputray.scheduler.tasks.limits import (  # the limits of task values live with the task model
    MAX_DURATION_S,
    MAX_EPOCH_S,
    MAX_RETRIES,
    MAX_SIZE_BYTES,
    MAX_TASK_ID,
    MIN_EPOCH_S,
    check_duration_s,
    check_epoch_s,
    check_size_bytes,
)

# Named in annotations only, resolved when a request of theirs is first encoded or decoded: a command
# that sends none (``gputray queue``) never loads the task model (``lazy_import``).
if TYPE_CHECKING:
    from gputray.scheduler import cluster_records
    from gputray.scheduler.reasons import codes as reason_codes
    from gputray.scheduler.tasks import cluster_steps as task_steps
    from gputray.scheduler.tasks import records as task_records
else:
    cluster_records = lazy_module("gputray.scheduler.cluster_records")
    reason_codes = lazy_module("gputray.scheduler.reasons.codes")
    task_steps = lazy_module("gputray.scheduler.tasks.cluster_steps")
    task_records = lazy_module("gputray.scheduler.tasks.records")

__all__ = [  # re-exported: the limits every request field shares
    "MAX_DURATION_S",
    "MAX_EPOCH_S",
    "MAX_RETRIES",
    "MAX_SIZE_BYTES",
    "MIN_EPOCH_S",
    "check_duration_s",
    "check_epoch_s",
    "check_size_bytes",
]

# 2: typed replies, task times as epoch seconds (1 sent ISO 8601 strings): an owner and a client of
# different versions refuse each other before acting, not after (a `run` done but reported failed).
# 3: a task's options, an edit's changes and a cluster hand-over are TaskPatch/TaskSpec fields (field
# names, values in seconds and bytes), not task-file tables.
# 4: ``status`` sends the monitor's typed Snapshot, ``schedule_*`` typed ScheduleViews.
# 5: the cluster's report (``cluster_sync``) and status document (``status``'s ``cluster``) are typed
# (``cluster_records``), a device's readings the monitor's Sample.
# 6: ``cluster_update`` carries one lifecycle step (``tasks/lifecycle.py``) in place of a bag of
# fields, and the cluster-only ops the owner's secret for its bridge.
# 7: a task's reason (``TaskView.reason``, a lifecycle step's) is a typed code (``reasons.codes``), a
# device verdict's reasons the monitor's ``busy_why`` codes; both sides word them.
# 8: a device's ``Sample.reason`` and the backends' ``Snapshot.notes`` are ``busy_why`` codes too (a
# backend's own words were English text inside the tray's Japanese).
PROTOCOL_VERSION = 8
MAX_STR_CHARS = 32_768
MAX_LIST_ITEMS = 10_000
MAX_TABLE_KEYS = 4_096
MAX_ID = MAX_TASK_ID


class Refusal(Exception):
    """Something a user asked for that cannot be done; ``str()`` says why, in words they can act on."""


class BadRequest(Refusal):
    """A request that fails validation; the reply carries this message."""


class VersionMismatch(BadRequest):
    def __init__(self, theirs: object) -> None:
        super().__init__(
            f"this gputray talks protocol {theirs!r} to an owner that talks {PROTOCOL_VERSION}: "
            "restart the owner (quit the tray, or `gputray daemon --stop` then `gputray daemon`)"
        )


Str = Annotated[str, Meta(max_length=MAX_STR_CHARS, pattern=r"^[^\x00]*$")]
Name = Annotated[str, Meta(max_length=4_096, pattern=r"^[^\x00]*$")]
StrList = Annotated[list[Str], Meta(min_length=1, max_length=MAX_LIST_ITEMS)]
TaskId = Annotated[int, Meta(ge=0, le=MAX_ID)] | Annotated[str, Meta(min_length=1, max_length=64)]
Int = Annotated[int, Meta(ge=-(2**53), le=2**53)]
Float = Annotated[float, Meta(ge=-1e300, le=1e300)]  # finite: NaN fails every comparison
MAX_ENV_VALUE_CHARS = 131_072  # Linux refuses a single environment string over 128 KiB (MAX_ARG_STRLEN)


class RawText(msgspec.Struct, forbid_unknown_fields=True):
    """Text that is not UTF-8 (a file name or a variable in another encoding, as POSIX allows): its
    bytes in base64, so that they reach the job unchanged. ``os_str`` turns it back into the str Python
    uses for such bytes (surrogate escapes); ``wire_str`` makes one on the client."""

    b64: Annotated[str, Meta(max_length=MAX_ENV_VALUE_CHARS * 2, pattern=r"^[A-Za-z0-9+/=]*$")]


EnvValue = Annotated[str, Meta(max_length=MAX_ENV_VALUE_CHARS, pattern=r"^[^\x00]*$")]
OsStr = Str | RawText
Env = Annotated[dict[Name, EnvValue | RawText], Meta(max_length=MAX_TABLE_KEYS)]


def wire_str(text: str) -> str | RawText:
    """``text`` as it can travel as JSON: itself, or its OS bytes in base64 when it is not UTF-8."""
    import base64
    import os

    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return RawText(b64=base64.b64encode(os.fsencode(text)).decode("ascii"))


def os_str(value: str | RawText) -> str:
    """The str for a wire value: text as is; a RawText's bytes as the OS decodes them (surrogate
    escapes for what is not UTF-8: ``os.fsencode`` gives the same bytes back)."""
    if isinstance(value, RawText):
        import base64
        import binascii
        import os

        try:
            text = os.fsdecode(base64.b64decode(value.b64, validate=True))
        except (binascii.Error, ValueError):
            raise BadRequest("a RawText value is not valid base64") from None
        if "\x00" in text:  # the OS takes no NUL in an argument, a path or a variable: refuse it now
            raise BadRequest(
                "an argument, path or variable holds a NUL byte, which no program can be given; "
                "nothing was queued"
            )
        return text
    return value


R = TypeVar("R", bound=rp.Reply)
Reply_co = TypeVar("Reply_co", bound=rp.Reply, covariant=True)


class Request(
    msgspec.Struct, Generic[Reply_co], kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """Base of every request; ``op`` is its name on the wire, ``R`` the type of its reply."""

    op: ClassVar[str] = ""


class Ping(Request[rp.Pong]):
    op = "ping"


class Status(Request[rp.StatusReply]):
    op = "status"
    cluster: bool = False  # add every machine's view (the cluster link's document)


class Submit(Request[rp.Submitted]):
    op = "submit"
    task_file: OsStr | None = None
    spec: task_records.TaskPatch | None = None  # a whole task, when there is no task file
    overrides: task_records.TaskPatch | None = None
    cwd: OsStr | None = None
    caller_env: Env | None = None  # the CLI's os.environ: the job starts from it


class SubmitFiles(Request[rp.Submitted]):
    op = "submit_files"
    files: Annotated[list[OsStr], Meta(min_length=1, max_length=MAX_LIST_ITEMS)]
    recipe: Str | None = None
    overrides: task_records.TaskPatch | None = None
    cwd: OsStr | None = None
    caller_env: Env | None = None


class OpenFiles(Request[rp.Submitted]):
    """ "Open with", "Send To", a second launch: like a drop on the running app."""

    op = "open_files"
    files: StrList
    cwd: Str | None = None


class Run(Request[rp.Submitted]):
    op = "run"
    argv: Annotated[list[OsStr], Meta(min_length=1, max_length=MAX_LIST_ITEMS)]
    name: Str | None = None
    overrides: task_records.TaskPatch | None = None
    cwd: OsStr | None = None
    caller_env: Env | None = None


class Queue(Request[rp.QueueReply]):
    op = "queue"
    all: bool | None = None


class Get(Request[rp.TaskReply]):
    op = "get"
    id: TaskId


class Cancel(Request[rp.TasksDone]):
    op = "cancel"
    ids: Annotated[list[TaskId], Meta(min_length=1, max_length=MAX_LIST_ITEMS)]


class Retry(Request[rp.TaskReply]):
    op = "retry"
    id: TaskId


class Move(Request[rp.TaskReply]):
    """By ``delta`` places (the panel's ▲▼), or ``top``/``bottom``/``before``/``after`` another task."""

    op = "move"
    id: TaskId
    delta: Int | None = None
    top: bool = False
    bottom: bool = False
    before: TaskId | None = None
    after: TaskId | None = None


class Edit(Request[rp.TaskReply]):
    """Change a task that has not started: the fields ``changes`` sets (``priority``, ``device_prefs`` …)."""

    op = "edit"
    id: TaskId
    changes: task_records.TaskPatch


class Remove(Request[rp.TasksDone]):
    op = "remove"
    ids: Annotated[list[TaskId], Meta(min_length=1, max_length=MAX_LIST_ITEMS)]
    force: bool = False


class Clean(Request[rp.Cleaned]):
    op = "clean"
    older_than_s: Annotated[float, Meta(ge=0, le=MAX_DURATION_S)] | None = None
    keep: Annotated[int, Meta(ge=0, le=10_000_000)] | None = None  # the newest this many stay
    states: Annotated[list[Annotated[str, Meta(max_length=32)]], Meta(max_length=16)] | None = None


class WaitFor(Request[rp.Waited]):
    """Answered when every task has ended, or after ``timeout_s`` (then ``done`` is false: ask again)."""

    op = "wait"
    ids: Annotated[list[TaskId], Meta(min_length=1, max_length=MAX_LIST_ITEMS)]
    timeout_s: Annotated[float, Meta(ge=0, le=60)] = 10.0


class Pause(Request[rp.PausedReply]):
    op = "pause"
    device: Str | None = None


class Resume(Request[rp.PausedReply]):
    op = "resume"
    device: Str | None = None


class PauseJob(Request[rp.TaskReply]):
    """Freeze one running job (``gputray pause-job``); not ``Pause``, which holds the whole queue back."""

    op = "pause_job"
    id: TaskId


class ResumeJob(Request[rp.TaskReply]):
    op = "resume_job"
    id: TaskId


class Logs(Request[rp.LogChunk]):
    op = "logs"
    id: TaskId
    offset: Int | None = None
    max_bytes: Int | None = None


class ScheduleAdd(Request[rp.Schedules]):
    op = "schedule_add"
    cron: Str
    task_file: Str
    overrides: task_records.TaskPatch | None = None
    name: Str | None = None
    cwd: Str | None = None


class ScheduleList(Request[rp.Schedules]):
    op = "schedule_list"


class ScheduleRemove(Request[rp.Schedules]):
    op = "schedule_remove"
    id: TaskId


class FreeResident(Request[rp.RoomMade]):
    """Ask a resident (an LLM server, ComfyUI) to let go of its GPU memory (``gputray free-resident``,
    the tray's "Free" button): through its own API, never if it is serving a request."""

    op = "free_resident"
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    # the waiting task it is freed for (the tray's question was about it); None: whichever task asked
    task: Annotated[int, Meta(ge=0, le=MAX_ID)] | None = None


class Room(Request[rp.RoomReply]):
    """What the tray shows of making room, asked at each of its snapshots (cheap: nothing is read from
    the store): the residents, the GPUs an exclusive app has taken, and the "ask" questions standing."""

    op = "room"


class Shutdown(Request[rp.Stopping]):
    op = "shutdown"
    jobs: Literal["keep", "stop"] | None = (
        None  # running jobs: run on (the next owner records them) or stop; None: stop
    )


class CheckEnvs(Request[rp.Checking]):
    """Check the configured Python envs on every device in the background (``envs add`` asks it)."""

    op = "check_envs"


class ClusterSync(Request[rp.ClusterSynced]):
    """The cluster bridge beside this owner: its report (every machine's view) in,
    the tasks that concern the cluster out; long-polled for up to ``wait_ms``."""

    op = "cluster_sync"
    report: cluster_records.ClusterReport | None = None
    wait_ms: Int | None = None
    bridge_key: BridgeKey = ""


#: The secret this owner starts its cluster bridge with (``GPUTRAY_BRIDGE_KEY``): the cluster-only ops
#: carry it, so a plain client cannot requeue or finish a task (``cluster.link``).
BridgeKey = Annotated[str, Meta(max_length=128)]


class ClusterUpdate(Request[rp.ClusterTask]):
    """The bridge: one lifecycle step (``tasks/cluster_steps.py``: ``ClusterStep``) of a task the cluster
    places or another machine runs; with ``expect_state``, only while the task is still in that state
    (the reply's ``task`` is None and ``now`` says what it is when it was not)."""

    op = "cluster_update"
    id: TaskId
    step: task_steps.ClusterStep
    expect_state: Str | None = None
    bridge_key: BridgeKey = ""


class ClusterSubmit(Request[rp.ClusterTask]):
    """This machine's agent: a task another machine hands here; ``origin`` (``desk#12.1``) makes a
    second hand-over of the same attempt a no-op."""

    op = "cluster_submit"
    origin: Annotated[str, Meta(min_length=1, max_length=256, pattern=r"^[^\x00]*$")]
    spec: task_records.TaskSpec


class ClusterWithdraw(Request[rp.ClusterTask]):
    """This machine's agent: take back the task another machine handed here (``origin`` names that
    hand-over) if it has not started here; compare-and-set under the queue's lock, so a start that came
    first wins (the reply's ``task`` is None and ``now`` says what it is) and nothing runs twice."""

    op = "cluster_withdraw"
    id: TaskId
    origin: Annotated[str, Meta(min_length=1, max_length=256, pattern=r"^[^\x00]*$")]
    reason: reason_codes.Reason


#: A request of whichever op: each is a ``Request[ItsReply]``, and every reply is a ``Reply``.
OpRequest = Request[rp.Reply]
REQUEST_TYPES: dict[str, type[OpRequest]] = {t.op: t for t in Request.__subclasses__()}
REPLY_TYPES: dict[str, type[rp.Reply]] = {  # R of each `class Name(Request[R])`
    t.op: get_args(t.__orig_bases__[0])[0]  # type: ignore[attr-defined]
    for t in REQUEST_TYPES.values()
}
OPS = frozenset(REQUEST_TYPES)


def reply_type(request: Request[R]) -> type[R]:
    """The type of the reply to ``request``: the ``R`` of its ``class Name(Request[R])``."""
    return cast("type[R]", REPLY_TYPES[request.op])


class _Envelope(msgspec.Struct, forbid_unknown_fields=True):
    op: Annotated[str, Meta(max_length=64)]
    args: dict[str, object] | None = None  # plain JSON, until ``op`` says which Struct it is
    v: int | None = None


#: What a pattern on a text field asks, in words (the regex itself is no answer for a person).
_PATTERN_WORDS = {
    r"^[^\x00]*$": "text with no NUL character",
    r"^[^\x00]*[^\x00\s][^\x00]*$": "text that is not blank, with no NUL character",
}


def _refuse(exc: msgspec.ValidationError, op: str) -> BadRequest:
    text = str(exc)
    head, regex, rest = text.partition("`str` matching regex ")
    pattern = rest.partition(" - at `$.")[0]
    for known, words in _PATTERN_WORDS.items():
        if regex and pattern in (repr(known), f"'{known}'"):
            text = f"{head}{words}{rest[len(pattern) :]}"
    where = text.rpartition(" - at `$.")
    if where[1]:  # "Expected `int`, got `str` - at `$.ids[0]`" → "argument 'ids[0]': expected `int` ..."
        return BadRequest(
            f"op {op!r}, argument {where[2].rstrip('`')!r}: {where[0][:1].lower()}{where[0][1:]}"
        )
    if "missing required field" in text:
        return BadRequest(f"op {op!r} needs the argument {text.rpartition(' ')[2].strip('`')!r}")
    if "unknown field" in text:
        takes = ", ".join(REQUEST_TYPES[op].__struct_fields__) or "none"
        return BadRequest(f"op {op!r} takes no argument {text.rpartition(' ')[2]}; it takes: {takes}")
    return BadRequest(f"op {op!r}: {text}")


def request_from(op: str, args: Mapping[str, object] | None = None) -> OpRequest:
    """``op`` and its arguments (plain JSON values) → the op's Struct, or BadRequest."""
    kind = REQUEST_TYPES.get(op)
    if kind is None:
        raise BadRequest(f"unknown op {op[:64]!r}; known: {', '.join(sorted(OPS))}")
    try:
        req = msgspec.convert(args or {}, kind, strict=True)
    except msgspec.ValidationError as exc:
        raise _refuse(exc, op) from None
    except RecursionError:
        raise BadRequest(f"op {op!r}: an argument is nested too deeply") from None
    return req


T = TypeVar("T")


def encode_json(obj: object) -> bytes:
    """``obj`` (Structs, builtins) as JSON. Text holding surrogate escapes (a file name's bytes that are
    not UTF-8, as Python reads them) keeps them as ``\\udcXX`` escapes, which ``decode_json`` turns
    back into the same str: the name reaches the other side as the OS has it, not as U+FFFD."""
    try:
        return msgspec.json.encode(obj)
    except UnicodeEncodeError:
        import json

        text = json.dumps(msgspec.to_builtins(obj), ensure_ascii=True, allow_nan=False, separators=(",", ":"))
        return text.encode("ascii")


def decode_json(data: bytes, kind: type[T]) -> T:
    """JSON → ``kind``, as ``msgspec.json.decode``; a message with ``\\udcXX`` escapes (which msgspec
    refuses: lone surrogates) is read by the standard library and converted."""
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError:
        raise
    except msgspec.DecodeError as exc:
        if b"\\ud" not in data and b"\\uD" not in data:
            raise
        import json

        try:
            loose = json.loads(data)
        except ValueError:
            raise exc from None
        return msgspec.convert(loose, kind)


def decode_request(data: bytes) -> OpRequest:
    """One request as sent on the wire → its Struct; anything malformed raises BadRequest."""
    try:
        envelope = decode_json(data, _Envelope)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"a request is an object {{op, args, v}}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise BadRequest(f"message is not valid JSON: {str(exc)[:200]}") from None
    except RecursionError:
        raise BadRequest("message is nested too deeply") from None
    if envelope.v is not None and envelope.v != PROTOCOL_VERSION:
        raise VersionMismatch(envelope.v)
    return request_from(envelope.op, envelope.args)


def checked(req: Request[R]) -> Request[R]:
    """A Struct built in-process (Structs check types but not ``Meta`` limits when constructed):
    validated as if it had come over the socket."""
    return cast("Request[R]", request_from(req.op, msgspec.to_builtins(req)))
