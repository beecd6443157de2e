"""What the queue and the monitor say, shown in the user's language.

A task's reason, a queue event, a device's busy verdict, a refusal and a submit error are data
(``gputray.scheduler.reasons``): ``reason``/``reasons``/``said`` word them with the one renderer the
command line uses too, in the language the tray shows (docs/architecture.md, "Adding a reason"). A
task's state is worded by ``state_word`` (Qt's .ts). Nothing here matches English: what has no code
(an OS error, a driver's words, another machine's refusal) is others' words, shown as written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from gputray.gui import i18n
from gputray.gui.i18n import tr, tr_noop, trn
from gputray.monitor.busy_why import SampleWhy
from gputray.monitor.pcie import LinkWords
from gputray.monitor.readings_text import Words
from gputray.scheduler.client.words import (
    ENDED_STATES,
    Code,
    DeviceGone,
    Say,
    Worded,
    catalogue,
    render,
    render_all,
)

# A task's state as the queue names it, shown through ``state_word`` (marked here for the .ts).
STATE_WORDS: tuple[str, ...] = (
    tr_noop("queued"),
    tr_noop("waiting"),
    tr_noop("starting"),
    tr_noop("running"),
    tr_noop("paused"),
    tr_noop("succeeded"),
    tr_noop("failed"),
    tr_noop("cancelled"),
    tr_noop("interrupted"),
)


def state_word(state: str) -> str:
    """A task's state in the current language; a state this tray does not know (a newer owner's) as named."""
    return tr(state) if state in STATE_WORDS else state


def device_gone(state: str, why: SampleWhy | None) -> str:
    """Why a GPU shows no figures: "lost: <why>", "unavailable: <why>" in the current language; ``why``
    is what the backend said (a ``busy_why`` code, worded here; a driver's own error text inside it is
    shown as written); none: the state's word alone."""
    if state not in ("lost", "unavailable"):
        return ""
    if not why:
        return tr("lost") if state == "lost" else tr("unavailable")
    gone = DeviceGone(state="lost" if state == "lost" else "unavailable", why=why)
    return render(gone, i18n.current_language())


def reason(why: Worded | None, state: str | None = None) -> str:
    """A reason (``scheduler.reasons``) in the current language; past tense for a task in ``state`` that
    has ended. The renderer is the command line's too; others' words inside it (an OS error, a driver's,
    another machine's refusal) are shown as written: they are not ours to translate."""
    finished = state is not None and state in ENDED_STATES
    return render(why, i18n.current_language(), finished=finished)


def reasons(whys: Iterable[Worded]) -> str:
    """Several reasons (a device's busy verdict, rule by rule), joined as the current language joins them."""
    return render_all(whys, i18n.current_language())


def refused(errors: Iterable[str], codes: Iterable[Worded]) -> str:
    """A reply's lines of what could not be done (English), each that has a code (``TasksDone.refused``)
    worded in the current language instead, in their order."""
    worded = {render(code): reason(code) for code in codes}
    return "\n".join(worded.get(line, line) for line in errors)


def said(exc: BaseException) -> str:
    """A refusal in the current language where it carries a code (``said``), else its own words."""
    code = getattr(exc, "said", None)
    return reason(code) if code is not None else str(exc)


def about(seconds: float) -> str:
    """An estimate in the current language: ``~25 s``, ``~12 min`` (``~25 秒`` …)."""
    return Say(catalogue(i18n.current_language())).about(seconds)


def in_a_row(*texts: str) -> str:
    """Sentences one after another, joined as the current language joins reasons ("; ", "。")."""
    return catalogue(i18n.current_language()).sentences.join(t for t in texts if t)


@dataclass(frozen=True)
class Note:
    """A sentence kept untranslated until shown (the demo banner, a start-up error), so it follows a
    language switch. ``values`` are filled in: a code (a config problem …) worded in the language shown,
    text translated as a message."""

    source: str
    values: tuple[tuple[str, str | Code], ...] = ()
    count: int | None = None  # a sentence about this many things: Qt's plural forms (``%n``, ``trn``)

    def text(self) -> str:
        def shown(value: str | Code) -> str:
            if isinstance(value, str):  # others' words (an OS error …): as written
                return value
            return render(_worded(value), i18n.current_language())

        filled = {k: shown(v) for k, v in self.values}
        said = tr(self.source) if self.count is None else trn(self.source, self.count)
        try:
            return said.format(**filled)
        except (KeyError, IndexError, ValueError):
            return self.source.format(**filled)


def _worded(code: Code) -> Worded:
    """A code a Note holds: every code is a kind the catalogues word (``Worded``)."""
    return cast("Worded", code)


def _kept(value: object) -> str | Code:
    """A note's value: a code as it is, an error by the code it carries (``said``), else its words."""
    if isinstance(value, Code):
        return value
    said = getattr(value, "said", None)
    return said if isinstance(said, Code) else str(value)


def note(source: str, **values: object) -> Note:
    return Note(source, tuple((k, _kept(v)) for k, v in values.items()))


def counted_note(source: str, count: int, **values: object) -> Note:
    """A note about ``count`` things (``%n`` in ``source``), in the plural form the count takes."""
    return Note(source, tuple((k, _kept(v)) for k, v in values.items()), count)


def reading_words() -> Words:
    """The words of the eGPU readings line ("PCIe 4.0 ×4 of 5.0 ×8 · fan 31 %") in the current language."""
    return Words(
        link=LinkWords(
            of=tr("of"), idle_short=tr("(idle)"), idle_long=tr("(idle: links slow down to save power)")
        ),
        fan=tr("fan"),
        limit=tr("limit"),
        mem=tr("mem"),
        enc=tr("enc"),
        dec=tr("dec"),
    )
