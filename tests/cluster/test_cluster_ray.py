"""Two machines' gputray on a real Ray cluster on this machine (see tests/cluster_harness.py).

Machine ``desk``: its GeForce RTX 5060 Ti held by an external llama-server, no 780M. Machine
``laptop``: an idle Radeon 780M. One Ray cluster (a head and a node per machine, 127.0.0.1 only,
token authentication on, no dashboard) and one owner per machine serve every test of this module,
in order; the last tests take a node away and stop the head.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from cluster_harness import (
    PY,
    Machine,
    RayCluster,
    desk_and_laptop,
    ray_available,
)
from torch_venv import torch_venv_python
from waiting import wait_for

from gputray.scheduler import protocol as rq
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import TaskView

_why_not = ray_available()
pytestmark = [
    pytest.mark.skipif(_why_not is not None, reason=f"needs a real Ray cluster: {_why_not}"),
    pytest.mark.slow,
    pytest.mark.timeout(240),
]

DESK_GPU = "desk/pci:0000:01:00.0"
LAPTOP_GPU = "laptop/pci:0000:64:00.0"
STEPS_JOB = textwrap.dedent(
    """
    import os, pathlib, sys, time
    print("on", os.environ.get("GPUTRAY_DEVICE"), flush=True)
    for i in range(3):
        print("step", i, flush=True)
        time.sleep(1.0)
    pathlib.Path("result.txt").write_text("done by " + os.environ.get("GPUTRAY_DEVICE", "?") + "\\n")
    print("wrote result.txt", flush=True)
    """
)
# Runs until told to stop: a file "stop" beside it (in its working folder) ends it.
LONG_JOB = textwrap.dedent(
    """
    import os, pathlib, time
    print("started", os.getpid(), flush=True)
    for _ in range(1200):
        if pathlib.Path("stop").exists():
            break
        time.sleep(0.1)
    pathlib.Path("long-result.txt").write_text(os.environ.get("GPUTRAY_DEVICE", "?"))
    print("finished", flush=True)
    """
)

# Runs until a file "go" appears beside it, then exits with status 3.
GATED_JOB = textwrap.dedent(
    """
    import pathlib, sys, time
    print("gated: waiting for go", flush=True)
    for _ in range(1200):
        if pathlib.Path("go").exists():
            break
        time.sleep(0.1)
    print("gated: exit 3", flush=True)
    sys.exit(3)
    """
)
SHOW_ENV = (
    "import os; e = os.environ; print('GREETING', e.get('GREETING'), 'SECRET', e.get('SUBMITTER_SECRET'))"
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RayCluster, Machine, Machine]]:
    root = tmp_path_factory.mktemp("cluster")
    shared = root / "shared"
    shared.mkdir()
    torch = torch_venv_python()  # a .py is a torch job: it runs in an env with torch (CPU build)
    with desk_and_laptop(root, shared, torch) as world:
        yield world


def _json(done: subprocess.CompletedProcess[str]) -> object:
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def _submitted_id(done: subprocess.CompletedProcess[str]) -> int:
    tasks = _json(done)
    assert isinstance(tasks, list)
    return int(tasks[0]["id"])


def _state(m: Machine, task_id: int, states: set[str], timeout_s: float = 60.0) -> TaskView:
    return wait_for(
        lambda: (t := m.task(task_id)).state in states and t,
        timeout_s,
        f"{m.name} task {task_id} to reach {states}; now {m.task(task_id)}; logs:\n{m.logs()}",
    )


def _inbound(m: Machine, origin_prefix: str) -> list[TaskView]:
    tasks = m.ask(rq.Queue(all=True)).tasks
    return [t for t in tasks if str(t.origin or "").startswith(origin_prefix)]


def test_cluster_status_lists_both_machines_their_gpus_and_token_auth(
    world: tuple[RayCluster, Machine, Machine],
) -> None:
    _, desk, _ = world
    doc = _json(desk.cli("cluster", "status", "--json"))
    assert isinstance(doc, dict)
    assert doc["state"] == "connected" and doc["token_auth"] is True
    assert doc["ray_version"] == "2.60.0"
    machines = {m["name"]: m for m in doc["machines"]}
    assert machines["desk"]["local"] and machines["laptop"]["online"]
    assert machines["laptop"]["gpus"] == ["Radeon 780M"]
    assert machines["desk"]["gpus"] == ["GeForce RTX 5060 Ti"]

    status = _json(desk.cli("status", "--cluster", "--json"))
    assert isinstance(status, dict)
    keys = {d["key"]: d for d in status["devices"]}
    assert set(keys) == {DESK_GPU, LAPTOP_GPU}  # unique across machines
    assert keys[DESK_GPU]["machine"] == "desk" and keys[DESK_GPU]["busy"] is True
    assert "llama-server" in " ".join(keys[DESK_GPU]["reasons"])  # the external use, as desk sees it
    assert keys[LAPTOP_GPU]["machine"] == "laptop" and keys[LAPTOP_GPU]["busy"] is False
    text = desk.cli("status", "--cluster").stdout
    assert "desk (this machine)" in text and "laptop" in text and "Radeon 780M" in text


def test_a_script_with_machine_any_runs_on_the_other_machines_free_gpu(
    world: tuple[RayCluster, Machine, Machine],
) -> None:
    _, desk, laptop = world
    job = desk.work / "job.py"
    job.write_text(STEPS_JOB, encoding="utf-8")
    args = ("submit", str(job), "--machine", "any", "--device", "5060ti,780m", "--on-busy", "redirect")
    task_id = _submitted_id(desk.cli(*args, "--json"))

    # the log streams here while it runs there
    wait_for(
        lambda: desk.task(task_id).state == "running" and "step 0" in desk.ask(rq.Logs(id=task_id)).text,
        60,
        f"desk to show the running job's first lines: {desk.task(task_id)}",
    )
    follow = desk.cli("logs", str(task_id), "--follow")
    assert follow.returncode == 0, follow.stderr
    assert "step 2" in follow.stdout and "wrote result.txt" in follow.stdout

    done = _state(desk, task_id, {"succeeded"})
    assert done.machine == "laptop" and isinstance(done.remote_id, int)
    assert done.device == LAPTOP_GPU
    doc = _json(desk.cli("queue", "--all", "--json"))
    assert isinstance(doc, dict)  # {"tasks": [...], "queue": {...}, "devices": [...]}
    listing = {t["id"]: t for t in doc["tasks"]}
    assert listing[task_id]["machine"] == "laptop" and listing[task_id]["remote_id"] == done.remote_id
    assert listing[task_id]["origin"] is None  # it was submitted here

    # the result lands beside the input here, with the log
    assert (desk.work / "result.txt").read_text() == "done by pci:0000:64:00.0\n"
    assert "step 2" in (desk.work / "job.log").read_text()
    # ... and the laptop ran it once, in its own queue, and kept no copy of the files
    (theirs,) = [t for t in _inbound(laptop, f"desk#{task_id}.")]
    assert theirs.state == "succeeded" and theirs.device == "pci:0000:64:00.0"
    assert not any((laptop.paths.data_dir / "cluster" / "inbox").iterdir())

    # the same again: the first result is never overwritten
    again = _submitted_id(desk.cli(*args, "--json"))
    _state(desk, again, {"succeeded"})
    wait_for(lambda: (desk.work / "result (2).txt").exists(), 30, "the second result beside the first")
    assert (desk.work / "result.txt").read_text() == "done by pci:0000:64:00.0\n"


def test_inputs_travel_in_chunks_and_arrive_whole(world: tuple[RayCluster, Machine, Machine]) -> None:
    import hashlib

    _, desk, _ = world
    blob = desk.work / "data" / "blob.bin"
    blob.parent.mkdir(exist_ok=True)
    payload = hashlib.sha256(b"seed").digest() * ((20 << 20) // 32) + b"end"  # 20 MiB: three chunks
    blob.write_bytes(payload)
    (desk.work / "hash.py").write_text(
        "import hashlib, pathlib, sys\n"
        "data = pathlib.Path(sys.argv[1]).read_bytes()\n"
        "pathlib.Path('data/hash.txt').write_text(hashlib.sha256(data).hexdigest())\n",
        encoding="utf-8",
    )
    args = ("run", "--machine", "laptop", "--device", "780m", "--json", "--", PY, "hash.py", "data/blob.bin")
    task_id = _submitted_id(desk.cli(*args))
    _state(desk, task_id, {"succeeded"})
    wait_for(lambda: (desk.work / "data" / "hash.txt").exists(), 30, "the result beside its input")
    assert (desk.work / "data" / "hash.txt").read_text() == hashlib.sha256(payload).hexdigest()
    assert blob.read_bytes() == payload  # the input itself is never written back over


def test_cancel_on_the_submitter_stops_the_job_on_the_other_machine(
    world: tuple[RayCluster, Machine, Machine],
) -> None:
    _, desk, laptop = world
    (desk.work / "long.py").write_text(LONG_JOB, encoding="utf-8")
    task_id = _submitted_id(
        desk.cli("run", "--machine", "laptop", "--device", "780m", "--json", "--", PY, "long.py")
    )
    _state(desk, task_id, {"running"})
    (theirs,) = _inbound(laptop, f"desk#{task_id}.")
    pid = laptop.ask(rq.Get(id=theirs.id)).pid
    assert pid is not None and psutil.pid_exists(pid)

    out = desk.cli("cancel", str(task_id))
    assert out.returncode == 0, out.stderr
    assert desk.task(task_id).state == "cancelled"
    wait_for(lambda: laptop.task(int(theirs.id)).state == "cancelled", 30, "the laptop's copy to stop")
    wait_for(
        lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie", 15, "its process"
    )


def test_inputs_over_the_transfer_limit_are_refused_unless_in_a_shared_folder(
    world: tuple[RayCluster, Machine, Machine],
) -> None:
    _, desk, _ = world
    reader = "import os, sys; print('size', os.path.getsize(sys.argv[1]))"
    big = desk.work / "big.bin"
    with big.open("wb") as f:
        f.truncate(3 << 30)  # sparse: 3 GiB on paper, nothing on disk
    refused = desk.cli("run", "--machine", "laptop", "--device", "780m", "--", PY, "-c", reader, "big.bin")
    assert refused.returncode == 1
    assert "max_transfer" in refused.stderr and "shared" in refused.stderr and "3.0 GiB" in refused.stderr
    assert "laptop" in refused.stderr

    shared_big = desk.home.parent / "shared" / "big.bin"
    with shared_big.open("wb") as f:
        f.truncate(3 << 30)
    task_id = _submitted_id(
        desk.cli(
            "run",
            "--machine",
            "laptop",
            "--device",
            "780m",
            "--json",
            "--",
            PY,
            "-c",
            reader,
            str(shared_big),
        )
    )
    _state(desk, task_id, {"succeeded"})
    assert f"size {3 << 30}" in desk.ask(rq.Logs(id=task_id)).text  # read in place on the laptop
    os.unlink(big)
    os.unlink(shared_big)


def test_wait_after_and_env_work_across_machines_and_the_submitters_environment_stays_here(
    world: tuple[RayCluster, Machine, Machine],
) -> None:
    _, desk, laptop = world
    (desk.work / "gated.py").write_text(GATED_JOB, encoding="utf-8")
    first = _submitted_id(
        desk.cli("run", "--machine", "laptop", "--device", "780m", "--json", "--", PY, "gated.py")
    )
    _state(desk, first, {"running"})
    second = _submitted_id(
        desk.cli(
            *("run", "--machine", "laptop", "--device", "cpu", "--after", str(first), "--after-any"),
            *("--env", "GREETING=hello there", "--json", "--", PY, "-c", SHOW_ENV),
            env={"SUBMITTER_SECRET": "s3cret"},  # in the submitting shell only
        )
    )
    # held here until the first has ended: not handed to the laptop meanwhile
    wait_for(
        lambda: render(desk.task(second).reason).startswith(f"waits for #{first} "),
        30,
        f"#{second} to wait for #{first}: {desk.task(second)}",
    )
    assert desk.task(first).state == "running" and not _inbound(laptop, f"desk#{second}.")

    waiting = subprocess.Popen(  # `gputray wait` on the remote task, from before it ends
        [PY, "-m", "gputray.gui.entry", "wait", str(first)],
        env=desk.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    (theirs,) = _inbound(laptop, f"desk#{first}.")
    Path(laptop.ask(rq.Get(id=theirs.id)).spec.cwd, "go").write_text("")
    out, err = waiting.communicate(timeout=90)
    assert waiting.returncode == 3, out + err  # the job's own exit status, from the other machine
    assert ": failed (exit 3)" in out and f"#{first} " in out

    done = _state(desk, second, {"succeeded"})
    assert done.machine == "laptop" and done.device == "laptop/cpu"
    # the task's --env went with it; the submitting shell's environment did not
    assert "GREETING hello there SECRET None" in desk.ask(rq.Logs(id=second)).text
    both = desk.cli("wait", str(first), str(second))
    assert both.returncode == 3, both.stdout + both.stderr


def test_the_submitter_going_down_leaves_the_remote_job_running_and_fetches_it_on_return(
    world: tuple[RayCluster, Machine, Machine],
) -> None:
    _, desk, laptop = world
    (desk.work / "long.py").write_text(LONG_JOB, encoding="utf-8")
    task_id = _submitted_id(
        desk.cli("run", "--machine", "laptop", "--device", "780m", "--json", "--", PY, "long.py")
    )
    _state(desk, task_id, {"running"})
    (theirs,) = _inbound(laptop, f"desk#{task_id}.")
    desk.stop()  # the tray quits, the bridge with it

    staged_cwd = laptop.ask(rq.Get(id=theirs.id)).spec.cwd
    Path(staged_cwd, "stop").write_text("")  # (the same disk here) the job finishes while desk is down
    _state(laptop, int(theirs.id), {"succeeded"})

    desk.start()
    done = _state(desk, task_id, {"succeeded"}, timeout_s=90)
    assert done.machine == "laptop"
    assert (desk.work / "long-result.txt").read_text() == "pci:0000:64:00.0"
    assert "finished" in desk.ask(rq.Logs(id=task_id)).text
    (desk.work / "long-result.txt").unlink()


def test_a_machine_that_leaves_mid_job_has_its_task_follow_the_retry_policy_and_never_run_twice(
    world: tuple[RayCluster, Machine, Machine],
) -> None:
    cluster, desk, laptop = world
    (desk.work / "long.py").write_text(LONG_JOB, encoding="utf-8")
    task_file = desk.work / "retry.toml"
    task_file.write_text(
        f'kind = "command"\nargv = [{json.dumps(PY)}, "long.py"]\ncwd = "."\nmachine = "any"\n'
        'devices = ["780m"]\non_busy = "cpu"\nretries = 1\nbackoff = "1s"\n',
        encoding="utf-8",
    )
    task_id = _submitted_id(desk.cli("submit", "--task", str(task_file), "--json"))
    running = _state(desk, task_id, {"running"})
    assert running.machine == "laptop"
    (theirs,) = _inbound(laptop, f"desk#{task_id}.")

    cluster.remove_machine("laptop")  # its Ray node goes; its gputray (and the job) go on
    wait_for(lambda: desk.task(task_id).machine == "desk", 90, f"the retry here: {desk.task(task_id)}")
    # the retry policy, with the reason (the row's reason is the local queue's now: see the event log)
    events = (desk.paths.state_dir / "daemon.log").read_text()
    assert f"task {task_id} queued: " in events
    assert "laptop left the cluster while it ran; retry 1 of 1" in events
    # the laptop, cut off, stopped its copy before desk placed it again: it never finished there
    laptop_copy = _state(laptop, int(theirs.id), {"cancelled", "succeeded", "failed"})
    assert laptop_copy.state == "cancelled"
    (desk.work / "stop").write_text("")
    done = _state(desk, task_id, {"succeeded"})
    assert done.device == "cpu" and done.machine == "desk" and done.attempts == 2
    assert (desk.work / "long-result.txt").read_text() == "cpu"
    (desk.work / "stop").unlink()
    (desk.work / "long-result.txt").unlink()

    cluster.add_machine("laptop")
    wait_for(lambda: desk.sees("laptop") and laptop.sees("desk"), 120, "the laptop back in the cluster")


def test_with_the_head_down_every_local_queue_goes_on_and_the_bridges_rejoin(
    world: tuple[RayCluster, Machine, Machine],
) -> None:
    cluster, desk, laptop = world
    cluster.stop_head()
    wait_for(lambda: desk.state() != "connected", 30, "desk to notice the head is gone")
    here = desk.ask(
        rq.Run(argv=[PY, "-c", "print('desk')"], cwd=str(desk.work), overrides={"device_prefs": ["cpu"]})
    )
    there = laptop.ask(
        rq.Run(argv=[PY, "-c", "print('laptop')"], cwd=str(laptop.work), overrides={"device_prefs": ["780m"]})
    )
    anywhere = desk.ask(
        rq.Run(
            argv=[PY, "-c", "print('any')"],
            cwd=str(desk.work),
            overrides={"machine": "any", "device_prefs": ["780m"], "on_busy": "cpu"},
        )
    )
    _state(desk, int(here.tasks[0].id), {"succeeded"})
    _state(laptop, int(there.tasks[0].id), {"succeeded"})
    on_desk = _state(desk, int(anywhere.tasks[0].id), {"succeeded"})
    assert on_desk.machine == "desk"  # "any machine" is the machines one can see
    wait_for(lambda: desk.state() != "connected", 30, "desk to notice the head is gone")

    cluster.restart_head(["desk", "laptop"])
    wait_for(
        lambda: desk.sees("laptop") and laptop.sees("desk"), 150, f"the bridges to rejoin:\n{desk.logs()}"
    )


def test_join_refuses_a_cluster_without_token_auth_and_checks_one_with_it(
    world: tuple[RayCluster, Machine, Machine], tmp_path: Path
) -> None:
    cluster, _, _ = world
    home = tmp_path / "newcomer"
    env = {**os.environ, "GPUTRAY_HOME": str(home)}

    def join(*args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PY, "-m", "gputray.gui.entry", "cluster", "join", *args],
            env={**env, **(extra or {})},
            capture_output=True,
            text=True,
            timeout=120,
        )

    ok = join(cluster.address, "--machine", "newcomer", "--json")
    doc = _json(ok)
    assert isinstance(doc, dict) and doc["token_auth"] is True and doc["ray_version"] == "2.60.0"
    config = (home / "config" / "config.toml").read_text()
    assert cluster.address in config and 'machine = "newcomer"' in config

    wrong = join(cluster.address, extra={"RAY_AUTH_TOKEN": "0" * 64})
    assert wrong.returncode == 1 and "token" in wrong.stderr

    open_head = _open_ray_head(tmp_path)
    try:
        refused = join(open_head.address, "--machine", "x")
        assert refused.returncode == 1
        assert "token authentication" in refused.stderr and "run any code" in refused.stderr
        assert "--insecure" in refused.stderr
        assert open_head.address not in (home / "config" / "config.toml").read_text()
        allowed = join(open_head.address, "--machine", "x", "--insecure")
        assert allowed.returncode == 0, allowed.stderr
        assert "insecure = true" in (home / "config" / "config.toml").read_text()
    finally:
        open_head.stop()
    left = subprocess.run(
        [PY, "-m", "gputray.gui.entry", "cluster", "leave"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert left.returncode == 0 and "[cluster]" not in (home / "config" / "config.toml").read_text()


class _OpenHead:
    """``ray start --head --block`` without token authentication, stopped by its own pid."""

    def __init__(self, tmp: Path) -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
        env.update(RAY_AUTH_MODE="disabled", RAY_TMPDIR=str(tmp), RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
        ray_cli = str(Path(sys.executable).with_name("ray"))
        cmd = [ray_cli, "start", "--head", "--block", "--port", str(self.port), "--num-cpus", "0"]
        cmd += ["--node-ip-address", "127.0.0.1", "--include-dashboard", "false", "--disable-usage-stats"]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.address = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def _open_ray_head(tmp: Path) -> _OpenHead:
    import tempfile

    head = _OpenHead(Path(tempfile.mkdtemp(prefix="gto", dir="/tmp")))
    from gputray.cluster.bridge_probe import ProbeResult, run_probe

    seen: list[ProbeResult] = []

    def answers() -> bool:
        seen.append(run_probe(head.address, with_token=False))
        return head.proc.poll() is not None or seen[-1].ok

    try:
        wait_for(answers, 90, f"a Ray head without token authentication to answer ({seen[-1:]})")
        assert head.proc.poll() is None, "ray start --head exited"
    except BaseException:
        head.stop()
        raise
    return head
