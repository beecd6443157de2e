"""CLI start: the wall time of each `gputray` command that talks to the owner, beside the bare interpreter
(`python -c pass`; `python -I -S`, without `site`; the "client floor": msgspec, argparse and socket
loaded and one raw request answered, what any client of this protocol pays in its own process) and
task-spooler's `tsp -l`.

A real `gputray daemon --demo` owns a throw-away queue, paused, with a few tasks in it, and starts its
warm command server (``gui/quick_server.py``); the bench waits until it listens. Its folders are in a
temp dir through the XDG variables (not GPUTRAY_HOME), so each command finds them as a user's does:
through platformdirs, or what an earlier command remembered of its answer (`paths_cache`). Each command
runs twice per round: handed to the warm server (what a user gets) and in its own process
(``GPUTRAY_QUICK=0``, as before the server existed), through the console script `gputray`, as a
person or a script calls it. Each round runs every command once, one after another (interleaved, so a
burst of load from elsewhere lands on all of them alike); the figure is the median over the rounds
(and the fastest round, the closest to an idle machine). PYTHONDONTWRITEBYTECODE is dropped for the
commands: an installed gputray has its bytecode compiled (pip does it), and compiling our sources on
every start would measure the compiler. The load average before and after is printed, and each
command's CPU time (user + system, from the kernel's accounting of the child): for a command handed
over, that is the calling process only; its work is done in the server's forked copy.

``--installed``: the commands and the daemon run from a regular install (a wheel of this checkout in a
fresh venv, as `pip install gputray` leaves it), not this checkout's editable one, whose import finder
alone costs every Python start ~20 ms (pathlib, re, urllib.parse, fnmatch, before a line of gputray).

Goal (issue 31): every command that talks to the owner at most 50 ms median wall on CI's 2-core machine.
Usage: python bench/cli_start.py [ROUNDS] [--installed]   (default 21 rounds)
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


def regular_install(into: Path) -> str:
    """A fresh venv with a wheel of this checkout (its dependencies from this interpreter's
    site-packages, added by a .pth: a path a .pth adds is not scanned for .pth files, so this
    checkout's editable finder stays out). Returns its Python."""
    import sysconfig

    wheels = into / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels),
         str(Path(__file__).resolve().parent.parent)],
        check=True,
    )  # fmt: skip
    venv = into / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(site, "zz_bench_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (wheel,) = wheels.glob("gputray-*.whl")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site, str(wheel)], check=True
    )
    Path(venv / "bin" / "gputray").write_text(
        f"#!{python}\nimport sys\nfrom gputray.gui.entry import main\nsys.exit(main())\n"
    )
    Path(venv / "bin" / "gputray").chmod(0o755)
    subprocess.run([str(python), "-m", "compileall", "-q", site], check=True)
    return str(python)


def main() -> int:
    import tempfile

    words = [w for w in sys.argv[1:] if w != "--installed"]
    rounds = int(words[0]) if words else 21
    with tempfile.TemporaryDirectory(prefix="gputray-bench-install-") as scratch:
        python = regular_install(Path(scratch)) if "--installed" in sys.argv[1:] else sys.executable
        return measure(rounds, python)


def measure(rounds: int, python: str) -> int:
    installed = python != sys.executable
    with BenchDaemon(xdg=True, python=python) as daemon:
        env = {k: v for k, v in daemon.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        script = Path(python).parent / "gputray"
        gputray = [str(script)] if script.exists() else [python, "-m", "gputray.gui.entry"]
        task_file = daemon.home / "bench.toml"
        task_file.write_text(TASK_FILE)

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*gputray, *args], env=env, capture_output=True, text=True, check=False)

        cli("pause")  # nothing runs: the tasks stay where each round's commands expect them
        ids = [json.loads(cli("run", "--json", "--", "true").stdout)[0]["id"] for _ in range(2 * rounds + 1)]
        address = daemon.paths.data_dir / "quick.address"
        deadline = time.monotonic() + 60
        while not address.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        server = "listening" if address.exists() else "NOT listening (every command runs in its own process)"

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

        modes = {"warm server": {**env, "GPUTRAY_QUICK": "1"}, "own process": {**env, "GPUTRAY_QUICK": "0"}}
        timed: dict[tuple[str, str], list[float]] = {(n, m): [] for n in commands(0) for m in modes}
        tsp = shutil.which("tsp")
        floor = FLOOR.format(socket=str(ipc.socket_path(daemon.paths)), version=ipc.PROTOCOL_VERSION)
        baselines = {
            "python -c pass": [python, "-c", "pass"],
            "python -I -S": [python, "-I", "-S", "-c", "pass"],
            "client floor": [python, "-c", floor],
            **({"tsp -l": [tsp, "-l"]} if tsp else {}),
        }
        timed |= {(b, ""): [] for b in baselines}
        failures: dict[str, str] = {}
        cpu: dict[tuple[str, str], list[float]] = {key: [] for key in timed}
        for argv in commands(ids[-1]).values():  # warm-up: bytecode written, files in the page cache
            subprocess.run([*gputray, *argv], env=env, capture_output=True, check=False)
        load_before = load()
        for r in range(rounds):
            for m, (mode, mode_env) in enumerate(modes.items()):
                for name, argv in commands(ids[2 * r + m]).items():
                    wall_ms, cpu_ms, status, said = run_once([*gputray, *argv], mode_env)
                    timed[name, mode].append(wall_ms)
                    cpu[name, mode].append(cpu_ms)
                    if status not in (0, 1) and name not in failures:  # 1: a refusal is an answer too
                        failures[f"{name} ({mode})"] = f"exit {status}: {said[:200]}"
            for name, argv in baselines.items():
                wall_ms, cpu_ms, _, _ = run_once(argv, env)
                timed[name, ""].append(wall_ms)
                cpu[name, ""].append(cpu_ms)
        load_after = load()

    kind = "a regular install (wheel in a fresh venv)" if installed else "this checkout's editable install"
    print(
        f"cli_start: {rounds} rounds, {os.cpu_count()} CPUs, load average {load_before} before, "
        f"{load_after} after; {kind}; warm command server {server}"
    )
    print(
        f"{'command':<18} {'median':>9} {'fastest':>9} {'CPU':>8}   goal (median wall)   "
        f"| own process: {'median':>9} {'fastest':>9} {'CPU':>8}"
    )

    def figures(key: tuple[str, str]) -> str:
        values = timed[key]
        return (
            f"{statistics.median(values):7.1f} ms {min(values):6.1f} ms {statistics.median(cpu[key]):5.1f} ms"
        )

    for name in commands(0):
        median = statistics.median(timed[name, "warm server"])
        verdict = "ok" if median <= GOAL_MS else "OVER"
        print(
            f"{name:<18} {figures((name, 'warm server'))}   <= {GOAL_MS:.0f} ms {verdict:<4}      "
            f"| {figures((name, 'own process'))}"
        )
    for name in baselines:
        print(f"{name:<18} {figures((name, ''))}   (baseline)")
    if not tsp:
        print("tsp -l: not measured, tsp is not installed (Debian: apt-get install task-spooler)")
    for name, why in failures.items():
        print(f"{name}: did not answer as expected ({why})")
    return 0  # the scripts print, they never assert (docs/benchmarks.md)


if __name__ == "__main__":
    raise SystemExit(main())
