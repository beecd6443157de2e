"""Every task key, declared once: how a task file spells it, how its value is read, what it takes when
its value is refused, the command-line option that sets it (``run``, ``submit``, ``edit``), whether
``queue --json`` carries it, and its line in docs/queue.md's table of task keys.

A field of ``TaskSpec`` is a key of the task model; this is where it meets people. ``taskfile`` reads
task files by these declarations (``KEYS``, the spellings, the problems), ``cli.commands.submit``
builds the options of ``run``/``submit``/``edit`` and the patch they make from them, and
``tools/task_keys_table.py`` writes the docs table. ``tests/scheduler/tasks/test_task_keys.py`` fails when
a field of ``TaskSpec`` has no declaration, no ``TaskPatch`` field of the same type, no option (or no
reason for having none), no row in the docs, or a ``TaskView`` field this does not declare.

To add a key: the field on ``TaskSpec`` and ``TaskPatch`` (``tasks/records.py``), a ``TaskKey`` here.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from gputray.scheduler.reasons.taskfile_codes import Takes
from gputray.scheduler.tasks.limits import (
    AFTER_MAX_WAIT,
    KINDS,
    MAX_PRIORITY,
    MAX_RETRIES,
    ON_BUSY,
    ON_LATE,
    ON_OOM,
    PREFER,
)

#: How a value is written, in a task file and on the command line, and read into its field.
#: ``duration``: ``"10m"`` or seconds; ``size``: ``"4GiB"`` or bytes; ``time``: a date and time (the
#: command line also ``+2h``, ``01:00``); ``task_ids``: ``[12, "#13"]`` (``3,4`` on the command line);
#: ``list``: a list, one string meaning a list of one (``a,b`` on the command line); ``path``: a file
#: or folder, relative to the task file (to the current folder on the command line); ``paths``: a
#: list of them; ``env``: a table of variables (``KEY=VALUE``, repeatable, on the command line);
#: ``window``: a daily window ``"01:00-07:00"``; ``as_is``: the value itself.
Spelling = Literal["as_is", "duration", "size", "time", "task_ids", "list", "path", "paths", "env", "window"]
#: What the field holds, for the message when its type refuses a value (``taskfile._problem``).
Form = Literal["text", "choice", "whole", "number", "bool", "strings", "env", "base_env", "task_ids"]


class Option(msgspec.Struct, frozen=True, kw_only=True):
    """The command-line option that sets a key (``add_placement_args``); ``edit`` offers it too unless
    ``edit`` is false. ``clears``: on ``edit``, the word ``none`` empties the key. ``switch``: a flag
    that sets the key to true. ``refused``: the message when the value is out of the key's limits
    (``{value}`` is the value as typed); without it the task file's message is used."""

    flag: str
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    number: Literal["int", "float"] | None = None
    switch: bool = False
    repeat: bool = False
    edit: bool = True
    submit: bool = True
    clears: bool = False
    group: Literal["where", "what"] = "where"
    refused: str | None = None

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")


class TaskKey(msgspec.Struct, frozen=True, kw_only=True):
    """One task key. ``aliases``: other spellings a task file may use (the first is the one shown in the
    docs). ``takes``: what a value must be (a name the reason catalogues word: ``taskfile_codes.Takes``),
    for the message when its type refuses one (``form`` ``text``, ``number``: the default message
    otherwise). ``option`` or ``no_option`` (why the command
    line has none). ``in_view``: ``replies.TaskView`` carries it (``queue --json``, the tray).
    ``by_gputray``: gputray writes it itself (not offered as a suggestion for a mistyped key);
    ``in_file`` false: not even then, it is worked out (a task file may not hold it)."""

    field: str
    doc: str
    form: Form = "text"
    spelling: Spelling = "as_is"
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    whole: tuple[int, int] | None = None
    takes: Takes | None = None
    option: Option | None = None
    no_option: str = ""
    in_view: bool = False
    by_gputray: bool = False
    in_file: bool = True  # a task file may write it (false: worked out by gputray, never written)
    example: str = ""  # the docs table's example value, as a task file writes it

    @property
    def spelled(self) -> str:
        """The key as the docs show it (``vram``, not ``vram_bytes``)."""
        return self.aliases[0] if self.aliases else self.field


