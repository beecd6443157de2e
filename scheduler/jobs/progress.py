"""How far a running job has got, read from its own output: the tail of its log, or the file
``GPUTRAY_PROGRESS`` names.

What is understood (each as the tool prints it; the last line that says anything wins):

* tqdm: ``45%|████▌     | 45/100 [00:20<00:25,  2.20it/s]`` (also ``4.50k/10.0k`` with ``unit_scale``);
  a bar with no total (``45it [00:20, 2.2it/s]``) says nothing;
* ``step N/M``, ``epoch N/M``, ``iter N/M``, ``batch N/M`` (any case, ``Step [N/M]`` too); an epoch and a
  step on one line count as ``(epoch - 1 + step / steps) / epochs``;
* a bare percent: a line that starts with ``N%`` (Real-ESRGAN's ncnn tools print ``25.00%``), ``[ 45%]``,
  or ``progress: N%`` / ``done N%``;
* ffmpeg: ``frame=  240 … time=00:00:08.00 …`` against the input's ``Duration: 00:00:10.00`` (read from
  the log's head, once per task: ffmpeg prints it before the first frame);
* llama.cpp: ``llama-quantize``'s ``[  12/ 291] blk.0.attn_k.weight …``. ``llama-server``'s lines say how
  far *one request* has got (``prompt processing, n_tokens =    240, progress = 0.15, t =   3.07 s / 78.23
  tokens per second``, printed once a prompt has taken 3 s; older servers: ``prompt processing progress,
  … progress = 0.250000``; ``n_gen = …, tg = … t/s`` while generating), never the job's: a server runs
  until it is stopped. Such a line ends the search with nothing (tests/fixtures/progress/SOURCE.md);
* ``GPUTRAY_PROGRESS``: a job may write one line ``done total`` (two numbers, e.g. ``45 100``) to the
  file this variable names; it wins over the log.

**Bounded cost**: only the last ``TAIL_BYTES`` of the log (and, for ffmpeg, its first ``HEAD_BYTES``) are
read, never the whole log, so a 1 GiB log costs what a small one does (``bench/progress_tail.py``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gputray.scheduler.jobs.log_files import open_log

PROGRESS_VAR = "GPUTRAY_PROGRESS"
TAIL_BYTES = 16 * 1024
HEAD_BYTES = 16 * 1024
FILE_BYTES = 256
LINE_CHARS = 1024  # of a line, only its end is looked at
ATTEMPT_HEADER = "=== gputray task #"  # the first line of each attempt's output in the log (``launch_plan``)

_SUFFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_NUM = r"(\d+(?:\.\d+)?)([kKMGT]?)"
_TQDM = re.compile(r"(\d{1,3})%\|[^|\n]*\|\s*" + _NUM + r"/" + _NUM + r"\b")
_COUNTED = re.compile(
    r"\b(epoch|step|iter(?:ation)?|batch)\b\s*[:#]?\s*\[?\s*(\d+)\s*/\s*(\d+)", re.IGNORECASE
)
_PERCENT = re.compile(
    r"^\s*\[?\s*(\d{1,3}(?:\.\d+)?)\s?%(?:\s*\]|\s*$)|\b(?:progress|done|complete[d]?)\s*[:=]?\s*(\d{1,3}(?:\.\d+)?)\s?%",
    re.IGNORECASE,
)
_FFMPEG = re.compile(r"\bframe=\s*\d+.*?\btime=\s*(-?\d+):(\d\d):(\d\d(?:\.\d+)?)")
_FFMPEG_DURATION = re.compile(r"Duration:\s*(\d+):(\d\d):(\d\d(?:\.\d+)?)")
# llama-server's progress of one request (tools/server/server-context.cpp: print_timings_pp and the
# generation line beside it; before that, update_slots' "prompt processing progress, … progress = %f")
_LLAMA_SERVER_PROMPT = re.compile(r"\bprompt processing(?: progress)?,.*?\bprogress\s*=\s*([01](?:\.\d+)?)")
_LLAMA_SERVER_GENERATING = re.compile(r"\bn_gen\s*=\s*\d+,\s*tg\s*=")
_LLAMA_QUANTIZE = re.compile(r"^\[\s*(\d+)\s*/\s*(\d+)\s*\]")


@dataclass(frozen=True)
class Progress:
    """``done`` of ``total`` (``fraction`` = done / total, 0..1), and which output said so (``tqdm``,
    ``step``, ``epoch``, ``percent``, ``ffmpeg``, ``llama.cpp``, ``file``)."""

    done: float
    total: float
    source: str

    @property
    def fraction(self) -> float:
        return 0.0 if self.total <= 0 else min(1.0, max(0.0, self.done / self.total))


def _number(digits: str, suffix: str) -> float:
    return float(digits) * _SUFFIX[suffix]


def _seconds(h: str, m: str, s: str) -> float:
    return int(h) * 3600 + int(m) * 60 + float(s)


def request_progress(line: str) -> float | None:
    """How much of one request's prompt a llama-server has read (0..1), from its ``prompt processing``
    line; None for any other line. A request's, never the job's (module docstring)."""
    m = _LLAMA_SERVER_PROMPT.search(line) if "prompt processing" in line else None
    return None if m is None else float(m.group(1))


def is_server_request_line(line: str) -> bool:
    """A llama-server line about one request: its prompt read so far, or its tokens generated."""
    return request_progress(line) is not None or _LLAMA_SERVER_GENERATING.search(line) is not None


def progress_in_line(line: str, duration_s: float | None = None) -> Progress | None:
    """What one line (one ``\\r``-separated update) says of the job's progress; None: nothing.
    ``duration_s``: the ffmpeg input's duration, when known."""
    if (m := _TQDM.search(line)) is not None:
        total = _number(m.group(4), m.group(5))
        if total > 0:
            return Progress(_number(m.group(2), m.group(3)), total, "tqdm")
    if is_server_request_line(line):
        return None  # a server's request, not the job (module docstring)
    if (m := _LLAMA_QUANTIZE.search(line)) is not None and int(m.group(2)) > 0:
        return Progress(float(m.group(1)), float(m.group(2)), "llama.cpp")
    if (m := _FFMPEG.search(line)) is not None:
        if duration_s and duration_s > 0:
            return Progress(max(0.0, _seconds(*m.groups())), duration_s, "ffmpeg")
        return None
    counted = {k.lower()[:4]: (int(d), int(t)) for k, d, t in _COUNTED.findall(line) if int(t) > 0}
    epoch, step = counted.get("epoc"), counted.get("step") or counted.get("iter") or counted.get("batc")
    if epoch is not None and step is not None:
        (e, epochs), (s, steps) = epoch, step
        return Progress(max(0, e - 1) + s / steps, float(epochs), "epoch")
    if epoch is not None:
        return Progress(float(epoch[0]), float(epoch[1]), "epoch")
    if step is not None:
        return Progress(float(step[0]), float(step[1]), "step")
    if (m := _PERCENT.search(line)) is not None:
        value = float(m.group(1) or m.group(2))
        if value <= 100:
            return Progress(value, 100.0, "percent")
    return None


