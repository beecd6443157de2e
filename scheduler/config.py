"""The user's config file (TOML), read once into a typed ``Config``; and the raw file for its writers.

Each table is a frozen dataclass whose fields carry their default and, as ``Annotated[..., Meta(...)]``,
their range; ``msgspec.convert`` checks types and ranges. A bad value is a ``ConfigProblem`` naming the
file, the key, the value and what is allowed, and that key's default is used (the owner must still
start). An unknown key is a problem too, naming the closest known key. Only a malformed file (or one
that cannot be read) raises ``ConfigError``, naming the file and line.

Past ``read_config`` nobody sees the TOML as a dict; the writers (settings dialog, ``envs add``,
``cluster join``) read the user's own keys with ``read_user_config`` and write them back with
``write_user_config``, so nothing the user did not set is written.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import difflib
import errno
import json
import logging
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from msgspec import Meta

from gputray.monitor.verdict import BusyThresholds
from gputray.scheduler.paths import app_paths
from gputray.scheduler.protocol import Refusal
from gputray.scheduler.pyenvs.record import KEYS as ENV_KEYS
from gputray.scheduler.pyenvs.record import EnvError, PythonEnv, parse_env
from gputray.scheduler.reasons import config_codes as said_as
from gputray.scheduler.reasons.config_codes import ConfigSaid
from gputray.scheduler.resident_config import ResidentsConfig, parse_residents

log = logging.getLogger("gputray.config")

MAX_SLOTS = 64


class ConfigError(Refusal):
    pass


@dataclass(frozen=True)
class MonitorSection:
    interval_s: Annotated[float, Meta(ge=0.1, le=3600.0)] = 1.0
    history_s: Annotated[float, Meta(ge=60.0, le=7 * 86_400.0)] = 3900.0


@dataclass(frozen=True)
class DeviceSection:
    """``[devices.<name>]``: how many jobs may run on that device at once."""

    slots: Annotated[int, Meta(ge=1, le=MAX_SLOTS)] = 1


@dataclass(frozen=True)
class RetentionSection:
    """``[retention]``: ended tasks (succeeded, failed, cancelled) and their logs are removed once they
    ended more than ``keep_days`` ago, and beyond the newest ``keep_tasks`` of them; 0 turns that limit
    off. What ``gputray clean --older-than 7d --keep 1000`` does by hand, done every few minutes."""

    keep_days: Annotated[float, Meta(ge=0.0, le=36_500.0)] = 30.0
    keep_tasks: Annotated[int, Meta(ge=0, le=10_000_000)] = 1000


@dataclass(frozen=True)
class QueueSection:
    """``[queue]``: ``preempt = "priority"`` lets every task pause lower-priority jobs of ours that hold
    its device (``--preempt`` does it for one task; ``queue.preemption``); a job paused for another
    resumes when that one ends, or after ``max_pause_s`` whatever happens."""

    preempt: Literal["off", "priority"] = "off"
    max_pause_s: Annotated[float, Meta(ge=1.0, le=30 * 86_400.0)] = 3600.0


# the tray's notifications, each one ``[gui.notifications] <kind> = false`` can turn off
NOTIFICATION_KINDS = (
    "job_started",
    "job_redirected",
    "job_finished",
    "job_failed",
    "job_offer",  # a waiting task could run elsewhere now: the notice asks (replies.Offer)
    "resident_ask",  # an idle resident could free memory for a waiting task: the notice asks
    "gpu_taken",  # an exclusive app (a game) took a GPU: our jobs there paused; and when it gave it back
    "gpu_hot",
    "gpu_lost",
    "gpu_back",
)


@dataclass(frozen=True)
class GuiSection:
    language: Literal["auto", "en", "ja"] = "auto"  # "auto" (the locale's), or a language the tray ships
    notifications: dict[str, bool] = field(default_factory=dict)  # kind → shown; absent: shown


@dataclass(frozen=True)
class ClusterSection:
    """``[cluster]`` as written (None: not set); the cluster's ``config.cluster_config`` turns it into
    the cluster's ``ClusterConfig`` (sizes and durations parsed, its defaults filled in)."""

    address: str | None = None
    machine: str | None = None
    insecure: bool = False
    shared: str | list[str] | None = None
    max_transfer: int | str | None = None
    lost_after: float | str | None = None
    fence_after: float | str | None = None


MIN_LOG_BYTES = 64 << 10
DEFAULT_LOG_SIZE = "1GiB"


