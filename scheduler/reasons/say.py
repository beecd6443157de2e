"""What a language's catalogue is made of: ``Catalogue`` (its words per code, its joiners and units) and
``Say`` (what a wording gets: the catalogue, the task's tense, how to word what nests). ``render``
picks the catalogue; ``en``/``ja`` fill theirs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import msgspec

from gputray.monitor.busy_why import BackendNote, BusyWhy, DeviceNews, SampleWhy
from gputray.monitor.units import format_bytes
from gputray.monitor.vulkan_why import MappingWhy, VulkanWhy
from gputray.scheduler.reasons.codes import Reason
from gputray.scheduler.reasons.config_codes import Allowed, ConfigSaid
from gputray.scheduler.reasons.doctor_codes import DoctorNews, Finding, Fix
from gputray.scheduler.reasons.refusals import Refused
from gputray.scheduler.reasons.submit_codes import SubmitSaid
from gputray.scheduler.reasons.taskfile_codes import TaskSaid

Worded = (
    Reason | BusyWhy | DeviceNews | SampleWhy | BackendNote | Finding | Fix | DoctorNews | Refused
    | ConfigSaid | Allowed | SubmitSaid | TaskSaid | VulkanWhy | MappingWhy
)  # fmt: skip
T = TypeVar("T")
Wording = Callable[[Any, "Say"], str]


class Catalogue(msgspec.Struct):
    """One language's words for every code; ``joiner`` joins a list inside a reason, ``sentences``
    several reasons in a row. (Structs, not dataclasses, here: `gputray queue` words its reasons with
    these, and a dataclass costs every command the import of ``dataclasses`` and ``inspect``.)"""

    language: str
    joiner: str
    sentences: str
    unit_s: str  # "{n} s"
    unit_min: str  # "{m} min"
    unit_h_min: str  # "{h} h {m:02d} min"
    words: dict[type, Wording] = msgspec.field(default_factory=dict)

    def says(self, *codes: type[T]) -> Callable[[Callable[[T, Say], str]], Callable[[T, Say], str]]:
        """Register the decorated function as this language's words for ``codes``."""

        def register(fn: Callable[[T, Say], str]) -> Callable[[T, Say], str]:
            for code in codes:
                if code in self.words:
                    raise ValueError(f"{self.language}: {code.__name__} is worded twice")
                self.words[code] = fn
            return fn

        return register


class Say(msgspec.Struct, frozen=True):
    """What a wording gets besides its reason: the catalogue, the tense, and how to word what nests."""

    catalogue: Catalogue
    finished: bool = False  # the task has ended: its reason reads in the past
    named: bool = True  # a monitor verdict names its device ("… is hot"); inside a device's reason, not

    def __call__(self, reason: Worded | str) -> str:
        if isinstance(reason, str):  # a caller not yet typed: its words as they are
            return reason
        fn = self.catalogue.words.get(type(reason))
        if fn is None:  # a test keeps every code worded; a reason from a newer owner is still shown
            return f"{type(reason).__name__}"
        return fn(reason, self)

    def tense(self, now: str, past: str) -> str:
        """``now`` for a task still at it (and for what is not a task's), ``past`` once it has ended."""
        return past if self.finished else now

    def unnamed(self, reason: Worded) -> str:
        """``reason`` without its device's name: "hot: 91 °C …" inside a reason about that device."""
        return Say(self.catalogue, self.finished, False)(reason)

    def join(self, parts: Iterable[Worded]) -> str:
        return self.catalogue.joiner.join(self(p) for p in parts)

    def text(self, words: str) -> str:
        """Words of others inside a reason (a backend's or the OS's error, another machine's refusal): as
        written in every language, they are not ours to translate."""
        return words

    def size(self, n_bytes: float) -> str:
        return format_bytes(n_bytes)

    def duration(self, seconds: float) -> str:
        """``45 s``, ``12 min``, ``1 h 05 min`` (placement's rounding)."""
        s = round(seconds)
        c = self.catalogue
        if s < 90:
            return c.unit_s.format(n=s)
        if s < 5400:
            return c.unit_min.format(m=s // 60)
        return c.unit_h_min.format(h=s // 3600, m=s % 3600 // 60)

    def about(self, seconds: float) -> str:
        """An estimate: ``~45 s``, ``~12 min``, ``~1 h 05 min`` (``queue/estimates.about``)."""
        s = round(seconds)
        c = self.catalogue
        if s < 90:
            return "~" + c.unit_s.format(n=s)
        if s < 5400:
            return "~" + c.unit_min.format(m=round(s / 60))
        return "~" + c.unit_h_min.format(h=s // 3600, m=s % 3600 // 60)

    def seconds(self, seconds: float) -> str:
        return self.catalogue.unit_s.format(n=f"{seconds:.0f}")

    @staticmethod
    def clock_s(epoch_s: float) -> str:
        return dt.datetime.fromtimestamp(epoch_s).strftime("%H:%M:%S")

    @staticmethod
    def clock(epoch_s: float, with_date: bool) -> str:
        t = dt.datetime.fromtimestamp(epoch_s)
        return t.strftime("%Y-%m-%d %H:%M" if with_date else "%H:%M")