def _lines_backwards(text: str) -> Iterator[str]:
    """``text``'s lines (``\\r`` and ``\\n`` both end one), last first, each cut to its last
    ``LINE_CHARS``: no regex ever runs over a whole tail (a preallocated log's NULs are one line)."""
    end = len(text)
    nl, cr = text.rfind("\n"), text.rfind("\r")
    while end > 0:
        # each separator looked for again only once passed: a tail of tqdm's \r updates with no \n
        # in it is not searched to its start for every line
        nl = text.rfind("\n", 0, end) if nl >= end else nl
        cr = text.rfind("\r", 0, end) if cr >= end else cr
        start = max(nl, cr) + 1
        if start < end:
            yield text[max(start, end - LINE_CHARS) : end]
        end = start - 1


def progress_in_text(text: str, duration_s: float | None = None) -> Progress | None:
    """The last progress ``text`` (a log's tail) reports; tqdm's ``\\r`` updates count as lines. A line
    with none of ``%``, ``/``, ``=`` (what every pattern needs) is passed over without a regex. Only the
    last attempt's output counts: the search stops at its header (``ATTEMPT_HEADER``), so a job run
    again (a retry, a move) starts from nothing, not from where the one before it stopped.

    A bar inside a loop that an outer one counts is that loop's part of the whole: tqdm's nested bar
    (position ≥ 1: its updates end by moving the cursor back up, ``ESC[A``) inside the outer bar, or a
    bar (or ``step N/M``) after an ``Epoch N/M`` line the script printed, counts as
    ``(outer done + inner fraction) / outer total`` — not 90 % done in the first of ten epochs."""
    inner: Progress | None = None  # a nested tqdm bar, whose outer bar is looked for further back
    for line in _lines_backwards(text):
        if line.startswith(ATTEMPT_HEADER):
            break
        if inner is not None and not ("%|" in line and _CURSOR_UP not in line):
            continue  # past a nested bar only the outer bar's lines are looked at
        if "%" in line or "/" in line or "=" in line:
            found = progress_in_line(line, duration_s)
            if found is None:
                if "=" in line and is_server_request_line(line):
                    return None  # a llama-server: its lines tell of requests, none of them of the job
                continue
            if inner is not None:  # the outer bar: the iterations it counts done, and this one's part
                if found.done < found.total:
                    return Progress(found.done + inner.fraction, found.total, "tqdm")
                break
            if found.source == "tqdm" and _CURSOR_UP in line:
                inner = found
                continue
            return _in_epoch(text, found) if found.source in ("tqdm", "step") else found
    return _in_epoch(text, inner) if inner is not None else None