_DURATION_HELP = "e.g. 10m"
TASK_KEYS: tuple[TaskKey, ...] = (
    TaskKey(
        field="kind",
        doc="torch (a Python script in the env chosen per device), vulkan (an argv template) or command",
        form="choice",
        choices=KINDS,
        example='"command"',
        no_option="`run` queues a command, `submit` a file (its recipe or task file says the kind)",
        in_view=True,
    ),
    TaskKey(
        field="name",
        doc="the name in the listing (default: the script, or the program and the first file)",
        example='"train"',
        no_option="`run --name` and `edit --name` (a submit of several files names each after its file)",
        in_view=True,
    ),
    TaskKey(
        field="argv",
        doc="vulkan and command tasks: the program and its arguments, as a list",
        form="strings",
        example='["ffmpeg", "-i", "in.mp4", "out.webm"]',
        no_option="`gputray run -- PROGRAM ARGS`",
    ),
    TaskKey(
        field="script",
        doc="torch tasks: the Python script (relative to the task file)",
        spelling="path",
        example='"train.py"',
        no_option="`gputray submit train.py` (the torch recipe)",
    ),
    TaskKey(
        field="args",
        doc="torch tasks: the script's arguments",
        form="strings",
        example='["--epochs", "3"]',
        no_option="a task file's key (`run` puts every argument in argv)",
    ),
    TaskKey(
        field="files",
        doc="the input files (placeholders `{file}`, `{stem}`)",
        form="strings",
        spelling="paths",
        example='["photo.png"]',
        no_option="`gputray submit FILES`",
    ),
    TaskKey(
        field="out",
        doc="the output file's name template (`{stem}_x4.png`)",
        example='"{stem}_x4.png"',
        no_option="a task file's or recipe's key",
    ),
    TaskKey(
        field="device_prefs",
        doc="devices in order of preference: a key, a name fragment (`5060ti`), a vendor, a kind, gpu or cpu",
        form="strings",
        spelling="list",
        aliases=("devices", "device"),
        example='["5060ti", "780m", "cpu"]',
        option=Option(
            flag="--device",
            metavar="PREFS",
            help="devices in order of preference, comma-separated: 5060ti, 780m, nvidia, amd, discrete, "
            "integrated, cpu or a key like pci:0000:01:00.0. The task waits for them when they are busy "
            "(the recipe's on_busy goes with the recipe's devices): --device 5060ti alone pins it; add "
            "--on-busy or --max-wait to let it go elsewhere",
            refused="--device needs at least one device",
        ),
    ),
    TaskKey(
        field="on_busy",
        doc="when the first choice is busy: wait for it, redirect to the first free other one, or use "
        "the cpu",
        form="choice",
        choices=ON_BUSY,
        example='"redirect"',
        option=Option(
            flag="--on-busy",
            choices=ON_BUSY,
            help="when the first choice is busy: wait for it, redirect to the first free other one, "
            "or use CPU",
        ),
    ),
    TaskKey(
        field="max_wait_s",
        doc="wait at most this long, then `after_max_wait`",
        spelling="duration",
        aliases=("max_wait",),
        example='"10m"',
        option=Option(
            flag="--max-wait", metavar="DURATION", help="wait at most this long (e.g. 10m), then redirect"
        ),
    ),
    TaskKey(
        field="after_max_wait",
        doc="after `max_wait`: redirect, cpu or fail",
        form="choice",
        choices=AFTER_MAX_WAIT,
        example='"cpu"',
        no_option="a task file's key (`--max-wait` redirects)",
    ),
    TaskKey(
        field="vram_bytes",
        doc="memory the job needs (checked before it starts)",
        spelling="size",
        aliases=("vram",),
        example='"4GiB"',
        option=Option(
            flag="--vram", metavar="SIZE", help="memory the job needs, e.g. 4GiB (checked before it starts)"
        ),
    ),
    TaskKey(
        field="priority",
        doc="higher runs first (default 0; may be negative)",
        form="whole",
        whole=(-MAX_PRIORITY, MAX_PRIORITY),
        example="0",
        option=Option(
            flag="--priority",
            number="int",
            metavar="N",
            help="higher runs first (default 0; may be negative)",
        ),
        in_view=True,
    ),
    TaskKey(
        field="needs",
        doc="what the job needs of the device (`fp16` …): a device where the doctor saw it fail is skipped",
        form="strings",
        spelling="list",
        example='["fp16"]',
        no_option="a task file's or recipe's key",
    ),
    TaskKey(
        field="start_at",
        doc="not before this time (a TOML date and time, local time without an offset)",
        spelling="time",
        example="2026-12-01T01:00:00",
        option=Option(
            flag="--at", metavar="TIME", help="not before TIME: HH:MM, +10m, or 2026-12-01T01:00", clears=True
        ),
    ),
    TaskKey(
        field="window",
        doc="only start inside this daily window (may cross midnight)",
        spelling="window",
        example='"01:00-07:00"',
        option=Option(
            flag="--window",
            metavar="HH:MM-HH:MM",
            help="only start inside this daily window, e.g. 01:00-07:00",
            clears=True,
        ),
    ),
    TaskKey(
        field="timeout_s",
        doc="stop the job after this long",
        spelling="duration",
        aliases=("timeout",),
        example='"2h"',
        option=Option(
            flag="--timeout",
            metavar="DURATION",
            help="stop the job after this long, e.g. 2h",
            refused="--timeout must be more than 0 (leave it out for no limit)",
        ),
    ),
    TaskKey(
        field="retries",
        doc="retry this many times after a failure or an interruption",
        form="whole",
        whole=(0, MAX_RETRIES),
        example="2",
        option=Option(
            flag="--retries", number="int", metavar="N", help="retry this many times after a failure"
        ),
    ),
    TaskKey(
        field="backoff_s",
        doc="the wait before the first retry, doubled each time (at most 1 h)",
        spelling="duration",
        aliases=("backoff",),
        example='"30s"',
        no_option="a task file's key",
    ),
    TaskKey(
        field="env",
        doc="environment variables for the job, on top of the submitting shell's ([env] table)",
        form="env",
        spelling="env",
        example='{ OMP_NUM_THREADS = "4" }',
        option=Option(
            flag="--env",
            metavar="KEY=VALUE",
            repeat=True,
            group="what",
            help="set an environment variable for the job (repeatable; added to the task file's [env])",
        ),
    ),
    TaskKey(
        field="base_env",
        doc="the environment the job starts from (gputray writes the submitting shell's)",
        form="base_env",
        by_gputray=True,
        no_option="the submitting shell's environment, sent by `run` and `submit`",
    ),
    TaskKey(
        field="cwd",
        doc="the folder the job runs in (default: where the command is typed)",
        spelling="path",
        example='"."',
        option=Option(
            flag="--cwd",
            metavar="DIR",
            group="what",
            help="the folder the job runs in (default: the folder where this command is typed; a task "
            "file's `cwd` key, relative to the file, comes before that)",
        ),
        in_view=True,
    ),
    TaskKey(
        field="recipe",
        doc="the recipe that made the task (`submit --recipe R` picks one for every file)",
        example='"upscale"',
        no_option="`submit --recipe R` (a recipe, not a task value: it makes the task)",
    ),
    TaskKey(
        field="after",
        doc="start only after these tasks succeeded (one that fails or is cancelled fails this one)",
        form="task_ids",
        spelling="task_ids",
        example="[12, 13]",
        option=Option(
            flag="--after",
            metavar="ID[,ID...]",
            clears=True,
            help="start only after these tasks succeeded; one that fails or is cancelled fails this one "
            "too (and `gputray retry` of it brings this one back)",
        ),
        in_view=True,
    ),
    TaskKey(
        field="after_any",
        doc="with `after`: start once they ended, however they ended",
        form="bool",
        example="false",
        option=Option(
            flag="--after-any",
            switch=True,
            help="with --after: start once they ended, however they ended",
        ),
        in_view=True,
    ),
    TaskKey(
        field="placeholders",
        doc="fill `{file}` … in a command or torch task too (vulkan tasks and recipes always do)",
        form="bool",
        example="false",
        no_option="a task file's key",
    ),
    TaskKey(
        field="allow_unproven",
        doc="torch: run also where the doctor could not prove the env's torch lands on that GPU",
        form="bool",
        example="false",
        option=Option(
            flag="--allow-unproven",
            switch=True,
            help="torch: run also on a GPU where `gputray doctor` could not prove the env's torch "
            "lands on it",
        ),
    ),
    TaskKey(
        field="util_percent",
        doc="the load the job puts on a simulated GPU (`--demo` only)",
        form="number",
        takes="percent",
        example="90",
        no_option="a task file's key, for the demo's simulated GPUs",
    ),
    TaskKey(
        field="machine",
        doc="cluster: run it on that machine, or on whichever machine's GPU is free (`any`)",
        in_view=True,  # where it runs, else where it was asked to run
        takes="machine",
        example='"any"',
        option=Option(
            flag="--machine",
            metavar="NAME|any",
            edit=False,  # where a task runs is settled once queued (the cluster bridge may have sent it)
            help="cluster: run it on that machine, or on whichever machine's GPU is free (`any`); its "
            "inputs travel there, its results and log come back beside the input (see `gputray"
            " cluster status`)",
            refused="--machine takes a machine name or `any`, not {value!r}",
        ),
    ),
    TaskKey(
        field="origin",
        doc="cluster: the machine, task and attempt a handed-over task came from",
        by_gputray=True,
        no_option="written by the machine that hands the task over",
        in_view=True,
    ),
    TaskKey(
        field="offer_declined",
        doc='no more offers to run it on another free device (the tray\'s "Keep waiting")',
        form="bool",
        example="false",
        option=Option(
            flag="--decline-offer",
            switch=True,
            submit=False,
            help='keep waiting: no more offers to run it on another free device (the tray\'s "Keep waiting")',
        ),
    ),
    TaskKey(
        field="kept_residents",
        doc="residents (an LLM server, ComfyUI) never to free for it: it keeps waiting rather than ask them "
        '(the tray\'s "Keep waiting"; docs/residents.md)',
        form="strings",
        spelling="list",
        example='["ComfyUI"]',
        option=Option(
            flag="--keep-waiting",
            metavar="RESIDENT[,RESIDENT...]",
            submit=False,
            clears=True,
            help="keep waiting rather than free these residents' memory for it (their names, as `gputray "
            'residents` shows them, or a port; the tray\'s "Keep waiting"): it is not asked about them again '
            "and its reason says so; added to those kept before",
        ),
    ),
    TaskKey(
        field="family",
        doc="the job family whose earlier runs estimate this one (default: recipe + script path)",
        in_view=True,  # the family its estimates come from (``family_of``: this key, else its own)
        example='"resnet-infer"',
        option=Option(
            flag="--family",
            metavar="NAME",
            help="the job family whose earlier runs estimate this one (default: recipe + script path)",
            refused="--family takes a name of 1 to 200 characters",
        ),
    ),
    TaskKey(
        field="prefer",
        doc="free: the first free preferred device; fastest: where it finishes first; greenest: the least "
        "energy within `max_slowdown` of the fastest",
        form="choice",
        choices=PREFER,
        example='"fastest"',
        option=Option(
            flag="--prefer",
            choices=PREFER,
            help="free (default): the first free preferred device; fastest: the device where it finishes "
            "first (wait + run, learned from earlier runs of its family); greenest: the least energy within "
            "--max-slowdown of the fastest",
        ),
        in_view=True,
    ),
    TaskKey(
        field="max_slowdown",
        doc="greenest: at most this many times the fastest finish (1 to 100)",
        form="number",
        takes="slowdown",
        example="1.5",
        option=Option(
            flag="--max-slowdown",
            number="float",
            metavar="FACTOR",
            help="with --prefer greenest: at most this many times the fastest finish (default 1.5)",
            refused="--max-slowdown must be between 1 and 100 (1.5: at most 50 % slower)",
        ),
    ),
    TaskKey(
        field="vram_need_bytes",
        doc="without `vram`: the memory its model files predict (`tasks/model_memory.py`)",
        by_gputray=True,
        in_file=False,
        no_option="worked out from the model files a task names (`--vram` gives it instead)",
    ),
    TaskKey(
        field="vram_need_source",
        doc='where that prediction comes from, in words ("model.safetensors 7.2 GiB + 5 %")',
        by_gputray=True,
        in_file=False,
        in_view=True,  # "vram" where the task gives it, else this
        no_option="worked out with `vram_need_bytes`",
    ),
    TaskKey(
        field="preempt",
        doc="when lower-priority jobs of yours hold its device, pause them so this one starts "
        "(they resume when it ends)",
        form="bool",
        example="true",
        option=Option(
            flag="--preempt",
            switch=True,
            help="when lower-priority jobs of yours hold its device, pause them (gputray pause-job) so this "
            "one starts; they resume when it ends (a task file's `preemptible = false` keeps a job running)",
        ),
    ),
    TaskKey(
        field="preemptible",
        doc="false: this job is never paused for another task's `preempt`",
        form="bool",
        example="false",
        no_option="a task file's key",
    ),
    TaskKey(
        field="on_oom",
        doc="out of memory: elsewhere runs it once more on an allowed device where what it reached is "
        "free (the torch recipe's default); fail: the retry policy",
        form="choice",
        choices=ON_OOM,
        example='"elsewhere"',
        option=Option(
            flag="--on-oom",
            choices=ON_OOM,
            help="out of memory: elsewhere runs it once more on a device it may use where what it reached "
            "is free (the torch recipe's default; another device --device names is one with --on-busy "
            "redirect); fail: the retry policy, as any failure",
        ),
    ),
    TaskKey(
        field="on_late",
        doc="its own progress says it ends late: move stops it (at most 15 % done) and runs it once more on "
        "another device it may use where it would finish clearly earlier; auto (default): so with "
        '`prefer = "fastest"`; stay: never (a job that must not be restarted)',
        form="choice",
        choices=ON_LATE,
        example='"stay"',
        in_view=True,
        option=Option(
            flag="--on-late",
            choices=ON_LATE,
            help="when the job's own progress says it ends late where it runs: move stops it (at most 15 "
            "percent done) and runs it again on another device it may use where it would finish clearly "
            "earlier, once; auto (default): so with --prefer fastest; stay: never (it must not be restarted)",
        ),
    ),
)

