"""One renderer for reasons, one catalogue per language: ``render(reason, "ja", finished=True)``.

A catalogue (``reasons/en/``, ``reasons/ja/``, each split by area) maps each code (``reasons.codes``,
and the monitor's ``busy_why``) to a function that words it, given a ``Say``: the language's own joiners,
sizes, durations and times, and the task's tense. The CLI renders in English (as it always has), the tray in
the language it shows; both call ``render``. A code with no rendering in a language is a test failure
(``tests/scheduler/reasons/test_reasons.py``), never a silent fallback.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gputray.scheduler.reasons.say import Catalogue, Say, Worded

#: The languages with a catalogue, each in the package of its name (``reasons/en/`` holds ``EN``).
LANGUAGES: tuple[str, ...] = ("en", "ja")
_CATALOGUES: dict[str, Catalogue] = {}


def catalogue(language: str) -> Catalogue:
    """The catalogue of ``language`` (English for any language without one). Each loads when a reason
    is first worded in it: the command line, which words in English, never loads the others."""
    name = language if language in LANGUAGES else "en"
    found = _CATALOGUES.get(name)
    if found is None:
        import importlib

        module = importlib.import_module(f"gputray.scheduler.reasons.{name}")
        found = _CATALOGUES[name] = getattr(module, name.upper())
    return found


def languages() -> tuple[str, ...]:
    return LANGUAGES


def render(
    reason: Worded | str | None,
    language: str = "en",
    *,
    finished: bool = False,
) -> str:
    """``reason`` in words of ``language`` ("" for no reason); ``finished``: the task has ended (past
    tense). Others' words inside it (an OS error, a driver's) are shown as written (``Say.text``), and
    so is text in place of a code (a device's reason from an older peer)."""
    if reason is None:
        return ""
    return Say(catalogue(language), finished, True)(reason)


#: The states of a task that has ended: its reason reads in the past.
ENDED_STATES = frozenset({"succeeded", "failed", "cancelled", "interrupted", "removed"})


def render_for(state: str, reason: Worded | None, language: str = "en", **kw: Any) -> str:
    """A task's reason as its state reads it: past tense once it has ended."""
    return render(reason, language, finished=state in ENDED_STATES, **kw)


def render_all(reasons: Iterable[Worded], language: str = "en", **kw: Any) -> str:
    """Several reasons as one text, joined as ``language`` joins a list ("" for none)."""
    c = catalogue(language)
    return c.joiner.join(render(r, language, **kw) for r in reasons)