@dataclass(frozen=True)
class LogsSection:
    """``[logs]``: ``max_size``, the most one job's log keeps ("1GiB", "500MB" or a number of bytes, at
    least 64 KiB). Past it the log keeps its head and the output's last part, with a line saying how
    much was dropped between them (``job_log.CappedLog``)."""

    max_size: int | str = DEFAULT_LOG_SIZE

    @property
    def max_bytes(self) -> int:
        from gputray.scheduler.tasks.taskfile import parse_size

        return parse_size(self.max_size)  # checked by read_config


@dataclass(frozen=True)
class MetricsSection:
    """``[metrics]``: ``listen`` (``"127.0.0.1:9835"``; empty: off) and ``token`` (needed for an address
    other machines reach). ``metrics/listen.py`` says which addresses are served and why."""

    listen: str = ""
    token: str = ""


@dataclass(frozen=True)
class ConfigProblem:
    key: str  # "thresholds.temp_limit_c", "devices.780m.slots", "env", "gui.langauge"
    message: str  # names the file, the key, the value and what is allowed (English)
    unknown: bool = False  # a key gputray does not know (ignored), not a bad value
    said: ConfigSaid | None = None  # the problem as a code (``reasons/config_codes``), for the tray to word

    def __str__(self) -> str:
        return self.message


def _problem(key: str, said: ConfigSaid, unknown: bool = False) -> ConfigProblem:
    """A problem made as a code, with its English words."""
    from gputray.scheduler.reasons.render import render

    return ConfigProblem(key, render(said), unknown, said)


@dataclass(frozen=True)
class Config:
    source: str = "the defaults"  # the file read
    monitor: MonitorSection = field(default_factory=MonitorSection)
    thresholds: BusyThresholds = field(default_factory=BusyThresholds)
    device_slots: Mapping[str, int] = field(default_factory=dict)  # a key, a name fragment or "cpu"
    envs: tuple[PythonEnv, ...] = ()
    gui: GuiSection = field(default_factory=GuiSection)
    cluster: ClusterSection = field(default_factory=ClusterSection)
    logs: LogsSection = field(default_factory=LogsSection)
    retention: RetentionSection = field(default_factory=RetentionSection)
    metrics: MetricsSection = field(default_factory=MetricsSection)
    queue: QueueSection = field(default_factory=QueueSection)
    residents: ResidentsConfig = field(default_factory=ResidentsConfig)  # [[resident]], [exclusive]
    problems: tuple[ConfigProblem, ...] = ()

    def problems_in(self, table: str) -> list[ConfigProblem]:
        return [p for p in self.problems if p.key == table or p.key.startswith(table + ".")]


T = TypeVar("T")
_TOP_KEYS = (
    "monitor", "thresholds", "devices", "env", "gui", "cluster", "logs", "retention", "metrics", "queue",
    "resident", "exclusive",
)  # fmt: skip


def read_user_config(path: Path, *, malformed_hint: str = "") -> dict[str, Any]:
    """The user's file as written ({} when absent), for the writers only; a malformed one raises
    ConfigError naming the file and line (``malformed_hint`` is appended to that message)."""
    if not path.exists():
        return {}
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        # Notepad's "UTF-8 with BOM" is still UTF-8; tomllib refuses the mark itself.
        text = data.removeprefix(codecs.BOM_UTF8).decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: line {line} is not UTF-8 text; save the file as UTF-8{malformed_hint}"
        ) from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}{malformed_hint}") from exc


class ConfigNotWritten(ConfigError, OSError):
    """The config file cannot be written; the message names the file and, when that is the trouble,
    the folder that does not take new files."""


