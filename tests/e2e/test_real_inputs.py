"""Inputs a real user has, through the real CLI and daemon to the job's real environment and argv: an
environment of hundreds of variables, a value far over 32 KiB, bytes that are not UTF-8 in a value,
an argument and the working folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_daemon_e2e import Daemon
from waiting import wait_for

from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.client import caller_environment

PY = sys.executable
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX bytes in names and values"),
]

# Writes what it got, as bytes (hex), so nothing is decoded on the way.
SHOWS = (
    "import json, os, sys\n"
    "out = {'argv': [os.fsencode(a).hex() for a in sys.argv[1:]], 'cwd': os.getcwdb().hex(),\n"
    "       'env': {k.hex(): v.hex() for k, v in os.environb.items()}}\n"
    "open(os.environ['REPORT'], 'w').write(json.dumps(out))\n"
)


def test_a_real_environment_and_odd_bytes_reach_the_job_unchanged(
    daemons: Callable[..., Daemon], home: Path, tmp_path: Path
) -> None:
    d = daemons()
    report = tmp_path / "report.json"
    odd = b"caf\xe9 \xff\xfe"  # Latin-1 and stray bytes: not UTF-8
    folder = tmp_path / os.fsdecode(b"dossier-\xe9")
    folder.mkdir()
    env = {
        **d.env,
        **{f"MANY_{i}": f"value {i}" for i in range(300)},  # more than 256 variables
        "BIG": "x" * (100 * 1024),  # far over 32 KiB
        "ODD": os.fsdecode(odd),
        "REPORT": str(report),
    }
    out = subprocess.run(
        [PY, "-m", "gputray.gui.entry", "run", "--device", "cpu", "--", PY, "-c", SHOWS, os.fsdecode(odd)],
        env=env,
        cwd=folder,
        capture_output=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    queued = re.match(rb"#(\d+) ", out.stdout)
    assert queued, out.stdout
    wait_for(report.exists, 40, "the job to write what it got")
    got = json.loads(report.read_text())
    env_got = {bytes.fromhex(k): bytes.fromhex(v) for k, v in got["env"].items()}
    assert [bytes.fromhex(a) for a in got["argv"]] == [odd]
    assert bytes.fromhex(got["cwd"]) == os.fsencode(folder)
    assert env_got[b"ODD"] == odd
    assert env_got[b"BIG"] == b"x" * (100 * 1024)
    assert all(env_got[f"MANY_{i}".encode()] == f"value {i}".encode() for i in range(300))
    assert d.wait_state(int(queued.group(1)), {"succeeded"}).exit_code == 0
    listing = d.cli("queue", "--all")  # the task's name and folder print, odd bytes and all
    assert listing.returncode == 0, listing.stderr
    logged = d.stderr_text()
    assert "Traceback" not in logged and "Logging error" not in logged, logged[-3000:]


SHOW_RECIPE = """
[[recipe]]
name = "show"
patterns = ["*.txt"]
kind = "command"
argv = ["cat", "{file}"]
devices = ["cpu"]
"""


def test_a_file_name_that_is_not_utf8_is_queued_beside_good_ones_and_run_with_its_bytes(
    daemons: Callable[..., Daemon], home: Path, tmp_path: Path
) -> None:
    """café.txt named in Latin-1 failed its submit and every submit in the same group commit
    ("UnicodeEncodeError … surrogates not allowed", the store's name column)."""
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "recipes.toml").write_text(SHOW_RECIPE)
    d = daemons()
    folder = tmp_path / "inputs"
    folder.mkdir()
    latin = os.fsencode(folder) + b"/caf\xe9.txt"  # Latin-1 é: not UTF-8
    with open(latin, "wb") as f:
        f.write(b"bytes of the latin-1 file\n")
    for i in range(6):
        (folder / f"good-{i}.txt").write_text(f"good {i}\n")
    cli = [PY, "-m", "gputray.gui.entry", "submit", "--json"]
    # Several clients at once: their submits share group commits with the odd one.
    procs = [
        subprocess.Popen(
            [*cli, latin, folder / "good-0.txt"], env=d.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    ]
    procs += [
        subprocess.Popen(
            [*cli, folder / f"good-{i}.txt"], env=d.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for i in range(1, 6)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err.decode(errors="replace")
    odd_doc = json.loads(outs[0][0])
    assert [t["name"] for t in odd_doc] == ["show: caf\udce9.txt", "show: good-0.txt"]
    assert b"caf\\udce9.txt" in outs[0][0]  # --json: a surrogate escape, as Python's json writes it
    odd_id = odd_doc[0]["id"]
    ids = [t["id"] for out, _ in outs for t in json.loads(out)]
    assert len(ids) == 7
    for task_id in ids:
        assert d.wait_state(task_id, {"succeeded"}).exit_code == 0
    log = (home / "data" / "logs" / f"task-{odd_id}.log").read_bytes()
    assert log.endswith(b"bytes of the latin-1 file\n")  # cat opened the real name
    assert b'"/' + latin.lstrip(b"/") + b'"' in log  # the argv line carries the name's bytes
    listing = d.cli("queue", "--all")
    assert listing.returncode == 0 and "show: caf\\xe9.txt" in listing.stdout, listing
    d.stop()  # the store keeps the name as it was submitted
    again = daemons()
    assert again.task(odd_id).name == "show: caf\udce9.txt"


def test_variables_that_cannot_travel_are_left_out_one_by_one_with_a_note() -> None:
    env, notes = caller_environment(
        {
            "FINE": "yes",
            "HUGE": "y" * (200 * 1024),
            os.fsdecode(b"N\xff"): "odd name",
            "ODD": os.fsdecode(b"\xff"),
        }
    )
    assert env["FINE"] == "yes" and env["ODD"] == rq.RawText(b64="/w==")
    assert "HUGE" not in env and any("HUGE (200 KiB) is left out" in n and "128 KiB" in n for n in notes)
    assert any("its name is not UTF-8" in n for n in notes) and len(env) == 2


def test_task_files_that_are_not_small_regular_files_are_refused_and_the_owner_stays_well(
    daemons: Callable[..., Daemon], home: Path, tmp_path: Path
) -> None:
    """A FIFO used to hold a handler forever, /dev/zero took the owner from 29 to 1,388 MiB."""
    import psutil

    d = daemons()
    assert d.proc is not None
    rss_before = psutil.Process(d.proc.pid).memory_info().rss
    fifo = tmp_path / "task.toml"
    os.mkfifo(fifo)
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * (2 << 20) + b"\n")
    cases = [
        (fifo, "not a regular file (a FIFO)"),
        (Path("/dev/zero"), "not a regular file (a device or socket)"),
        (big, "too large (2.0 MiB); a task file may be at most 1 MiB"),
        (tmp_path, "not a regular file (a folder)"),
    ]
    for path, said in cases:
        out = d.cli("submit", "--task", str(path))
        assert out.returncode == 1 and said in out.stderr, (path, out.stderr)
    assert d.ask(rq.Ping()).ready is True
    rss_after = psutil.Process(d.proc.pid).memory_info().rss
    assert rss_after - rss_before < 64 << 20  # it never read them in
