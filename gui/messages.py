"""What the queue and the monitor say, shown in the user's language.

A task's reason, a queue event and a device's busy verdict are data (``gputray.scheduler.reasons``):
``reason``/``reasons`` word them with the one renderer the command line uses too, in the language the
tray shows (docs/architecture.md, "Adding a reason").

The rest is still English text from ``monitor/`` and ``scheduler/`` (a device event, a submit error,
a config problem): ``translate`` matches it against the templates
below (the English format strings, marked for the ``.ts``), and the fields that are messages
themselves (``{why}``) are translated the same way. Names, sizes and numbers are kept as they are; a
sentence that no template knows is shown as written.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from gputray.gui import i18n
from gputray.gui.i18n import tr, tr_noop, trn
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


@dataclass(frozen=True)
class Template:
    source: str  # the English format string, also the key of its translation
    nested: tuple[str, ...] = ()  # fields that hold a message of their own

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        parts = re.split(r"\{(\w+)\}", self.source)
        rx = ""
        for i, part in enumerate(parts):
            rx += re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)"
        return re.compile(f"^{rx}$", re.DOTALL)


def _t(source: str, *nested: str) -> Template:
    return Template(source, nested)


# Most specific first: the first template that matches the whole message wins.
TEMPLATES: tuple[Template, ...] = (
    # scheduler/tasks/recipes.py: submit errors and the shipped recipes' words
    _t(tr_noop("{task}: the program '{tool}' is not installed or not on PATH. Get it: {hint}."), "hint"),
    _t(tr_noop("{task}: the program '{tool}' is not installed or not on PATH.")),
    _t(tr_noop("{path}: needs the program '{tool}', which is not installed or not on PATH")),
    _t(tr_noop("Get {tool}: {hint}."), "hint"),
    _t(tr_noop("{file}: no recipe handles this kind of file. Recipes: {known}")),
    _t(tr_noop("{path}: no recipe handles this kind of file")),
    _t(tr_noop("Recipes: {known}")),
    _t(
        tr_noop(
            "{n} of {total} files cannot be queued, so none was queued "
            "(all or nothing: fix these and submit the files again):"
        )
    ),
    _t(tr_noop("{task}: the script {script} does not exist")),
    _t(tr_noop("{task}: the input file {file} does not exist")),
    _t(tr_noop("{task}: the working folder {folder} does not exist")),
    _t(tr_noop("{path}: is a folder; give the files in it (one job per file)")),
    _t(tr_noop("{path}: no such file")),
    _t(tr_noop("no recipe named '{name}'; known recipes: {known}")),
    # a submit error names the recipe's install hint in English (until submit errors are codes)
    _t(tr_noop("{url} (put it on PATH)")),
    _t(tr_noop("an ffmpeg built with Vulkan ({command} must work)")),
    # monitor/verdict.py's busy rules; last: {who} may hold a label, so every specific sentence goes first
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


def device_gone(state: str, why: str | None) -> str:
    """Why a GPU shows no figures: "lost: <why>", "unavailable: <why>" in the current language; ``why``
    is the backend's own words (a driver's error), shown as written; none: the state's word alone."""
    if state not in ("lost", "unavailable"):
        return ""
    if not why:
        return tr("lost") if state == "lost" else tr("unavailable")
    gone = DeviceGone(state="lost" if state == "lost" else "unavailable", why=why)
    return render(gone, i18n.current_language())


# Sentences that have "; " of their own are tried before a text is split into reasons at "; ".
SEMICOLON_TEMPLATES = tuple(t for t in TEMPLATES if "; " in t.source)

# Last resort for "<device or task>: <message>" (a per-device detail, an event's "name: reason").
LABELLED = Template("{label}: {why}", ("why",))


def reason(why: Worded | None, state: str | None = None) -> str:
    """A reason (``scheduler.reasons``) in the current language; past tense for a task in ``state`` that
    has ended. The renderer is the command line's too; the doctor's words inside it are translated here."""
    finished = state is not None and state in ENDED_STATES
    return render(why, i18n.current_language(), finished=finished, words=translate)