def write_user_config(path: Path, text: str, *, backup: bool = False) -> None:
    """Replace the user's file with ``text`` at once (tmp + rename); ``backup`` keeps the old one as
    ``config.toml.bak`` (TOML writers drop comments). ConfigNotWritten when it cannot be written."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if backup and path.exists():
            # bytes, not shutil.copy2: on Windows that calls CopyFile2, which Wine 8 lacks (the process
            # dies there), and a backup needs no timestamps
            path.with_name(path.name + ".bak").write_bytes(path.read_bytes())
        tmp.write_bytes(text.encode("utf-8"))
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        why = exc.strerror or str(exc)
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            why = f"the folder {path.parent} does not take new files ({why}): make it writable"
        raise ConfigNotWritten(f"cannot save the config file {path}: {why}; nothing was changed") from None


def read_config(path: Path | None = None) -> Config:
    """The user's file (default: the one ``gputray --help`` names) as a typed ``Config``: defaults for
    what is absent, bad values listed in ``problems``. ConfigError only for a malformed file."""
    path = path or app_paths().config_file
    source = str(path)
    raw = read_user_config(path)
    problems: list[ConfigProblem] = []
    _unknown_keys(raw, _TOP_KEYS, "", source, problems)

    def table(name: str, kind: type[T]) -> T:
        return _section(raw.get(name, {}), kind, name, source, problems)

    notifications = raw.get("gui", {}).get("notifications") if isinstance(raw.get("gui"), dict) else None
    if isinstance(notifications, dict):  # one bad entry must not undo the others (Settings adds to them)
        kept = {k: v for k, v in notifications.items() if isinstance(v, bool)}
        for kind, value in notifications.items():
            if kind not in kept:
                key = f"gui.notifications.{kind}"
                bad = said_as.BadValue(
                    source=source, key=key, value=_toml(value), allowed=said_as.TrueFalse(), then="ignored"
                )
                problems.append(_problem(key, bad))
        raw = {**raw, "gui": {**raw["gui"], "notifications": kept}}
    config = Config(
        source,
        monitor=table("monitor", MonitorSection),
        thresholds=table("thresholds", BusyThresholds),
        device_slots=_device_slots(raw.get("devices", {}), source, problems),
        envs=_envs(raw.get("env", []), source, problems),
        gui=table("gui", GuiSection),
        cluster=table("cluster", ClusterSection),
        logs=_logs_section(table("logs", LogsSection), source, problems),
        retention=table("retention", RetentionSection),
        metrics=_metrics_section(table("metrics", MetricsSection), source, problems),
        queue=table("queue", QueueSection),
        residents=_residents(raw, source, problems),
    )
    if isinstance(notifications, dict):  # `job_faild = false` would silently turn nothing off
        _unknown_keys(notifications, NOTIFICATION_KINDS, "gui.notifications", source, problems)
    return dataclasses.replace(config, problems=tuple(problems))


def _residents(raw: dict[str, Any], source: str, problems: list[ConfigProblem]) -> ResidentsConfig:
    residents, lines = parse_residents(raw.get("resident"), raw.get("exclusive"), source)
    for line in lines:
        key, _, message = line.partition("\t")
        problems.append(ConfigProblem(key, message, unknown="unknown key" in message))
    return residents


def read_config_or_defaults(path: Path) -> Config:
    """``read_config`` for whoever must start anyway (the owner): a malformed file is logged and the
    defaults used."""
    try:
        return read_config(path)
    except ConfigError as exc:  # the user's typo: its line, not a traceback
        log.error("%s; using the defaults", exc)
        return Config(str(path))


def log_problems(config: Config) -> None:
    for problem in config.problems:
        log.warning("%s", problem)


_AT_FIELD = re.compile(r" - at `\$\.([^.\[`]+)")


def _section(table: object, kind: type[T], key: str, source: str, problems: list[ConfigProblem]) -> T:
    """One table converted to its dataclass; each bad value reported and left to its default."""
    if not isinstance(table, dict):
        problems.append(_problem(key, said_as.NotATable(source=source, key=key, value=_toml(table))))
        return kind()
    info = msgspec.inspect.type_info(kind)
    assert isinstance(info, msgspec.inspect.DataclassType)
    known = {f.name: f for f in info.fields}
    values = {k: _whole(v, known[k].type) for k, v in table.items() if k in known}
    _unknown_keys(table, tuple(known), key, source, problems)
    while True:
        try:
            return msgspec.convert(values, kind)
        except msgspec.ValidationError as exc:
            at = _AT_FIELD.search(str(exc))
            if at is None or at.group(1) not in values:
                raise  # every field has a default: a problem is always one field's value
            name = at.group(1)
            bad = values.pop(name)
            default = getattr(kind(), name)
            allowed = _allowed(known[name].type) or said_as.CheckSaid(text=str(exc).partition(" - at")[0])
            said = said_as.BadValue(
                source=source,
                key=f"{key}.{name}",
                value=_toml(bad),
                allowed=allowed,
                then="unset" if default is None else "default",
                default=None if default is None else _toml(default),
            )
            problems.append(_problem(f"{key}.{name}", said))


def _metrics_section(metrics: MetricsSection, source: str, problems: list[ConfigProblem]) -> MetricsSection:
    """An address that is none, or that may not be served as configured, is a problem: metrics stay off."""
    from gputray.scheduler.metrics.listen import ListenError, checked_listen

    try:
        checked_listen(metrics.listen, metrics.token)
    except ListenError as exc:
        problems.append(ConfigProblem("metrics.listen", f"{source}: metrics.listen: {exc}; metrics stay off"))
        return MetricsSection()
    return metrics


def _logs_section(logs: LogsSection, source: str, problems: list[ConfigProblem]) -> LogsSection:
    """``max_size`` is a size gputray can read, and at least ``MIN_LOG_BYTES``; else the default."""
    try:
        ok = logs.max_bytes >= MIN_LOG_BYTES
    except ValueError:
        ok = False
    if ok:
        return logs
    said = said_as.BadLogSize(source=source, value=_toml(logs.max_size), default=DEFAULT_LOG_SIZE)
    problems.append(_problem("logs.max_size", said))
    return LogsSection()


def _whole(value: object, t: msgspec.inspect.Type) -> object:
    """``2e9`` where a whole number is wanted: TOML has no integer exponent form, so a float that is a
    whole number is taken as one."""
    wants_int = isinstance(t, msgspec.inspect.IntType) or (
        isinstance(t, msgspec.inspect.UnionType)
        and any(isinstance(a, msgspec.inspect.IntType) for a in t.types)  # max_transfer = 2e9
    )
    if wants_int and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _toml(value: object) -> str:
    """A value as the file writes it (``"hot"``, ``true``, ``{done = "yes"}``), not as Python does."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(map(_toml, value)) + "]"
    return str(value)


