"""Real resident processes for the tests: ``fixtures/residents/resident_stub.py`` started so that its
process looks like the real program (a symlink to the interpreter named ``ollama``, ``llama-server``…;
ComfyUI as ``python …/ComfyUI/main.py``), serving that resident's API on 127.0.0.1 and holding memory
on the simulated GPU until its free call arrives."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from waiting import wait_for

STUB = Path(__file__).parent / "fixtures" / "residents" / "resident_stub.py"
PROGRAM = {
    "ollama": "ollama",
    "llama-server": "llama-server",
    "llama-swap": "llama-swap",
    "lmstudio": "lmstudio",
}


@dataclass
class Resident:
    proc: subprocess.Popen[bytes]
    port: int
    calls_file: Path

    def calls(self) -> list[dict[str, object]]:
        if not self.calls_file.exists():
            return []
        return [json.loads(line) for line in self.calls_file.read_text().splitlines() if line.strip()]

    def paths_called(self, method: str) -> list[str]:
        return [str(c["path"]) for c in self.calls() if c["method"] == method]


@contextlib.contextmanager
def resident(
    tmp_path: Path,
    api: str,
    *,
    holds: Path,
    hold_gib: float = 12.0,
    busy: bool = False,
    program: str | None = None,
) -> Iterator[Resident]:
    """``api``'s stub running as a process named like the real one (``program`` overrides the name)."""
    where = tmp_path / f"resident-{api}-{len(list(tmp_path.glob('resident-*')))}"
    where.mkdir()
    holds.mkdir(exist_ok=True)
    if api == "comfyui" and program is None:
        script = where / "ComfyUI" / "main.py"
        script.parent.mkdir()
        shutil.copy(STUB, script)
        argv = [sys.executable, str(script)]
    else:
        link = where / (program or PROGRAM[api])
        link.symlink_to(sys.executable)
        argv = [str(link), str(STUB)]
    port_file, calls = where / "port", where / "calls.jsonl"
    argv += [api, "--port-file", str(port_file), "--calls", str(calls), "--hold-gib", str(hold_gib)]
    proc = subprocess.Popen(
        [*argv, *(["--busy"] if busy else [])], env={**os.environ, "GPUTRAY_SIM_HOLDS": str(holds)}
    )
    try:
        wait_for(lambda: port_file.exists() or proc.poll() is not None, what=f"the {api} stub to listen")
        assert proc.poll() is None, f"the {api} stub exited with {proc.returncode}"
        yield Resident(proc, int(port_file.read_text()), calls)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
