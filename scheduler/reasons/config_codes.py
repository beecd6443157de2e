"""What is wrong in a config file, as data: a bad value and what the key takes, an unknown key, a table
that is none … Made where the file is read (``scheduler/config.py``), kept with the problem
(``ConfigProblem.said``; ``ConfigProblem.message`` is its English, as ``gputray config`` and the log say
it) and worded in the tray's language by the reason catalogues (``reasons/en/config.py``,
``reasons/ja/config.py``). Values are written as the file writes them (``"hot"``, ``true``)."""

from __future__ import annotations

from typing import Literal

from gputray.scheduler.reasons.base import Code

# -- what a key takes ---------------------------------------------------------------------------------


class NumberIn(Code, frozen=True):
    """A number (``whole``: a whole one), in ``low`` … ``high`` where both are known."""

    whole: bool
    low: str | None = None  # as the file would write it ("20", "0.5")
    high: str | None = None


class OneOf(Code, frozen=True):
    values: tuple[str, ...]  # as the file writes them: '"auto"', '"en"'


class TextValue(Code, frozen=True):
    pass


class TrueFalse(Code, frozen=True):
    pass


class ListOfText(Code, frozen=True):
    pass


class TableOfBools(Code, frozen=True):
    pass


#: What a key takes that is one thing.
SimplyAllowed = NumberIn | OneOf | TextValue | TrueFalse | ListOfText | TableOfBools


class EitherOf(Code, frozen=True):
    """Any of ``parts`` ("a whole number or text")."""

    parts: tuple[SimplyAllowed, ...]


class CheckSaid(Code, frozen=True):
    """What the value check said, where the key's type has no words of ours (its own words)."""

    text: str


Allowed = NumberIn | OneOf | TextValue | TrueFalse | ListOfText | TableOfBools | EitherOf | CheckSaid

# -- the problems -------------------------------------------------------------------------------------


class BadValue(Code, frozen=True):
    """``key = value`` in ``source`` is not what the key takes; ``then`` what gputray does instead."""

    source: str
    key: str
    value: str
    allowed: Allowed
    then: Literal["default", "unset", "ignored"]
    default: str | None = None  # for "default": the value used, as the file would write it


class UnknownKey(Code, frozen=True):
    source: str
    key: str
    suggestion: str | None  # the known key it is closest to
    known: tuple[str, ...] = ()


class NotATable(Code, frozen=True):
    """``[key]`` is ``value``, not a table: the section's defaults are used."""

    source: str
    key: str
    value: str


class DevicesNotTables(Code, frozen=True):
    source: str
    value: str


class DeviceNotTable(Code, frozen=True):
    source: str
    name: str
    value: str


class EnvNotTables(Code, frozen=True):
    source: str


class EnvNamedTwice(Code, frozen=True):
    source: str
    name: str


class BadLogSize(Code, frozen=True):
    """``[logs] max_size = value`` is no size gputray can read, or under 64 KiB: ``default`` is used."""

    source: str
    value: str
    default: str


ConfigSaid = (
    BadValue | UnknownKey | NotATable | DevicesNotTables | DeviceNotTable | EnvNotTables | EnvNamedTwice
    | BadLogSize
)  # fmt: skip


def config_codes() -> tuple[type[Code], ...]:
    """Every kind of config problem and what a key takes (what each language must render)."""
    return (*ConfigSaid.__args__, *Allowed.__args__)
