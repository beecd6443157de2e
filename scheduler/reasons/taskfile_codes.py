"""What is wrong in a task, as data: a task file that cannot be read, a key that is unknown or given
twice, a value its key cannot take, keys that do not go together. Made where the task is checked
(``tasks/taskfile.py``, the spellings of ``tasks/spelling.py``, ``tasks/limits.py``,
``records.parse_window``), carried by the refusal (``TaskFileError.said``: ``TaskInvalid``; a value's
``ValueProblem.said``) and inside a recipe's (``RecipeBadTask.problem``), worded per language by the
reason catalogues (``reasons/en/taskfile.py``, ``reasons/ja/taskfile.py``): the command line's one line
in English as it has always said it, the tray's message box in the language it shows.

Values are data: ``got`` holds a value as the check quotes it (Python's ``repr``, cut as the check cuts
it, or a type's name), key names, paths and placeholders as written. What a parser says in its own words
(the TOML parser, msgspec, the OS) rides in ``error`` and is shown as written."""

from __future__ import annotations

from typing import Literal

from gputray.scheduler.reasons.base import Code

# -- one value a key cannot take -------------------------------------------------------------------

#: The forms a value is written in, each with its example: ``"10m"`` … (``UnreadableValue.form``).
Form = Literal[
    "duration",  # 'expected a duration like '10m', got …'
    "duration_or_seconds",  # … or a number of seconds
    "duration_forms",  # '90s', '10m', '1h30m' or '2d'
    "size",
    "size_or_bytes",
    "size_forms",
    "time",  # 2026-12-01T01:00:00
    "window",  # '01:00-07:00'
    "task_ids",  # [12, 13]
]
#: What a number or text key takes, where its type says too little (``tasks.keys``: ``TaskKey.takes``).
Takes = Literal["percent", "machine", "slowdown"]


class UnreadableValue(Code, frozen=True):
    """A value not written in its ``form``; ``got``: the value as quoted (None: an empty string);
    ``of_type``: ``got`` is the name of the value's type."""

    form: Form
    got: str | None
    of_type: bool = False


class Negative(Code, frozen=True):
    """A duration or size below 0; ``number``: written as a number (else as text)."""

    what: Literal["duration", "size"]
    got: str
    number: bool = False


class TooLong(Code, frozen=True):
    """A duration over the limit (``limit_s``); ``got_s``: the value in seconds."""

    got_s: float
    limit_s: float


class TooBig(Code, frozen=True):
    """A size over the limit (``limit_bytes``)."""

    got_bytes: float
    limit_bytes: int


class DateOutOfRange(Code, frozen=True):
    """A time outside the years 1970–9999; ``what``: the key or option it is (``start_at``) as written,
    or None (a time)."""

    what: str | None = None


class WindowTimes(Code, frozen=True):
    """A daily window whose times are not between 00:00 and 24:00."""

    got: str


class WindowEmpty(Code, frozen=True):
    """A daily window that starts and ends at the same time."""

    got: str


class BadTaskId(Code, frozen=True):
    got: str


class NotOneOf(Code, frozen=True):
    choices: tuple[str, ...]
    got: str


class NotWhole(Code, frozen=True):
    got: str


class TooLow(Code, frozen=True):
    low: int
    got: str


class TooHigh(Code, frozen=True):
    high: int
    got: str


class NotStrings(Code, frozen=True):
    """Not a list of strings."""

    got: str


class HasNul(Code, frozen=True):
    """A string with a NUL character in it."""


class EmptyDeviceName(Code, frozen=True):
    pass


class NotTrueFalse(Code, frozen=True):
    got: str


class MustTake(Code, frozen=True):
    """A value outside what the key ``takes`` (``TaskKey.takes``)."""

    takes: Takes
    got: str


class NoTimeout(Code, frozen=True):
    """``timeout = 0``: a timeout is more than 0 (left out: no limit)."""

    got_s: float


class NotText(Code, frozen=True):
    """Not a non-empty string."""

    got: str


class EnvNotTable(Code, frozen=True):
    got: str


class EnvBadName(Code, frozen=True):
    """``got``: the name as quoted."""

    got: str


class EnvValueNotText(Code, frozen=True):
    name: str
    got: str


class EnvValueNul(Code, frozen=True):
    name: str


class BaseEnvBad(Code, frozen=True):
    pass


class TypeSaid(Code, frozen=True):
    """What msgspec said of a value, where no check of ours has words for it (its own words)."""

    error: str


# -- keys, and keys that do not go together --------------------------------------------------------


class NotATable(Code, frozen=True):
    """A task that is not a table of keys; ``got``: its type's name."""

    got: str


class KeyNotText(Code, frozen=True):
    got: str