def reasons(whys: Iterable[Worded]) -> str:
    """Several reasons (a device's busy verdict, rule by rule), joined as the current language joins them."""
    return render_all(whys, i18n.current_language(), words=translate)


def refused(errors: Iterable[str], codes: Iterable[Worded]) -> str:
    """A reply's lines of what could not be done (English), each that has a code (``TasksDone.refused``)
    worded in the current language instead, in their order."""
    worded = {render(code): reason(code) for code in codes}
    return "\n".join(worded.get(line, line) for line in errors)


def said(exc: Exception) -> str:
    """A refusal in the current language where it carries a code (``said``), else its own words."""
    code = getattr(exc, "said", None)
    return reason(code) if code is not None else str(exc)


def about(seconds: float) -> str:
    """An estimate in the current language: ``~25 s``, ``~12 min`` (``~25 秒`` …)."""
    return Say(catalogue(i18n.current_language())).about(seconds)


def in_a_row(*texts: str) -> str:
    """Sentences one after another, joined as the current language joins reasons ("; ", "。")."""
    return catalogue(i18n.current_language()).sentences.join(t for t in texts if t)


def translate(message: str | None) -> str:
    """``message`` in the current language (as it is when English is on or nothing matches)."""
    if not message:
        return ""
    if i18n.current_language() == "en":
        return message
    return _translate_cached(i18n.generation(), message)


@functools.lru_cache(maxsize=4096)
def _translate_cached(_generation: int, message: str) -> str:
    return _translate(message, depth=0)


def _translate(message: str, depth: int) -> str:
    if depth > 8 or not message:
        return message
    if "\n" in message:
        return "\n".join(_translate_line(line, depth) for line in message.split("\n"))
    return _translate_line(message, depth)


def _translate_line(line: str, depth: int) -> str:
    stripped = line.lstrip(" ")
    indent = line[: len(line) - len(stripped)]
    return indent + _translate_sentence(stripped, depth)


def split_top(text: str) -> list[str]:
    """``a; b (c; d); e`` → ``["a", "b (c; d)", "e"]``: reasons in a row, not the ones in brackets."""
    parts: list[str] = []
    depth = start = i = 0
    while i < len(text):
        c = text[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith("; ", i):
            parts.append(text[start:i])
            start = i = i + 2
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _match(template: Template, text: str) -> re.Match[str] | None:
    m = template.pattern.match(text)
    if m is None:
        return None
    # a data field (a name, a size) holding "; " or ": " means the text is a composite: another
    # template, the split into reasons or the "label: message" rule takes it instead
    if any("; " in v or ": " in v for k, v in m.groupdict().items() if k not in template.nested):
        return None
    return m


def _translate_sentence(text: str, depth: int) -> str:
    if depth > 12:
        return text
    for template in SEMICOLON_TEMPLATES:  # "<why>; retry …" wraps a whole chain of reasons
        m = _match(template, text)
        if m is not None:
            return _fill(template, m, depth)
    parts = split_top(text)
    if len(parts) > 1:  # several reasons in a row
        return "; ".join(_translate_sentence(part, depth + 1) for part in parts)
    for template in TEMPLATES:
        m = _match(template, text)
        if m is not None:
            return _fill(template, m, depth)
    m = LABELLED.pattern.match(text)
    if m is not None and ":" not in m.group("label"):
        return f"{m.group('label')}: {_translate_sentence(m.group('why'), depth + 1)}"
    return text


def _fill(template: Template, m: re.Match[str], depth: int) -> str:
    values = {
        k: (_translate_sentence(v, depth + 1) if k in template.nested else v)
        for k, v in m.groupdict().items()
    }
    translated = tr(template.source)
    try:
        return translated.format(**values)
    except (KeyError, IndexError, ValueError):  # a broken translation must not hide the message
        return template.source.format(**values)


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
            if isinstance(value, str):
                return translate(value)
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
    return value if isinstance(value, Code) else str(value)


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
