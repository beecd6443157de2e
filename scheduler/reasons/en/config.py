"""English words for a config file's problems (``reasons/config_codes.py``), as ``gputray config``, the
log and the tray's banner have always said them."""

from __future__ import annotations

from gputray.scheduler.reasons import config_codes as k
from gputray.scheduler.reasons.en.common import EN
from gputray.scheduler.reasons.say import Say

says = EN.says


@says(k.NumberIn)
def _number(r: k.NumberIn, s: Say) -> str:
    what = "a whole number" if r.whole else "a number"
    return f"{what} in {r.low} … {r.high}" if r.low is not None and r.high is not None else what


@says(k.OneOf)
def _one_of(r: k.OneOf, s: Say) -> str:
    return "one of " + ", ".join(r.values)


@says(k.TextValue)
def _text(r: k.TextValue, s: Say) -> str:
    return "text"


@says(k.TrueFalse)
def _true_false(r: k.TrueFalse, s: Say) -> str:
    return "true or false"


@says(k.ListOfText)
def _list(r: k.ListOfText, s: Say) -> str:
    return "a list of text"


@says(k.TableOfBools)
def _bools(r: k.TableOfBools, s: Say) -> str:
    return "a table of true/false values"


@says(k.EitherOf)
def _either(r: k.EitherOf, s: Say) -> str:
    return " or ".join(s(p) for p in r.parts)


@says(k.CheckSaid)
def _check_said(r: k.CheckSaid, s: Say) -> str:
    return r.text


@says(k.BadValue)
def _bad_value(r: k.BadValue, s: Say) -> str:
    then = {"default": f"using {r.default}", "unset": "left unset", "ignored": "ignored"}[r.then]
    return f"{r.source}: {r.key} = {r.value} is not {s(r.allowed)}; {then}"


@says(k.UnknownKey)
def _unknown(r: k.UnknownKey, s: Say) -> str:
    hint = f"did you mean {r.suggestion}?" if r.suggestion else f"known: {', '.join(r.known)}"
    return f"{r.source}: unknown key {r.key} ({hint}); ignored"


@says(k.NotATable)
def _not_a_table(r: k.NotATable, s: Say) -> str:
    return f"{r.source}: [{r.key}] must be a table, not {r.value}; using the defaults"


@says(k.DevicesNotTables)
def _devices(r: k.DevicesNotTables, s: Say) -> str:
    return f"{r.source}: [devices] must be a table of [devices.<name>] tables, not {r.value}"


@says(k.DeviceNotTable)
def _device(r: k.DeviceNotTable, s: Say) -> str:
    return f"{r.source}: devices.{r.name} must be a table like `slots = 2`, not {r.value}"


@says(k.EnvNotTables)
def _env_tables(r: k.EnvNotTables, s: Say) -> str:
    return f"{r.source}: env must be written as [[env]] tables"


@says(k.EnvNamedTwice)
def _env_twice(r: k.EnvNamedTwice, s: Say) -> str:
    return f"{r.source}: two environments are named {r.name!r}; names must be unique"


@says(k.BadLogSize)
def _bad_log_size(r: k.BadLogSize, s: Say) -> str:
    return (
        f"{r.source}: logs.max_size = {r.value} is not a size of at least 64 KiB "
        f'(like "1GiB", "500MB" or a number of bytes); using "{r.default}"'
    )
