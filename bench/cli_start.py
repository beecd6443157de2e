"""CLI start: the wall time of each `gputray` command that talks to the owner, beside the bare interpreter
(`python -c pass`; `python -I -S`, without `site`; the "client floor": msgspec, argparse and socket
loaded and one raw request answered, what any client of this protocol pays) and task-spooler's
`tsp -l`.

A real `gputray daemon --demo` owns a throw-away queue, paused, with a few tasks in it. Its folders are
in a temp dir through the XDG variables (not GPUTRAY_HOME), so each command finds them as a user's
does: through platformdirs, or what an earlier command remembered of its answer (`paths_cache`).
Each round runs every command once, one after another (interleaved, so a burst of load from
elsewhere lands on all of them alike), through the installed console script `gputray`, as a
person or a script calls it; the figure is the median over the rounds (and the fastest round, the
closest to an idle machine). PYTHONDONTWRITEBYTECODE is dropped for the commands: an installed
gputray has its bytecode compiled (pip does it), and compiling our sources on every start would
measure the compiler. The load average before and after is printed: on a machine busy with other
work the wall times mean little (a command waits its turn for a core), so each command's CPU time
(user + system, from the kernel's accounting of the child) is printed beside them: what it costs,
whatever the load.

Goal (issue 31): every command that talks to the owner at most 50 ms median wall on CI's 2-core machine.
Usage: python bench/cli_start.py [ROUNDS]   (default 21)
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from daemon_harness import BenchDaemon

from gputray.scheduler import ipc

GOAL_MS = 50.0
#: What any client of this protocol costs before a line of gputray runs: msgspec (without
#: typing_extensions, as ``gui.entry`` imports it), argparse, socket and pathlib, and one raw ``queue``
#: request and its reply over the owner's socket (``python -I -S``: the interpreter without ``site``).
FLOOR = (
    "import sys; sys.modules['typing_extensions'] = None\n"
    "import msgspec; del sys.modules['typing_extensions']\n"
    "import argparse, pathlib, socket, struct\n"
    "s = socket.socket(socket.AF_UNIX); s.connect({socket!r})\n"
    "b = msgspec.json.encode({{'op': 'queue', 'args': {{}}, 'v': {version}}})\n"
    "s.sendall(struct.pack('>I', len(b)) + b); n = struct.unpack('>I', s.recv(4))[0]\n"
    "while n > 0: n -= len(s.recv(n))\n"
)
TASK_FILE = 'name = "bench"\nkind = "command"\nargv = ["true"]\n'


def gputray_argv() -> list[str]:
    """The console script beside this interpreter (what `pip install` puts on PATH), else `-m`."""
    script = Path(sys.executable).parent / "gputray"
    return [str(script)] if script.exists() else [sys.executable, "-m", "gputray.gui.entry"]


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """Wall and CPU milliseconds of one command, its exit status and what it said on stderr."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    said = proc.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall_ms = (time.perf_counter() - start) * 1000
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    return wall_ms, (usage.ru_utime + usage.ru_stime) * 1000, proc.returncode, said


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    with BenchDaemon(xdg=True) as daemon:
        env = {k: v for k, v in daemon.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        gputray = gputray_argv()
        task_file = daemon.home / "bench.toml"
        task_file.write_text(TASK_FILE)

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*gputray, *args], env=env, capture_output=True, text=True, check=False)

        cli("pause")  # nothing runs: the tasks stay where each round's commands expect them
        ids = [json.loads(cli("run", "--json", "--", "true").stdout)[0]["id"] for _ in range(rounds + 1)]

        def commands(task: int) -> dict[str, list[str]]:
            """One round: the task ``task`` is edited, moved, cancelled, retried, cancelled, removed."""
            t = str(task)
            return {
                "queue": ["queue"],
                "queue --json": ["queue", "--json"],
                "status": ["status"],
                "submit --task FILE": ["submit", "--task", str(task_file)],
                "run -- true": ["run", "--", "true"],
                "edit --priority": ["edit", t, "--priority", "5"],
                "move --top": ["move", t, "--top"],
                "cancel": ["cancel", t],
                "retry": ["retry", t],
                "cancel again": ["cancel", t],
                "wait (ended)": ["wait", t],
                "logs": ["logs", t],
                "remove": ["remove", t],
                "resume": ["resume"],
                "pause": ["pause"],
                "schedule list": ["schedule", "list"],
            }

        timed: dict[str, list[float]] = {name: [] for name in commands(0)}
        timed["python -c pass"] = []
        timed["python -I -S"] = []
        timed["client floor"] = []
        tsp = shutil.which("tsp")
        if tsp:
            timed["tsp -l"] = []
        floor = FLOOR.format(socket=str(ipc.socket_path(daemon.paths)), version=ipc.PROTOCOL_VERSION)
        baselines = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -I -S": [sys.executable, "-I", "-S", "-c", "pass"],
            "client floor": [sys.executable, "-c", floor],
            "tsp -l": [tsp or "tsp", "-l"],
        }
        failures: dict[str, str] = {}
        cpu: dict[str, list[float]] = {name: [] for name in timed}
        for argv in commands(ids[-1]).values():  # warm-up: bytecode written, files in the page cache
            subprocess.run([*gputray, *argv], env=env, capture_output=True, check=False)
        load_before = load()
        for r in range(rounds):
            for name, argv in [*commands(ids[r]).items(), *((b, None) for b in baselines if b in timed)]:
                full = baselines[name] if argv is None else [*gputray, *argv]
                wall_ms, cpu_ms, status, said = run_once(full, env)
                timed[name].append(wall_ms)
                cpu[name].append(cpu_ms)
                if status not in (0, 1) and name not in failures:  # 1: a refusal is an answer too
                    failures[name] = f"exit {status}: {said[:200]}"
        load_after = load()

    print(
        f"cli_start: {rounds} rounds, {os.cpu_count()} CPUs, "
        f"load average {load_before} before, {load_after} after"
    )
    print(f"{'command':<18} {'median':>9} {'fastest':>9} {'CPU':>9}   goal (median wall)")
    for name, values in timed.items():
        median, fastest, used = statistics.median(values), min(values), statistics.median(cpu[name])
        baseline = name in baselines
        verdict = "(baseline)" if baseline else ("ok" if median <= GOAL_MS else "OVER")
        goal = "" if baseline else f"<= {GOAL_MS:.0f} ms "
        print(f"{name:<18} {median:7.1f} ms {fastest:6.1f} ms {used:6.1f} ms   {goal}{verdict}")
    if not tsp:
        print("tsp -l: not measured, tsp is not installed (Debian: apt-get install task-spooler)")
    for name, why in failures.items():
        print(f"{name}: did not answer as expected ({why})")
    return 0  # the scripts print, they never assert (docs/benchmarks.md)


if __name__ == "__main__":
    raise SystemExit(main())
