"""NVIDIA's ``cuda-checkpoint``: a paused job's CUDA state moved to host memory, so its VRAM returns.

The tool (https://github.com/NVIDIA/cuda-checkpoint, README; display driver 550 and later, the
separate lock with a timeout from 570) acts on one process at a time:

* ``--get-state --pid P`` prints ``running``, ``locked``, ``checkpointed`` or ``failed``; for a process
  that is not a CUDA one, or where the driver cannot, it fails;
* ``--action lock --pid P --timeout MS`` locks the CUDA driver API (already submitted work completes);
  ``--action checkpoint`` copies device memory to host memory and releases the GPU; ``--action
  restore`` takes the GPU back and copies the memory in; ``--action unlock`` lets CUDA calls go on;
* ``--toggle --pid P`` goes between running and checkpointed in one step (the 550 tool's only way).

A failure is one line on stderr and a non-zero status (the CUDA error code: CRIU's ``cuda_plugin``,
checkpoint-restore/criu PR #2540), e.g. ``Error toggling CUDA in process ID 98145: "operation not
permitted"`` (NVIDIA/cuda-checkpoint issue #25: not root, or no persistence mode), ``... "OS call failed
or operation not supported on this OS"`` (issue #6), ``Could not checkpoint on process ID 17146:
"initialization error"`` (issue #10). It does not support UVM or IPC memory (README, "Functionality").

The order for a pause is lock, checkpoint, then the freeze; for the resume, the thaw, then restore,
unlock (``queue.job_pause``): the tool needs the process's own CUDA thread to answer, which a frozen
process cannot. When a step fails the process is left as it was (unlocked) and the pause goes on with
its GPU memory held; the reason says why (``SuspendOutcome.problem``).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

TOOL = "cuda-checkpoint"
#: How long ``--action lock`` waits for CUDA work in flight (the tool's ``--timeout``, milliseconds).
LOCK_TIMEOUT_MS = 10_000
#: How long one call of the tool may take: a checkpoint copies all of the process's VRAM to host memory.
CALL_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class ToolAnswer:
    """One call of the tool: its status and what it printed (stdout and stderr, stripped)."""

    returncode: int
    text: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def _run_tool(argv: Sequence[str]) -> ToolAnswer:
    try:
        done = subprocess.run(
            list(argv), capture_output=True, timeout=CALL_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return ToolAnswer(124, f"{argv[0]} did not answer within {CALL_TIMEOUT_S:g} s")
    except OSError as exc:
        return ToolAnswer(127, f"{argv[0]}: {exc.strerror or exc}")
    text = (done.stdout + b"\n" + done.stderr).decode("utf-8", "replace").strip()
    return ToolAnswer(done.returncode, text)


@dataclass(frozen=True)
class SuspendOutcome:
    """What became of one process: its CUDA state checkpointed, or why not (``problem``, the tool's
    own words)."""

    pid: int
    checkpointed: bool
    problem: str | None = None


class CudaCheckpoint:
    """The ``cuda-checkpoint`` found on PATH (``found``), called through ``run`` (a stand-in in tests
    is a real program on PATH; ``run`` stays the real subprocess call)."""

    def __init__(self, tool: str, run: Callable[[Sequence[str]], ToolAnswer] = _run_tool) -> None:
        self.tool = tool
        self._run = run

    @classmethod
    def found(cls) -> CudaCheckpoint | None:
        path = shutil.which(TOOL)
        return cls(path) if path is not None else None

    def _call(self, *args: str) -> ToolAnswer:
        return self._run([self.tool, *args])

    def state(self, pid: int) -> str | None:
        """``running``, ``locked``, ``checkpointed`` or ``failed``; None for a process the tool cannot
        act on (not a CUDA process, a driver without checkpoints, no permission)."""
        answer = self._call("--get-state", "--pid", str(pid))
        words = answer.text.split()
        return words[-1] if answer.ok and words else None

    def suspend(self, pid: int) -> SuspendOutcome:
        """Lock and checkpoint one running CUDA process; where the tool has no separate lock (550),
        ``--toggle``. A failed checkpoint is unlocked again: the process keeps its GPU memory."""
        lock = self._call("--action", "lock", "--pid", str(pid), "--timeout", str(LOCK_TIMEOUT_MS))
        if not lock.ok:
            if not _no_such_action(lock.text):
                return SuspendOutcome(pid, False, _said(lock))
            toggle = self._call("--toggle", "--pid", str(pid))
            return SuspendOutcome(pid, toggle.ok, None if toggle.ok else _said(toggle))
        checkpoint = self._call("--action", "checkpoint", "--pid", str(pid))
        if checkpoint.ok:
            return SuspendOutcome(pid, True)
        self._call("--action", "unlock", "--pid", str(pid))
        return SuspendOutcome(pid, False, _said(checkpoint))

    def resume(self, pid: int) -> str | None:
        """Restore and unlock one checkpointed process (``--toggle`` where there is no ``--action``);
        None when it runs on the GPU again, else the tool's words."""
        restore = self._call("--action", "restore", "--pid", str(pid))
        if not restore.ok and _no_such_action(restore.text):
            toggle = self._call("--toggle", "--pid", str(pid))
            return None if toggle.ok else _said(toggle)
        if not restore.ok:
            return _said(restore)
        unlock = self._call("--action", "unlock", "--pid", str(pid))
        return None if unlock.ok else _said(unlock)


def _no_such_action(text: str) -> bool:
    """The tool of a 550 driver knows no ``--action`` (it prints its usage)."""
    lowered = text.lower()
    return "unrecognized" in lowered or "unknown option" in lowered or "invalid option" in lowered


def _said(answer: ToolAnswer) -> str:
    """The tool's last line, what it says went wrong (or its status when it printed nothing)."""
    lines = [line for line in answer.text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else f"{TOOL} exited with status {answer.returncode}"