def _allowed(t: msgspec.inspect.Type) -> said_as.Allowed | None:
    """What a field takes ("a number in 20 … 150", "text", "true or false" …); None: no words of ours."""
    if isinstance(t, msgspec.inspect.UnionType):
        parts = tuple(a for a in map(_takes, t.types) if a is not None)
        return said_as.EitherOf(parts=parts) if parts else None
    return _takes(t)


def _takes(t: msgspec.inspect.Type) -> said_as.SimplyAllowed | None:
    if isinstance(t, msgspec.inspect.FloatType | msgspec.inspect.IntType):
        whole = isinstance(t, msgspec.inspect.IntType)
        if t.ge is not None and t.le is not None:
            low, high = (str(t.ge), str(t.le)) if whole else (f"{t.ge:g}", f"{t.le:g}")
            return said_as.NumberIn(whole=whole, low=low, high=high)
        return said_as.NumberIn(whole=whole)
    if isinstance(t, msgspec.inspect.LiteralType):
        return said_as.OneOf(values=tuple(f'"{v}"' for v in t.values))
    words: dict[type, said_as.SimplyAllowed] = {
        msgspec.inspect.StrType: said_as.TextValue(),
        msgspec.inspect.BoolType: said_as.TrueFalse(),
        msgspec.inspect.ListType: said_as.ListOfText(),
        msgspec.inspect.DictType: said_as.TableOfBools(),
    }
    return words.get(type(t))


def _unknown_keys(
    table: Mapping[str, object], known: tuple[str, ...], key: str, source: str, problems: list[ConfigProblem]
) -> None:
    prefix = f"{key}." if key else ""
    for name in table:
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        suggestion = f"{prefix}{close[0]}" if close else None
        said = said_as.UnknownKey(source=source, key=prefix + name, suggestion=suggestion, known=known)
        problems.append(_problem(prefix + name, said, unknown=True))


def _device_slots(table: object, source: str, problems: list[ConfigProblem]) -> dict[str, int]:
    """``[devices.<name>] slots = N`` → {name: N}; a bad value is reported and that device keeps one."""
    if not isinstance(table, dict):
        problems.append(_problem("devices", said_as.DevicesNotTables(source=source, value=_toml(table))))
        return {}
    out: dict[str, int] = {}
    for name, entry in table.items():
        if not isinstance(entry, dict):
            said = said_as.DeviceNotTable(source=source, name=str(name), value=_toml(entry))
            problems.append(_problem(f"devices.{name}", said))
            continue
        before = len(problems)
        slots = _section(entry, DeviceSection, f"devices.{name}", source, problems).slots
        if "slots" in entry and all(p.key != f"devices.{name}.slots" for p in problems[before:]):
            out[str(name)] = slots  # a bad value: the device is left out, so it keeps one slot
    return out


def _envs(tables: object, source: str, problems: list[ConfigProblem]) -> tuple[PythonEnv, ...]:
    """The ``[[env]]`` tables; a bad one is reported (``envs.load_envs`` refuses to go on with it)."""
    if not isinstance(tables, list):
        problems.append(_problem("env", said_as.EnvNotTables(source=source)))
        return ()
    envs: list[PythonEnv] = []
    for i, table in enumerate(tables):
        try:
            env = parse_env(i, table, source)
        except EnvError as exc:
            problems.append(ConfigProblem("env", str(exc)))
            if isinstance(table, dict):  # `path = ...` for `python = ...`: the typo is the problem
                _unknown_keys(table, ENV_KEYS, f"env.{table.get('name') or f'#{i + 1}'}", source, problems)
            continue
        _unknown_keys(table, ENV_KEYS, f"env.{env.name}", source, problems)
        if any(e.name == env.name for e in envs):
            problems.append(_problem("env", said_as.EnvNamedTwice(source=source, name=env.name)))
            continue
        envs.append(env)
    return tuple(envs)