class UnknownTaskKey(Code, frozen=True):
    """A key no task has; ``suggestion``: the key it most likely meant, else ``known``: every key."""

    suggestion: str | None = None
    known: tuple[str, ...] = ()


class GivenTwice(Code, frozen=True):
    """The key is given under two spellings (``vram`` and ``vram_bytes``)."""


class NeedsScript(Code, frozen=True):
    """A torch task without ``script``."""


class TorchTakesNoArgv(Code, frozen=True):
    pass


class ScriptOnlyTorch(Code, frozen=True):
    kind: str


class NeedsArgv(Code, frozen=True):
    kind: str


class ProgramEmpty(Code, frozen=True):
    """``argv``'s first element is empty."""


class ArgsUnused(Code, frozen=True):
    kind: str


class UnknownPlaceholder(Code, frozen=True):
    """``{name}`` is no placeholder: in ``within`` (an argument, ``out``), or in the environment variable
    ``variable``; ``known``: the placeholders there are (where the message lists them)."""

    name: str
    within: str | None = None
    variable: str | None = None
    known: tuple[str, ...] = ()


class FileWithoutFiles(Code, frozen=True):
    """The command uses ``{file}`` but no input file is given."""


class UnknownNeed(Code, frozen=True):
    """``got``: the need as quoted; ``known``: the needs there are."""

    got: str
    known: tuple[str, ...]


# -- a task file that cannot be read ---------------------------------------------------------------


class NotRegularFile(Code, frozen=True):
    kind: Literal["folder", "FIFO", "device or socket"]


class TaskFileTooLarge(Code, frozen=True):
    mib: float


class ReadTimedOut(Code, frozen=True):
    seconds: float


class NoTaskFile(Code, frozen=True):
    pass


class TaskFileUnreadable(Code, frozen=True):
    """``error``: the OS's words."""

    error: str


class TaskFileNotToml(Code, frozen=True):
    """``error``: the TOML parser's words."""

    error: str


class TaskFileNotUtf8(Code, frozen=True):
    pass


class NestedTooDeep(Code, frozen=True):
    pass


class TaskNotTable(Code, frozen=True):
    """``task`` is not a table (``[task]``)."""


class KeysBesideTask(Code, frozen=True):
    """A task key beside ``[task]``: under it, or all at the top level."""


Problem = (
    UnreadableValue | Negative | TooLong | TooBig | DateOutOfRange | WindowTimes | WindowEmpty | BadTaskId
    | NotOneOf | NotWhole | TooLow | TooHigh | NotStrings | HasNul | EmptyDeviceName | NotTrueFalse
    | MustTake | NoTimeout | NotText | EnvNotTable | EnvBadName | EnvValueNotText | EnvValueNul | BaseEnvBad
    | TypeSaid | NotATable | KeyNotText | UnknownTaskKey | GivenTwice | NeedsScript | TorchTakesNoArgv
    | ScriptOnlyTorch | NeedsArgv | ProgramEmpty | ArgsUnused | UnknownPlaceholder | FileWithoutFiles
    | UnknownNeed | NotRegularFile | TaskFileTooLarge | ReadTimedOut | NoTaskFile | TaskFileUnreadable
    | TaskFileNotToml | TaskFileNotUtf8 | NestedTooDeep | TaskNotTable | KeysBesideTask
)  # fmt: skip


class TaskProblem(Code, frozen=True):
    """A problem, at the key (as written) it is about (None: the task or file as a whole)."""

    key: str | None
    problem: Problem


# -- where the task came from ----------------------------------------------------------------------


class Submitted(Code, frozen=True):
    """A task sent whole (``gputray submit`` with options, a client's spec)."""


class RunCommand(Code, frozen=True):
    """``gputray run``'s command line."""


class EditOf(Code, frozen=True):
    task_id: int


class FromMachine(Code, frozen=True):
    """A task another machine of the cluster handed over."""

    machine: str


class RecipeFor(Code, frozen=True):
    """The task a recipe makes of ``file`` (its name)."""

    recipe: str
    file: str


#: Where a task came from: a task file's path (as written), or one of these.
Where = str | Submitted | RunCommand | EditOf | FromMachine | RecipeFor


class TaskInvalid(Code, frozen=True):
    """The task from ``where`` cannot be made: ``what`` is wrong with it."""

    where: Where
    what: TaskProblem


TaskSaid = TaskInvalid | TaskProblem | Problem | Submitted | RunCommand | EditOf | FromMachine | RecipeFor


def taskfile_codes() -> tuple[type[Code], ...]:
    """Every kind of task problem and where a task came from (what each language must render)."""
    return (
        TaskInvalid,
        TaskProblem,
        *Problem.__args__,
        Submitted,
        RunCommand,
        EditOf,
        FromMachine,
        RecipeFor,
    )
