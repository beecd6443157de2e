"""Text on any stream: what its encoding can hold, never a ``UnicodeEncodeError``.

A Windows console takes UTF-8, but a redirected stdout (``gputray status > s.txt``, ``| findstr``, a
scheduled task) is written in the ANSI code page: cp1252 has no ``█``, cp932 no ``—``, and Python's
strict default turns the first bar into a traceback. A Linux shell under ``LANG=C`` is ASCII.

:func:`make_streams_safe` (called once by each entry point) keeps the stream's encoding, so UTF-8 stays
UTF-8 and a pipe still gets the code page its reader expects, and installs the error handler
``gputray-fallback``: a character the encoding lacks becomes an ASCII stand-in of the same width in
terminal cells (``█`` → ``#``, ``°C`` → ``C``, ``✅`` → ``OK``), so tables still line up, and anything
else unknown becomes ``?`` per cell. :func:`json_text` writes JSON that stays exact on such a stream:
``\\uXXXX`` escapes instead of stand-ins.
"""

from __future__ import annotations

import codecs
import contextlib
import sys
import unicodedata
from typing import Any, TextIO

ERRORS = "gputray-fallback"

# Stand-ins keep the terminal width of what they replace (wide characters take two cells).
_STAND_INS: dict[str, str] = {
    "█": "#",
    "▓": "#",
    "▒": "=",
    "░": "-",
    "—": "-",
    "–": "-",
    "―": "-",
    "…": "...",
    "×": "x",
    "→": "->",
    "←": "<-",
    "↳": ">",
    "•": "*",
    "·": ".",
    "≤": "<=",
    "≥": ">=",
    "µ": "u",
    "✅": "OK",
    "✓": "v",
    "⚠": "!",
    "❌": "X ",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "\u00a0": " ",
    "\u202f": " ",
    "\ufe0f": "",  # emoji presentation selector
}


def cells(char: str) -> int:
    """Terminal columns of one character: two for CJK and emoji like ✅, none for a combining mark."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def stand_in(char: str) -> str:
    """An ASCII stand-in for one character (see the module docstring)."""
    known = _STAND_INS.get(char)
    if known is not None:
        return known
    if "\udc80" <= char <= "\udcff":  # a byte that was not UTF-8 (surrogateescape): show the byte
        return f"\\x{ord(char) - 0xDC00:02x}"
    ascii_form = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode("ascii")
    if ascii_form and ascii_form.isprintable():
        return ascii_form  # é → e, ﬁ → fi, full-width Ａ → A
    return "?" * cells(char)


def _fallback(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text, end = exc.object, exc.end
    out = []
    for i in range(exc.start, exc.end):
        char = text[i]
        if char == "°" and i == end - 1 and text[end : end + 1] in ("C", "F"):
            out.append(text[end] + " ")  # "36 °C" → "36 C ": the unit stays, the column too
            end += 1
        else:
            out.append(stand_in(char))
    return "".join(out), end


codecs.register_error(ERRORS, _fallback)


def make_safe(stream: TextIO | None) -> None:
    """Keep ``stream``'s encoding but write stand-ins for what it cannot encode (no-op where it can't)."""
    _reconfigure(stream, errors=ERRORS)


def make_streams_safe() -> None:
    """``make_safe`` for stdout and stderr: each entry point calls this before it prints anything."""
    make_safe(sys.stdout)
    make_safe(sys.stderr)


def keep_line_ends(stream: TextIO | None) -> None:
    """Write ``stream``'s newlines as they are: a job's log passes through with its own line ends.

    Windows text streams turn each ``\n`` into ``\r\n``, so a Windows program's ``\r\n`` would come
    out as ``\r\r\n`` (a blank line between lines in some viewers, stray ``^M`` in others).
    """
    _reconfigure(stream, newline="")


def _reconfigure(stream: TextIO | None, **settings: str) -> None:
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:  # None under pythonw.exe; io.StringIO takes any text anyway
        with contextlib.suppress(ValueError, OSError, AttributeError):
            reconfigure(**settings)


def can_encode(text: str, stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (default stdout) can hold ``text`` exactly."""
    target = sys.stdout if stream is None else stream
    encoding = getattr(target, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    except LookupError:
        return True
    return True


def json_text(doc: Any, stream: TextIO | None = None, *, indent: int | None = None) -> str:
    """``doc`` as JSON for ``stream``: readable UTF-8 where it fits, ``\\u`` escapes where it does not."""
    import json  # here: only a --json answer needs it

    text = json.dumps(doc, ensure_ascii=False, indent=indent)
    if can_encode(text, stream):
        return text
    return json.dumps(doc, ensure_ascii=True, indent=indent)


def print_json(doc: Any) -> None:
    """``doc`` as indented JSON on stdout, as every ``--json`` prints it."""
    sys.stdout.write(json_text(doc, sys.stdout, indent=2) + "\n")


def say_error(message: str, code: int) -> int:
    """``gputray: message`` on stderr; returns ``code`` as the exit status."""
    print(f"gputray: {message}", file=sys.stderr)
    return code
