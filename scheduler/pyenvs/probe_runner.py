"""Run ``resources/probe.py`` inside a Python environment, safely.

The probe runs in its own process session (POSIX) or process group (Windows) with a timeout. On
timeout the whole group is killed, children included: a wrong ``HSA_OVERRIDE_GFX_VERSION`` can hang a
ROCm process, and a hung probe must never outlive the doctor. Whatever the interpreter does (missing,
not executable, crashes, prints garbage or bytes that are not UTF-8), the runner returns a
ProbeResult that says what happened in words; it never raises for the environment's faults.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import psutil

from gputray.monitor.process_group import kill_group, popen_own_group
from gputray.resources import resource_path

ProbeStatus = Literal["ok", "timeout", "crashed", "garbage", "missing", "not_runnable"]

PROGRESS_PREFIX = "@gputray-progress "
DEFAULT_TIMEOUT_S = 120.0
VERSION_TIMEOUT_S = 20.0
MAX_STDOUT_BYTES = 16 << 20
STDERR_TAIL_CHARS = 8000

ProgressCallback = Callable[[Mapping[str, Any]], None]


@dataclass(frozen=True)
class ProbeResult:
    """What one probe run produced. ``data`` is the probe's JSON document when status is ``ok``."""

    status: ProbeStatus
    message: str
    python: Path
    data: Mapping[str, Any] | None = field(default=None, hash=False)
    returncode: int | None = None
    stderr_tail: str = ""
    duration_s: float = 0.0
    progress: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def probe_script() -> Path:
    return resource_path("probe.py")


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _parse_document(stdout: str) -> dict[str, Any] | None:
    """The probe's JSON document: the whole output, or else its last line that parses as an object."""
    text = stdout.strip()
    lines = [line.strip() for line in reversed(text.splitlines())]
    candidates = [text] + [line for line in lines if line.startswith("{")]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _kill_tree(proc: subprocess.Popen[bytes], descendants: Sequence[psutil.Process]) -> None:
    """Kill the probe's process group (POSIX) and every descendant we saw, even ones that left the group."""
    kill_group(proc)
    for child in descendants:
        with contextlib.suppress(psutil.Error):
            child.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    psutil.wait_procs(list(descendants), timeout=5)


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _read_stdout(stream: IO[bytes], sink: bytearray) -> None:
    while True:
        chunk = stream.read(65536)
        if not chunk:
            return
        if len(sink) < MAX_STDOUT_BYTES:
            sink.extend(chunk[: MAX_STDOUT_BYTES - len(sink)])


def _read_stderr(
    stream: IO[bytes],
    tail: list[str],
    progress: list[Mapping[str, Any]],
    on_progress: ProgressCallback | None,
) -> None:
    kept = 0
    for raw in iter(stream.readline, b""):
        line = _decode(raw)
        if line.startswith(PROGRESS_PREFIX):
            try:
                payload = json.loads(line[len(PROGRESS_PREFIX) :])
            except ValueError:
                payload = None
            if isinstance(payload, dict):
                progress.append(payload)
                if on_progress is not None:
                    with contextlib.suppress(Exception):
                        on_progress(payload)
                continue
        tail.append(line)
        kept += len(line)
        while kept > STDERR_TAIL_CHARS and len(tail) > 1:
            kept -= len(tail.pop(0))


