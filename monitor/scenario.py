"""Scripted external load for the simulated GPUs: ``[[load]]`` windows read from a TOML file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputray.monitor.units import GIB


class ScenarioError(ValueError):
    pass


@dataclass(frozen=True)
class Load:
    """An external program using one simulated GPU from ``start_s`` to ``end_s`` (seconds since start)."""

    device: str
    start_s: float
    end_s: float
    util_percent: float
    vram_bytes: int = 0
    shared_bytes: int = 0
    process: str = "external"
    pid: int = 0
    state: str = "ok"  # "lost": the GPU reports lost in this window; "gone": it vanishes from the bus
    encoder_percent: float = 0.0  # video engines: a stream being recorded, a video playing
    decoder_percent: float = 0.0


@dataclass(frozen=True)
class VulkanBacking:
    """A simulated GPU (``device``: "5060ti", "780m" or its key) backed by the real Vulkan device whose
    name starts with ``name`` (e.g. one of two lavapipe devices): its ``{vk_index}`` is that device's."""

    device: str
    name: str


@dataclass(frozen=True)
class Scenario:
    loads: tuple[Load, ...] = ()
    loop_s: float | None = None
    vulkan: tuple[VulkanBacking, ...] = ()

    def active(self, elapsed_s: float) -> list[Load]:
        t = elapsed_s % self.loop_s if self.loop_s else elapsed_s
        return [load for load in self.loads if load.start_s <= t < load.end_s]


def _number(table: dict[str, Any], key: str, where: str, default: float | None = None) -> float:
    value = table.get(key, default)
    if value is None:
        raise ScenarioError(f"{where}: missing `{key}`")
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ScenarioError(f"{where}: `{key}` must be a number ≥ 0, not {value!r}")
    return float(value)


def _bytes(table: dict[str, Any], name: str, where: str) -> int:
    if f"{name}_bytes" in table:
        return int(_number(table, f"{name}_bytes", where))
    if f"{name}_gib" in table:
        return int(_number(table, f"{name}_gib", where) * GIB)
    return 0


def parse_scenario(data: dict[str, Any], source: str = "scenario") -> Scenario:
    raw_loads = data.get("load", [])
    if not isinstance(raw_loads, list):
        raise ScenarioError(f"{source}: `load` must be an array of tables ([[load]])")
    loads = []
    for i, table in enumerate(raw_loads, start=1):
        where = f"{source}: load #{i}"
        if not isinstance(table, dict):
            raise ScenarioError(f"{where}: must be a table")
        device = table.get("device")
        if not isinstance(device, str) or not device:
            raise ScenarioError(f'{where}: `device` must name a GPU ("5060ti", "780m" or a device key)')
        start_s = _number(table, "start_s", where, 0.0)
        end_s = _number(table, "end_s", where, float("inf"))
        if end_s <= start_s:
            raise ScenarioError(f"{where}: `end_s` ({end_s}) must be after `start_s` ({start_s})")
        util = _number(table, "util_percent", where, 0.0)
        video = {name: _number(table, name, where, 0.0) for name in ("encoder_percent", "decoder_percent")}
        for name, value in (("util_percent", util), *video.items()):
            if value > 100:
                raise ScenarioError(f"{where}: `{name}` must be at most 100, not {value}")
        process = table.get("process", "external")
        if not isinstance(process, str):
            raise ScenarioError(f"{where}: `process` must be a string")
        state = table.get("state", "ok")
        if state not in {"ok", "lost", "gone"}:
            raise ScenarioError(f'{where}: `state` must be "ok", "lost" or "gone", not {state!r}')
        loads.append(
            Load(
                device=device,
                start_s=start_s,
                end_s=end_s,
                util_percent=util,
                vram_bytes=_bytes(table, "vram", where),
                shared_bytes=_bytes(table, "shared", where),
                process=process,
                pid=int(_number(table, "pid", where, 90000 + i)),
                state=state,
                **video,
            )
        )
    loop = data.get("loop_s")
    loop_s = None if loop is None else _number(data, "loop_s", source)
    return Scenario(tuple(loads), loop_s or None, _backings(data.get("vulkan", []), source))


def _backings(raw: object, source: str) -> tuple[VulkanBacking, ...]:
    """``[[vulkan]]`` tables: ``device`` and ``name``, each a non-empty string, one per device."""
    if not isinstance(raw, list):
        raise ScenarioError(f"{source}: `vulkan` must be an array of tables ([[vulkan]])")
    out: list[VulkanBacking] = []
    for i, table in enumerate(raw, start=1):
        where = f"{source}: vulkan #{i}"
        if not isinstance(table, dict) or set(table) - {"device", "name"}:
            raise ScenarioError(f"{where}: must be a table with `device` and `name` only")
        device, name = table.get("device"), table.get("name")
        if not isinstance(device, str) or not device or not isinstance(name, str) or not name:
            raise ScenarioError(
                f'{where}: needs `device` ("5060ti", "780m") and `name` (a Vulkan device name)'
            )
        if any(b.device == device for b in out):
            raise ScenarioError(f"{where}: {device} is backed twice")
        out.append(VulkanBacking(device, name))
    return tuple(out)


def load_scenario(path: Path) -> Scenario:
    import tomllib  # here: `gputray status` imports this module for ScenarioError alone

    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario {path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: {exc}") from exc
    return parse_scenario(data, str(path))
