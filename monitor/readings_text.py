"""The eGPU readings in words, one way for every view (``gputray status``, the panel, the dashboard).

``PCIe 4.0 ×4 of 5.0 ×8 · fan 31 % 1180 RPM · limit 180 W · mem 14001 MHz · enc 12 % · dec 34 %``:
each part only where the GPU reports it. Made from the typed ``Sample``: the owner process sends the
same record (``replies.StatusReply.snapshot``), so ``status`` in a terminal and the tray say the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


def link_text(sample: Sample, *, short: bool = False, words: Words = ENGLISH) -> str | None:
    return describe(
        sample.pcie_gen,
        sample.pcie_width,
        sample.pcie_max_gen,
        sample.pcie_max_width,
        sample.util_percent,
        short=short,
        words=words.link,
    )


def extra_parts(sample: Sample, *, compact: bool = False, words: Words = ENGLISH) -> list[str]:
    """The parts that are known, in a fixed order.

    ``compact`` (the panel's one line): "(idle)" for the idle-link note, and the video engines only
    while one of them is busy."""
    parts: list[str] = []
    link = link_text(sample, short=compact, words=words)
    if link is not None:
        parts.append(link)
    if sample.fan_percent is not None or sample.fan_rpm is not None:
        fan = words.fan
        if sample.fan_percent is not None:
            fan += f" {sample.fan_percent:.0f} %"
        if sample.fan_rpm is not None:
            fan += f" {sample.fan_rpm} RPM"
        parts.append(fan)
    if sample.power_limit_w is not None:
        parts.append(f"{words.limit} {sample.power_limit_w:.0f} W")
    if sample.mclk_mhz is not None:
        parts.append(f"{words.mem} {sample.mclk_mhz} MHz")
    video = ((words.enc, sample.encoder_percent), (words.dec, sample.decoder_percent))
    if not compact or any(value for _, value in video):
        parts.extend(f"{label} {value:.0f} %" for label, value in video if value is not None)
    return parts


def sample_extras(sample: Sample, *, compact: bool = False, words: Words = ENGLISH) -> str:
    """One line for one reading (the panel: ``compact``); empty when the GPU reports none of it."""
    return "  ·  ".join(extra_parts(sample, compact=compact, words=words))


def panel_extras(sample: Sample, words: Words = ENGLISH) -> str:
    """The panel card's short form: the link ("(idle)" for the idle note) and the fan."""
    parts = extra_parts(sample, compact=True, words=words)
    return "  ·  ".join(p for p in parts if p.startswith(("PCIe", words.fan)))
