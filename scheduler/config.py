"""The user's config file (TOML), merged over the shipped defaults, and the typed settings read from it.

To add a monitor/threshold key: a field with its default (``BusyThresholds`` or ``MonitorSettings``),
its range in ``RANGES``, and the key in ``resources/default_config.toml``. A value outside its range
(or not a number: ``nan`` and ``inf`` are TOML floats) is reported naming the file, the key, the value
and the range, and that key's default is used; the other keys keep the user's values.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputray.monitor.verdict import BusyThresholds
from gputray.resources import resource_path
from gputray.scheduler.paths import app_paths
from gputray.scheduler.protocol import Refusal


class ConfigError(Refusal):
    pass


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def default_config() -> dict[str, Any]:
    with resource_path("default_config.toml").open("rb") as f:
        return tomllib.load(f)


def read_user_config(path: Path, *, malformed_hint: str = "") -> dict[str, Any]:
    """The user's file alone ({} when absent); a malformed one raises ConfigError naming the file and line
    (``malformed_hint`` is appended to that message)."""
    if not path.exists():
        return {}
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}{malformed_hint}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc


def load_config(path: Path | None = None) -> dict[str, Any]:
    """Defaults merged with the user's file; a malformed file raises ConfigError naming the file and line."""
    return _merge(default_config(), read_user_config(path or app_paths().config_file))


log = logging.getLogger("gputray.config")

#: (table, key) → (lowest, highest) allowed value.
RANGES: dict[tuple[str, str], tuple[float, float]] = {
    ("monitor", "interval_s"): (0.1, 3600.0),
    ("monitor", "history_s"): (60.0, 7 * 86_400.0),
    ("thresholds", "busy_util_percent"): (0.0, 100.0),
    ("thresholds", "busy_window_s"): (0.0, 86_400.0),
    ("thresholds", "free_window_s"): (0.0, 86_400.0),
    ("thresholds", "external_vram_bytes"): (0.0, float(1 << 50)),
    ("thresholds", "stale_context_s"): (0.0, 86_400.0),
    ("thresholds", "temp_limit_c"): (20.0, 150.0),
    ("thresholds", "igpu_temp_limit_c"): (20.0, 150.0),
    ("thresholds", "temp_hysteresis_c"): (0.0, 50.0),
    ("thresholds", "own_grace_s"): (0.0, 3600.0),
}


@dataclass(frozen=True)
class MonitorSettings:
    """``[monitor]`` and ``[thresholds]``, checked; ``problems`` says which values were replaced."""

    thresholds: BusyThresholds = dataclasses.field(default_factory=BusyThresholds)
    interval_s: float = 1.0
    history_s: float = 3900.0
    problems: tuple[str, ...] = ()


def _checked(
    table: str, values: object, defaults: object, source: str, problems: list[str]
) -> dict[str, Any]:
    """The known keys of one table whose values are numbers within their range."""
    out: dict[str, Any] = {}
    if not isinstance(values, Mapping):
        problems.append(f"{source}: [{table}] must be a table, not {values!r}; using the defaults")
        return out
    for key, value in values.items():
        if (table, key) not in RANGES:
            continue
        lo, hi = RANGES[table, key]
        default = getattr(defaults, key)
        number = not isinstance(value, bool) and isinstance(value, int | float)
        if not number or not math.isfinite(value) or not lo <= value <= hi:
            problems.append(
                f"{source}: {table}.{key} = {value!r} is outside {lo:g} … {hi:g}; using {default!r}"
            )
            continue
        out[key] = type(default)(value)
    return out


def read_monitor_settings(config: Mapping[str, Any], *, source: str = "the config") -> MonitorSettings:
    problems: list[str] = []
    defaults = MonitorSettings()
    monitor = _checked("monitor", config.get("monitor", {}), defaults, source, problems)
    thresholds = _checked("thresholds", config.get("thresholds", {}), BusyThresholds(), source, problems)
    return dataclasses.replace(
        defaults, thresholds=BusyThresholds(**thresholds), problems=tuple(problems), **monitor
    )


def monitor_settings(config: Mapping[str, Any] | None = None) -> tuple[BusyThresholds, float]:
    """The config's ``[thresholds]`` and ``[monitor] interval_s`` as the Monitor takes them.

    Shared by ``gputray daemon`` and the tray, so both judge busy/hot GPUs by the user's limits. A bad
    value is logged (file, key, value, range) and its default used: the owner must still start.
    """
    source = str(app_paths().config_file)
    try:
        config = load_config() if config is None else config
    except ConfigError:
        log.exception("the config cannot be read: using the defaults")
        config = {}
    settings = read_monitor_settings(config, source=source)
    for problem in settings.problems:
        log.warning("%s", problem)
    return settings.thresholds, settings.interval_s


MAX_SLOTS = 64


def read_device_slots(
    config: Mapping[str, Any], *, source: str = "the config"
) -> tuple[dict[str, int], list[str]]:
    """``[devices.<name>] slots = N`` → {name: N} (a key, a name fragment like ``5060ti``, or ``cpu``),
    and the problems found (a bad value is reported and that device keeps one slot)."""
    problems: list[str] = []
    table = config.get("devices", {})
    if not isinstance(table, Mapping):
        return {}, [f"{source}: [devices] must be a table of [devices.<name>] tables, not {table!r}"]
    out: dict[str, int] = {}
    for name, entry in table.items():
        if not isinstance(entry, Mapping):
            problems.append(f"{source}: devices.{name} must be a table like `slots = 2`, not {entry!r}")
            continue
        value = entry.get("slots")
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SLOTS:
            problems.append(
                f"{source}: devices.{name}.slots = {value!r} is not a whole number "
                f"from 1 to {MAX_SLOTS}; using 1"
            )
            continue
        out[str(name)] = value
    return out, problems


def device_slots(config: Mapping[str, Any] | None = None) -> dict[str, int]:
    """The config's slots per device, as the queue takes them; problems are logged, never fatal."""
    source = str(app_paths().config_file)
    try:
        config = load_config() if config is None else config
    except ConfigError:
        log.exception("the config cannot be read: one job per device")
        config = {}
    slots, problems = read_device_slots(config, source=source)
    for problem in problems:
        log.warning("%s", problem)
    return slots