_CURSOR_UP = "\x1b[A"


def _in_epoch(text: str, inner: Progress) -> Progress:
    """``inner`` (a bar, ``step N/M``) as part of the last ``Epoch N/M`` line printed before it, if any
    (found by one scan of ``text``, not line by line): ``(N - 1 + inner's fraction) / M``."""
    at = max(text.rfind("poch"), text.rfind("POCH"))
    if at < 0:
        return inner
    start = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
    if text.rfind(ATTEMPT_HEADER) >= start:  # an earlier attempt's
        return inner
    ends = [x for x in (text.find("\n", at), text.find("\r", at)) if x >= 0]
    line = text[start : min(ends, default=len(text))][-LINE_CHARS:]
    epoch = progress_in_line(line)
    if epoch is None or epoch.source != "epoch" or epoch.done < 1 or epoch.done != int(epoch.done):
        return inner  # not an epoch line of its own (or one that counts its steps itself)
    return Progress(epoch.done - 1 + inner.fraction, epoch.total, "epoch")


def ffmpeg_duration_s(head: str) -> float | None:
    """The first input's duration ffmpeg printed (``Duration: 00:00:10.00``); None when absent."""
    m = _FFMPEG_DURATION.search(head) if "Duration:" in head else None
    return None if m is None else _seconds(*m.groups())


def read_tail(path: str | Path, max_bytes: int = TAIL_BYTES) -> str:
    """The last ``max_bytes`` of the log (decoded, bad bytes replaced); "" when unreadable or absent.
    One ``fstat``, one ``seek``, one bounded ``read``: the log's size does not matter."""
    try:
        with open_log(path) as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - max_bytes))
            return f.read(max_bytes).decode("utf-8", "replace")
    except Exception:  # a log that cannot be read has no progress; never an error for the queue
        return ""


def read_head(path: str | Path, max_bytes: int = HEAD_BYTES) -> str:
    try:
        with open_log(path) as f:
            return f.read(max_bytes).decode("utf-8", "replace")
    except Exception:
        return ""


def progress_file(log_path: str | Path) -> Path:
    """The file a job's ``GPUTRAY_PROGRESS`` names: beside its log."""
    return Path(f"{log_path}.progress")


def read_progress_file(path: str | Path) -> Progress | None:
    """``done total`` from the job's progress file; None when absent or not two numbers (total > 0)."""
    try:
        with open_log(path) as f:  # no link, no FIFO: the job owns the folder
            words = f.read(FILE_BYTES).decode("utf-8", "replace").split()
        done, total = float(words[0]), float(words[1])
    except Exception:
        return None
    if not (total > 0 and done >= 0) or done != done or total == float("inf"):
        return None
    return Progress(done, total, "file")


def read_progress(
    log_path: str | Path, duration_s: float | None = None
) -> tuple[Progress | None, float | None]:
    """The job's progress (its progress file first, then its log's tail) and the ffmpeg input duration
    to keep for the next read (read from the log's head the first time an ffmpeg line shows)."""
    found = read_progress_file(progress_file(log_path))
    if found is not None:
        return found, duration_s
    tail = read_tail(log_path)
    if duration_s is None and "frame=" in tail:  # ffmpeg's: its input's duration, looked for once (0: none)
        duration_s = ffmpeg_duration_s(read_head(log_path)) or ffmpeg_duration_s(tail) or 0.0
    return progress_in_text(tail, duration_s), duration_s
