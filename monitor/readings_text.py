"""The eGPU readings in words, one way for every view (``gputray status``, the panel, the dashboard).

``PCIe 4.0 ×4 of 5.0 ×8 · fan 31 % 1180 RPM · limit 180 W · mem 14001 MHz · enc 12 % · dec 34 %``:
each part only where the GPU reports it. Takes the ``status --json`` device fields by name, so the
same text comes from a Sample and from the JSON document the owner process sends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gputray.monitor.pcie import LinkWords, describe
from gputray.monitor.records import Sample


@dataclass(frozen=True)
class Words:
    """The words of the readings line; the tray passes them translated (``monitor/`` speaks English)."""

    link: LinkWords = field(default_factory=LinkWords)
    fan: str = "fan"
    limit: str = "limit"
    mem: str = "mem"
    enc: str = "enc"
    dec: str = "dec"


ENGLISH = Words()


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def link_text(get: Callable[[str], Any], *, short: bool = False, words: Words = ENGLISH) -> str | None:
    return describe(
        _int(get("pcie_gen")),
        _int(get("pcie_width")),
        _int(get("pcie_max_gen")),
        _int(get("pcie_max_width")),
        _num(get("util_percent")),
        short=short,
        words=words.link,
    )


def extra_parts(get: Callable[[str], Any], *, compact: bool = False, words: Words = ENGLISH) -> list[str]:
    """The parts that are known, in a fixed order; ``get(field)`` returns a device field's value.

    ``compact`` (the panel's one line): "(idle)" for the idle-link note, and the video engines only
    while one of them is busy."""
    parts: list[str] = []
    link = link_text(get, short=compact, words=words)
    if link is not None:
        parts.append(link)
    fan_percent, fan_rpm = _num(get("fan_percent")), _int(get("fan_rpm"))
    if fan_percent is not None or fan_rpm is not None:
        fan = words.fan
        if fan_percent is not None:
            fan += f" {fan_percent:.0f} %"
        if fan_rpm is not None:
            fan += f" {fan_rpm} RPM"
        parts.append(fan)
    limit = _num(get("power_limit_w"))
    if limit is not None:
        parts.append(f"{words.limit} {limit:.0f} W")
    mclk = _int(get("mclk_mhz"))
    if mclk is not None:
        parts.append(f"{words.mem} {mclk} MHz")
    video = [
        (label, _num(get(name)))
        for label, name in ((words.enc, "encoder_percent"), (words.dec, "decoder_percent"))
    ]
    if not compact or any(value for _, value in video):
        parts.extend(f"{label} {value:.0f} %" for label, value in video if value is not None)
    return parts


def sample_extras(sample: Sample, *, compact: bool = False, words: Words = ENGLISH) -> str:
    """One line for one reading (the panel: ``compact``); empty when the GPU reports none of it."""
    return "  ·  ".join(extra_parts(lambda name: getattr(sample, name, None), compact=compact, words=words))


def panel_extras(sample: Sample, words: Words = ENGLISH) -> str:
    """The panel card's short form: the link ("(idle)" for the idle note) and the fan."""
    parts = extra_parts(lambda name: getattr(sample, name, None), compact=True, words=words)
    return "  ·  ".join(p for p in parts if p.startswith(("PCIe", words.fan)))


def json_extras(device: Mapping[str, Any]) -> list[str]:
    return extra_parts(device.get)