BY_FIELD: dict[str, TaskKey] = {k.field: k for k in TASK_KEYS}
#: Task-file spelling → field: every field name is a key too; the aliases are what people write.
KEY_ALIASES: dict[str, str] = {alias: k.field for k in TASK_KEYS for alias in k.aliases}
#: Keys people write that mean another (a command is its argument list, ``argv = ["ffmpeg", …]``).
GUESSES = {"command": "argv", "cmd": "argv", "program": "argv", "gpu": "device", "gpus": "devices"}


def options(*, editing: bool) -> tuple[tuple[TaskKey, Option], ...]:
    """The keys ``run``/``submit`` (or, ``editing``, ``edit``) set by an option, in declaration order."""
    return tuple(
        (k, k.option)
        for k in TASK_KEYS
        if k.option is not None and (k.option.edit if editing else k.option.submit)
    )


def docs_table() -> str:
    """docs/queue.md's table of task keys (``tools/task_keys_table.py`` writes it there)."""
    rows = ["| key (task file) | option | what |", "|---|---|---|"]
    for k in (k for k in TASK_KEYS if k.in_file):
        key = f"`{k.spelled} = {k.example}`" if k.example else f"`{k.spelled}`"
        if k.aliases[1:]:
            key += " (also " + ", ".join(f"`{a}`" for a in (k.field, *k.aliases[1:]) if a != k.spelled) + ")"
        elif k.aliases:
            key += f" (also `{k.field}`)"
        if k.option is not None:
            option = f"`{k.option.flag}" + (f" {k.option.metavar}`" if k.option.metavar else "`")
            if k.option.choices:
                option = f"`{k.option.flag} {{{','.join(k.option.choices)}}}`"
            if not k.option.submit:
                option += " (edit)"
            elif not k.option.edit:
                option += " (not edit)"
        else:
            option = "—"
        what = k.doc + (" *(written by gputray)*" if k.by_gputray else "")
        rows.append(f"| {key} | {option.replace('|', chr(92) + '|')} | {what} |")
    return "\n".join(rows) + "\n"