def run_python(
    python: Path,
    args: Sequence[str],
    *,
    extra_env: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    on_progress: ProgressCallback | None = None,
    base_env: Mapping[str, str] | None = None,
) -> ProbeResult:
    """Run ``python -I probe.py ARGS`` in its own process group and collect its JSON document.
    ``base_env``: the whole environment under ``extra_env`` (default ``os.environ``)."""
    python = Path(python)
    started = time.monotonic()
    if not python.exists():
        return ProbeResult("missing", f"interpreter not found: {python}", python)
    if python.is_dir():
        return ProbeResult("not_runnable", f"{python} is a folder, not a Python interpreter", python)
    argv = [str(python), "-I", str(probe_script()), *args]
    try:
        proc = popen_own_group(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**(os.environ if base_env is None else base_env), **(extra_env or {})},
            cwd=str(probe_script().parent),
        )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return ProbeResult("not_runnable", f"cannot run {python}: {reason}", python)

    stdout = bytearray()
    tail: list[str] = []
    progress: list[Mapping[str, Any]] = []
    assert proc.stdout is not None and proc.stderr is not None
    readers = [
        threading.Thread(target=_read_stdout, args=(proc.stdout, stdout), daemon=True),
        threading.Thread(target=_read_stderr, args=(proc.stderr, tail, progress, on_progress), daemon=True),
    ]
    timed_out = False
    deadline = started + timeout_s
    seen: dict[int, psutil.Process] = {}

    def note_descendants() -> None:
        for child in _descendants(proc.pid):
            seen.setdefault(child.pid, child)

    try:  # from the moment the probe exists: a Ctrl+C even while the readers start must kill it
        for reader in readers:
            reader.start()
        while True:
            try:
                proc.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                note_descendants()
                if time.monotonic() >= deadline:
                    timed_out = True
                    _kill_tree(proc, list(seen.values()))
                    break
    except BaseException:
        # Ctrl+C on `gputray doctor`: the probe sits in its own process group, so the terminal's
        # SIGINT never reaches it; without this a hung probe would outlive us.
        note_descendants()
        _kill_tree(proc, list(seen.values()))
        raise
    if not timed_out:
        # The probe exited; anything it left behind in its group goes too.
        _kill_tree(proc, list(seen.values()))
    for reader, stream in zip(readers, (proc.stdout, proc.stderr), strict=True):
        reader.join(timeout=5)
        # A process that escaped every kill may still hold the pipe: closing the stream under a
        # blocked reader would wait for that reader's lock forever, so leave it to the daemon thread.
        if not reader.is_alive():
            with contextlib.suppress(OSError):
                stream.close()

    duration_s = time.monotonic() - started
    stderr_tail = "".join(tail)[-STDERR_TAIL_CHARS:]
    returncode = proc.returncode
    common: dict[str, Any] = {
        "python": python,
        "returncode": returncode,
        "stderr_tail": stderr_tail,
        "duration_s": duration_s,
        "progress": tuple(progress),
    }
    if timed_out:
        return ProbeResult(
            "timeout", f"the probe did not finish within {timeout_s:g} s and was stopped", **common
        )
    document = _parse_document(_decode(bytes(stdout)))
    if returncode != 0:
        return ProbeResult("crashed", _crash_message(returncode, stderr_tail), data=document, **common)
    if document is None:
        shown = _decode(bytes(stdout[:200])).strip() or "nothing"
        return ProbeResult(
            "garbage",
            f"{python} did not answer like a Python interpreter running the probe (printed: {shown!r})",
            **common,
        )
    return ProbeResult("ok", "probe finished", data=document, **common)


def _crash_message(returncode: int | None, stderr_tail: str) -> str:
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        what = f"the probe was killed by {name}"
    else:
        what = f"the probe exited with code {returncode}"
    last = next((line.strip() for line in reversed(stderr_tail.splitlines()) if line.strip()), "")
    return f"{what}: {last}" if last else what


def probe_env(
    python: Path,
    *,
    extra_env: Mapping[str, str] | None = None,
    bench: bool = True,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    on_progress: ProgressCallback | None = None,
) -> ProbeResult:
    """The full probe: torch, every device it sees, a real op on each, and the bench when asked."""
    args = ["--bench"] if bench else []
    # The same device order as nvidia-smi and the launcher, not CUDA's fastest-first.
    env = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", **(extra_env or {})}
    return run_python(python, args, extra_env=env, timeout_s=timeout_s, on_progress=on_progress)


def select_probe(
    python: Path, env: Mapping[str, str], *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> ProbeResult:
    """Read back the device a job would get: the probe's ``--select`` run under exactly ``env``."""
    return run_python(python, ["--select"], base_env=env, timeout_s=timeout_s)


def python_version_info(
    python: Path, *, extra_env: Mapping[str, str] | None = None, timeout_s: float = VERSION_TIMEOUT_S
) -> ProbeResult:
    """Quick: is this a Python, which version, which torch is installed (from metadata, no import)."""
    return run_python(python, ["--version-only"], extra_env=extra_env, timeout_s=timeout_s)
