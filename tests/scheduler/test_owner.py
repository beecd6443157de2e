"""The Owner in-process: real simulated monitor, real SQLite store, real job processes, real socket."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from real_owner import home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.jobs.log_files import decode_utf8_prefix as _decode_utf8_prefix
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import QueueReply, Submitted, TaskView

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses the Unix socket transport")

AMD = "pci:0000:64:00.0"
NVIDIA = "pci:0000:01:00.0"
PY = sys.executable


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    return home_paths(tmp_path, monkeypatch)


@pytest.fixture
def owner(paths: Paths) -> Iterator[Owner]:
    with running_owner(paths) as o:
        yield o


@pytest.fixture
def client(owner: Owner, paths: Paths) -> Iterator[ipc.IpcClient]:
    with ipc.IpcClient(paths) as c:
        yield c


SAID = {"code": "Said", "text": "x"}  # a reason as JSON carries it (``reasons.codes``)


def state_of(client: ipc.IpcClient, task_id: int) -> str:
    return str(client.ask(rq.Get(id=task_id)).task.state)


def test_every_protocol_op_is_answered(client: ipc.IpcClient) -> None:
    """Each op reaches a handler: it answers, or refuses in words, never 'unknown op' or an internal error."""
    minimal: dict[str, dict[str, Any]] = {
        "submit_files": {"files": ["/nonexistent.png"]},
        "open_files": {"files": ["/nonexistent.png"]},
        "run": {"argv": ["/nonexistent-program"]},
        "get": {"id": 999},
        "cancel": {"ids": [999]},
        "retry": {"id": 999},
        "pause_job": {"id": 999},
        "resume_job": {"id": 999},
        "move": {"id": 999, "delta": 1},
        "edit": {"id": 999, "changes": {"priority": 1}},
        "remove": {"ids": [999]},
        "wait": {"ids": [999], "timeout_s": 0},
        "logs": {"id": 999},
        "schedule_add": {"cron": "0 3 * * *", "task_file": "/nonexistent.toml"},
        "schedule_remove": {"id": 999},
        "free_resident": {"name": "nobody"},  # no such resident: said so, nothing asked
        "cluster_update": {"id": 999, "step": {"step": "note", "reason": SAID}},  # gputray.cluster's bridge
        "cluster_withdraw": {"id": 999, "origin": "desk#1.1", "reason": SAID},
        "cluster_submit": {
            "origin": "desk#1.1",
            "spec": {"kind": "command", "name": "x", "argv": ["/nonexistent"]},
        },
    }
    for op in sorted(ipc.OPS - {"shutdown"}):
        try:
            client.ask(rq.request_from(op, minimal.get(op, {})))
        except ipc.RemoteError as exc:
            assert exc.kind not in ("InternalError", "BadRequest"), (op, exc.kind, exc.message)


def test_status_lists_the_simulated_pair(client: ipc.IpcClient) -> None:
    status = wait_for(lambda: (s := client.ask(rq.Status())).devices and s, what="a first sample")
    keys = {d.key for d in status.devices}
    assert {AMD, NVIDIA} <= keys
    assert all(d.simulated for d in status.devices if d.key in (AMD, NVIDIA))


def test_run_then_logs_and_get(client: ipc.IpcClient, tmp_path: Path) -> None:
    result = client.ask(
        rq.Run(
            argv=[PY, "-c", "print('héllo from the job')"],
            cwd=str(tmp_path),
            overrides={"device_prefs": ["cpu"]},
            name="hello",
        )
    )
    task = result.tasks[0]
    assert task.name == "hello" and task.kind == "command"
    wait_for(lambda: state_of(client, task.id) == "succeeded", what="the job to succeed")
    logs = client.ask(rq.Logs(id=task.id))
    assert "héllo from the job" in logs.text
    assert logs.finished is True
    assert client.ask(rq.Logs(id=task.id, offset=logs.offset)).text == ""
    got = client.ask(rq.Get(id=str(task.id)))
    assert got.spec is not None and got.spec.argv[0] == PY
    assert got.task.device == "cpu"
    listing = client.ask(rq.Queue(all=True)).tasks
    assert [t.id for t in listing] == [task.id]
    assert client.ask(rq.Queue(all=False)).tasks == ()


def test_relative_paths_need_the_callers_folder(client: ipc.IpcClient) -> None:
    with pytest.raises(ipc.RemoteError) as err:
        client.ask(rq.Submit(task_file="job.toml"))
    assert "working folder" in err.value.message


def test_bad_task_file_names_file_and_key(client: ipc.IpcClient, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "command"\nargv = ["true"]\non_busy = "sometimes"\n')
    with pytest.raises(ipc.RemoteError) as err:
        client.ask(rq.Submit(task_file=str(bad)))
    assert "bad.toml" in err.value.message and "on_busy" in err.value.message
    missing_tool = tmp_path / "tool.toml"
    missing_tool.write_text('kind = "command"\nargv = ["realesrgan-ncnn-vulkan-not-here", "-i", "x"]\n')
    with pytest.raises(ipc.RemoteError) as err:
        client.ask(rq.Submit(task_file=str(missing_tool)))
    assert "realesrgan-ncnn-vulkan-not-here" in err.value.message
    assert client.ask(rq.Queue(all=True)).tasks == ()


def test_cancel_reports_unknown_ids_and_cancels_known(client: ipc.IpcClient, tmp_path: Path) -> None:
    long = client.ask(
        rq.Run(
            argv=[PY, "-c", "import time; time.sleep(60)"],
            cwd=str(tmp_path),
            overrides={"device_prefs": ["780m"]},
        )
    ).tasks[0]
    wait_for(lambda: state_of(client, long.id) == "running", what="the job to start")
    result = client.ask(rq.Cancel(ids=[long.id, 424242]))
    assert [t.id for t in result.tasks] == [long.id]
    assert any("424242" in e for e in result.errors)
    wait_for(lambda: state_of(client, long.id) == "cancelled", what="the job to be cancelled")


def test_pause_resolves_device_names(owner: Owner, client: ipc.IpcClient) -> None:
    wait_for(lambda: owner.monitor.latest is not None, what="a first sample")
    paused = client.ask(rq.Pause(device="780m")).paused
    assert AMD in paused.devices and NVIDIA not in paused.devices and not paused.all
    with pytest.raises(ipc.RemoteError) as err:
        client.ask(rq.Pause(device="voodoo2"))
    assert "voodoo2" in err.value.message and AMD in err.value.message
    assert AMD not in client.ask(rq.Resume(device="780m")).paused.devices


def test_a_device_name_that_matches_nothing_is_refused_with_the_closest(
    owner: Owner, client: ipc.IpcClient, tmp_path: Path
) -> None:
    wait_for(lambda: owner.monitor.latest is not None, what="a first sample")
    with pytest.raises(ipc.RemoteError) as err:
        client.ask(
            rq.Run(
                argv=[PY, "-c", "pass"],
                cwd=str(tmp_path),
                overrides={"device_prefs": ["5060it", "nvidia", "780m", "cpu"], "on_busy": "wait"},
            )
        )
    assert err.value.message == (
        "python: no device matches '5060it'; closest: GeForce RTX 5060 Ti (5060ti); known: "
        f"GeForce RTX 5060 Ti (5060ti, {NVIDIA}), Radeon 780M (780m, {AMD}), cpu — see `gputray devices`"
    )
    assert client.ask(rq.Queue(all=True)).tasks == ()  # nothing was queued
    fine = client.ask(
        rq.Run(argv=[PY, "-c", "pass"], cwd=str(tmp_path), overrides={"device_prefs": ["780m", "amd"]})
    )
    assert fine.notes == () and len(fine.tasks) == 1


def test_schedules_round_trip(client: ipc.IpcClient, tmp_path: Path) -> None:
    task = tmp_path / "nightly.toml"
    task.write_text(f'kind = "command"\nargv = [{PY!r}, "-c", "pass"]\n'.replace("'", '"'))
    added = client.ask(rq.ScheduleAdd(cron="0 3 * * *", task_file=str(task))).schedules[0]
    assert added.task_file == str(task) and added.next_run_at
    assert [s.id for s in client.ask(rq.ScheduleList()).schedules] == [added.id]
    with pytest.raises(ipc.RemoteError) as err:
        client.ask(rq.ScheduleAdd(cron="at three", task_file=str(task)))
    assert "cron" in err.value.message
    broken = tmp_path / "broken.toml"
    broken.write_text("kind = [")
    with pytest.raises(ipc.RemoteError):
        client.ask(rq.ScheduleAdd(cron="0 3 * * *", task_file=str(broken)))
    client.ask(rq.ScheduleRemove(id=added.id))
    assert client.ask(rq.ScheduleList()).schedules == ()


def test_a_second_owner_is_refused_before_it_touches_the_queue(
    owner: Owner, client: ipc.IpcClient, paths: Paths, tmp_path: Path
) -> None:
    long = client.ask(
        rq.Run(
            argv=[PY, "-c", "import time; time.sleep(60)"],
            cwd=str(tmp_path),
            overrides={"device_prefs": ["cpu"]},
        )
    ).tasks[0]
    wait_for(lambda: state_of(client, long.id) == "running", what="the job to start")
    with pytest.raises(ipc.OwnerAlreadyRunning):
        Owner(paths, demo=True).start()
    # crash recovery would have marked it interrupted: it must still be running under the first owner
    assert state_of(client, long.id) == "running"
    client.ask(rq.Cancel(ids=[long.id]))


def test_shutdown_request(owner: Owner, client: ipc.IpcClient) -> None:
    assert client.ask(rq.Shutdown()).stopping is True
    assert owner.wait(5.0)


def test_decode_keeps_a_cut_character_for_the_next_read() -> None:
    data = "日本".encode()
    text, used = _decode_utf8_prefix(data[:4])
    assert text == "日" and used == 3
    assert _decode_utf8_prefix(b"\xff\xfeok") == ("\ufffd\ufffdok", 4)


TORCH_SCRIPT = """
import os, sys
import torch

x = torch.randn(8, 3, 16, 16, requires_grad=True)
loss = torch.nn.Conv2d(3, 4, 3)(x).relu().mean()
loss.backward()
print("TORCH", torch.__version__, "ON", os.environ["GPUTRAY_DEVICE"], "CUDA", torch.cuda.is_available())
print("PY", sys.executable)
print("GRAD", bool(x.grad is not None and x.grad.abs().sum() > 0))
"""


@pytest.mark.slow
def test_a_real_torch_cpu_job_through_the_whole_path(
    torch_python: Path, paths: Paths, tmp_path: Path
) -> None:
    """CLI submit of a .py → socket → owner → recipe → the doctor's env for the CPU → torch really runs."""
    import json
    import os
    import subprocess

    env = {**os.environ, "GPUTRAY_HOME": os.environ["GPUTRAY_HOME"]}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PY, "-m", "gputray.gui.entry", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )

    added = cli("envs", "add", str(torch_python), "--name", "torchcpu")
    assert added.returncode == 0, added.stderr
    doctor = cli("doctor", "--no-bench")
    assert doctor.returncode == 0, doctor.stderr
    script = tmp_path / "tiny train.py"
    script.write_text(TORCH_SCRIPT)
    owner = Owner(paths, demo=True)
    owner.start()
    try:
        out = cli("submit", str(script), "--device", "cpu", "--json")
        assert out.returncode == 0, out.stderr
        task_id = json.loads(out.stdout)[0]["id"]
        with ipc.IpcClient(paths) as client:
            wait_for(lambda: state_of(client, task_id) in ("succeeded", "failed"), 120, "the torch job")
            task = client.ask(rq.Get(id=task_id)).task
            log = client.ask(rq.Logs(id=task_id)).text
        assert task.state == "succeeded", log
        assert task.kind == "torch" and task.env == "torchcpu" and task.device == "cpu"
        assert "TORCH 2.13.0" in log and "ON cpu" in log and "GRAD True" in log
        assert f"PY {torch_python}" in log or str(torch_python.parent) in log
    finally:
        owner.stop()


def test_a_start_time_holds_the_task_then_it_runs(client: ipc.IpcClient, tmp_path: Path) -> None:
    task = client.ask(
        rq.Run(
            argv=[PY, "-c", "print('on time')"],
            cwd=str(tmp_path),
            overrides={"device_prefs": ["cpu"], "start_at": time.time() + 1.5},
        )
    ).tasks[0]
    waiting = wait_for(lambda: (t := client.ask(rq.Get(id=task.id)).task).state == "waiting" and t)
    assert "starts at" in render(waiting.reason)
    done = wait_for(lambda: (t := client.ask(rq.Get(id=task.id)).task).state == "succeeded" and t)
    assert done.started_at >= waiting.submitted_at


def test_stopping_the_owner_stops_running_jobs_and_requeues_by_policy(paths: Paths, tmp_path: Path) -> None:
    owner = Owner(paths, demo=True)
    owner.start()
    with ipc.IpcClient(paths) as client:
        task = client.ask(
            rq.Run(
                argv=[PY, "-c", "import time; time.sleep(60)"],
                cwd=str(tmp_path),
                overrides={"device_prefs": ["cpu"], "retries": 1},
            )
        ).tasks[0]
        wait_for(lambda: state_of(client, task.id) == "running", what="the job to start")
        pid = wait_for(lambda: client.ask(rq.Get(id=task.id)).pid, what="the job's pid")
    owner.stop()
    import psutil

    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    again = Owner(paths, demo=True, serve_ipc=False)
    again.start()
    try:
        rec = again.queue.get(task.id)
        assert rec.attempts == 1 and rec.state in ("queued", "waiting")  # requeued: one retry left
        assert "retry" in render(rec.reason) and rec.not_before is not None  # after its backoff
    finally:
        again.stop()


def test_a_due_schedule_submits_its_task_file(owner: Owner, client: ipc.IpcClient, tmp_path: Path) -> None:
    task = tmp_path / "nightly.toml"
    task.write_text(
        f'kind = "command"\nname = "nightly"\nargv = [{PY!r}, "-c", "print(7)"]\n'.replace("'", '"')
    )
    entry = client.ask(rq.ScheduleAdd(cron="0 3 * * *", task_file=str(task))).schedules[0]
    assert owner.timing is not None
    owner.timing.run_schedule(entry.id)  # what APScheduler calls at 03:00
    tasks = client.ask(rq.Queue(all=True)).tasks
    assert [t.name for t in tasks] == ["nightly"]
    listed = client.ask(rq.ScheduleList()).schedules[0]
    assert listed.last_run_at is not None and listed.last_error is None
    task.unlink()  # the file went away: the run is recorded as failed, the schedule stays
    owner.timing.run_schedule(entry.id)
    listed = client.ask(rq.ScheduleList()).schedules[0]
    assert "nightly.toml" in listed.last_error


def test_run_and_command_task_files_pass_braces_verbatim(client: ipc.IpcClient, tmp_path: Path) -> None:
    """`gputray run -- python -c "print(f'{x}')"` runs exactly that; so does a command task file."""
    code = "import sys; x = 42; print(f'{x}', *sys.argv[1:])"
    extra = ['{"a": {"b": 1}}', "{file}", "{vk_index}", "{"]
    ran = client.ask(
        rq.Run(argv=[PY, "-c", code, *extra], cwd=str(tmp_path), overrides={"device_prefs": ["cpu"]})
    ).tasks[0]
    task_file = tmp_path / "braces.toml"
    task_file.write_text(
        'kind = "command"\n'
        f"argv = [{PY!r}, '-c', \"import os; print('ENV', os.environ['CONF'])\"]\n"
        'devices = ["cpu"]\n'
        '[env]\nCONF = "{device} {x}"\n'
    )
    filed = client.ask(rq.Submit(task_file=str(task_file))).tasks[0]
    for task in (ran, filed):
        wait_for(lambda t=task: state_of(client, t.id) == "succeeded", what=f"task {task.id} to succeed")
    assert "42 " + " ".join(extra) in client.ask(rq.Logs(id=ran.id)).text
    assert "ENV {device} {x}" in client.ask(rq.Logs(id=filed.id)).text


# The 780M's recorded probe shape under a ROCm wheel: fp16 matmul and attention fail, the rest works.
HIP_ERROR = (
    "RuntimeError: HIP error: invalid device function\nFor debugging consider passing AMD_SERIALIZE_KERNEL=3"
)
RADEON_PROBE = {
    "torch_device": "cuda:0",
    "kind": "hip",
    "name": "AMD Radeon 780M Graphics",
    "gcn_arch_name": "gfx1100",
    "pci_bus_id": 0x64,
    "pci_device_id": 0,
    "pci_domain_id": 0,
    "basic_op": {"name": "basic_op", "ok": True, "value": None},
    "bench": [
        {"name": "conv2d_fp32", "ok": True, "value": 2150.5, "unit": "GFLOP/s"},
        {"name": "matmul_fp32", "ok": True, "value": 3420.0, "unit": "GFLOP/s"},
        {"name": "matmul_fp16", "ok": False, "value": None, "unit": "GFLOP/s", "error": HIP_ERROR},
        {"name": "matmul_bf16", "ok": True, "value": 5100.2, "unit": "GFLOP/s"},
        {"name": "sdpa", "ok": False, "value": None, "unit": "GFLOP/s", "error": HIP_ERROR},
        {"name": "bandwidth", "ok": True, "value": 61.3, "unit": "GB/s"},
    ],
    "warnings": [],
}


def test_needs_avoid_devices_where_the_doctor_saw_them_fail(
    owner: Owner, client: ipc.IpcClient, tmp_path: Path
) -> None:
    """A doctor cache written by the doctor's own code: fp16 failed on the 780M. An fp16 task goes
    elsewhere, or gives up when only the 780M may run it; bf16 (passed) and unmeasured needs run."""
    from gputray.scheduler.pyenvs import doctor
    from gputray.scheduler.pyenvs.doctor_cache import record_results
    from gputray.scheduler.pyenvs.registry import add_env

    env = add_env(Path(PY), name="rocm", check=False)
    fp, _ = doctor.fingerprint(env)
    assert fp is not None
    known = [r.info for r in wait_for(lambda: owner.monitor.latest, what="a sample").readings]
    facts = doctor._EnvFacts("2.9.0+rocm7.1", None, "7.1", time.time(), True)
    pair = doctor.pair_from_device(env, RADEON_PROBE, known, facts)
    assert pair.device_key == AMD and not pair.passes("fp16") and pair.passes("bf16")
    record_results(doctor.cache_file(), fp, [pair], doctor.driver_versions(), bench=True)
    assert [p.device_key for p in doctor.cached_results()] == [AMD]

    def run(needs: list[str], devices: list[str], on_busy: str = "redirect") -> TaskView:
        task = client.ask(
            rq.Run(
                argv=[PY, "-c", "print('ok')"],
                cwd=str(tmp_path),
                overrides={"needs": needs, "device_prefs": devices, "on_busy": on_busy},
            )
        ).tasks[0]
        return wait_for(
            lambda: (t := client.ask(rq.Get(id=task.id)).task).state in ("succeeded", "failed") and t,
            what=f"task {task.id} to end",
        )

    redirected = run(["fp16"], ["780m", "5060ti"])
    assert redirected.state == "succeeded" and redirected.device == NVIDIA
    assert "Radeon 780M" in render(redirected.reason) and "fp16" in render(redirected.reason)
    assert "doctor" in render(redirected.reason)
    only_igpu = run(["fp16"], ["780m"], on_busy="wait")
    assert only_igpu.state == "failed" and only_igpu.device is None
    assert "Radeon 780M" in render(only_igpu.reason) and "fp16" in render(only_igpu.reason)
    assert run(["bf16"], ["780m"]).device == AMD  # passed in the doctor
    assert run(["fp16"], ["5060ti"]).device == NVIDIA  # never measured there: unknown does not block
    assert run([], ["780m"]).device == AMD


def test_queue_over_the_socket_is_the_same_document_and_follows_changes(
    owner: Owner, client: ipc.IpcClient, tmp_path: Path
) -> None:
    """The socket answers `queue` from per-task JSON kept between listings: it must match the
    in-process answer, and a task's change must show in the next listing."""
    client.ask(rq.Pause())
    ids = [
        client.ask(rq.Run(argv=[PY, "-c", "pass"], cwd=str(tmp_path), name=f"t{i} ✓")).tasks[0].id
        for i in range(5)
    ]

    def all_waiting() -> QueueReply | None:
        listing = client.ask(rq.Queue(all=True))
        return listing if all(t.state == "waiting" for t in listing.tasks) else None

    first = wait_for(all_waiting, what="the tasks to wait")
    assert first == owner.handle(rq.Queue(all=True))
    assert [t.name for t in first.tasks] == [f"t{i} ✓" for i in range(5)]
    assert first.paused.all is True
    client.ask(rq.Cancel(ids=[ids[2]]))
    again = client.ask(rq.Queue(all=True))
    assert {t.id: t.state for t in again.tasks}[ids[2]] == "cancelled"
    assert again == owner.handle(rq.Queue(all=True))
    assert [t.id for t in client.ask(rq.Queue()).tasks] == [i for i in ids if i != ids[2]]


def test_watch_and_follow_end_cleanly_when_the_owner_goes_away(
    paths: Paths, client: ipc.IpcClient, owner: Owner, tmp_path: Path
) -> None:
    """`queue --watch` and `logs --follow` while the owner stops: a message that says so, exit 3
    (no owner), no traceback, and what they printed before stays."""
    import os
    import subprocess

    task = client.ask(
        rq.Run(
            argv=[PY, "-c", "import time; print('job says hi', flush=True); time.sleep(60)"],
            cwd=str(tmp_path),
            overrides={"device_prefs": ["cpu"]},
        )
    ).tasks[0]
    wait_for(lambda: "job says hi" in client.ask(rq.Logs(id=task.id)).text, what="the job's output")
    env = {**os.environ, "GPUTRAY_HOME": os.environ["GPUTRAY_HOME"]}
    cli = [PY, "-m", "gputray.gui.entry"]
    procs = {
        "watch": subprocess.Popen(
            [*cli, "queue", "--watch", "0.2"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ),
        "follow": subprocess.Popen(
            [*cli, "logs", str(task.id), "--follow"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ),
    }
    # Both are connected once they have printed something (a listing; the job's first line).
    first_lines = {what: proc.stdout.readline() for what, proc in procs.items() if proc.stdout}
    owner.stop()
    for what, proc in procs.items():
        proc.wait(timeout=30)  # not communicate(): it reads the pipe's fd and would skip readline's buffer
        assert proc.stdout is not None and proc.stderr is not None
        out, err = first_lines[what] + proc.stdout.read(), proc.stderr.read()
        assert proc.returncode == 3, (what, out, err)
        assert "Traceback" not in err, err
        assert "the gputray owner went away" in err and "gputray daemon" in err, err
        assert ("job says hi" if what == "follow" else "running") in out
        assert "\x1b[" not in out  # a pipe gets listings, not terminal escapes


def test_queue_listing_carries_the_names_people_know_the_gpus_by(owner: Owner, client: ipc.IpcClient) -> None:
    wait_for(lambda: owner.monitor.latest is not None, what="a first sample")
    names = client.ask(rq.Queue(all=True)).device_names
    assert names[AMD] == "Radeon 780M" and names[NVIDIA] == "GeForce RTX 5060 Ti" and names["cpu"] == "CPU"


def test_the_owner_judges_gpus_by_the_users_configured_limits(paths: Paths) -> None:
    """`gputray daemon` reads [thresholds]: an iGPU limit of 30 °C makes the idle 780M (≈ 41 °C) hot."""
    paths.config_dir.mkdir(parents=True, exist_ok=True)
    paths.config_file.write_text("[thresholds]\nigpu_temp_limit_c = 30.0\n", encoding="utf-8")
    o = Owner(paths, demo=True)
    o.start()
    try:
        snap = wait_for(lambda: o.monitor.latest, what="a first sample")
        verdict = snap.verdict(AMD)
        assert verdict is not None and verdict.hot and verdict.busy
        said = render(verdict.reasons[0])
        assert "Radeon 780M is hot" in said and "limit 30 °C" in said
    finally:
        o.stop()


def test_stop_lets_a_request_being_answered_finish_and_refuses_new_ones(owner: Owner, tmp_path: Path) -> None:
    """A request that got in before stop() is answered in full (the store is not closed under it);
    one that comes after is told the owner is stopping."""
    import threading

    from gputray.scheduler.owner import OwnerStopping

    entered, release = threading.Event(), threading.Event()

    def slow_tray(files: list[str]) -> None:  # the tray's hook, held up like a busy request
        entered.set()
        release.wait(10)

    owner.files_opener = slow_tray
    dropped = tmp_path / "a.py"
    dropped.write_text("pass\n")
    answers: list[Submitted] = []
    request = threading.Thread(
        target=lambda: answers.append(owner.handle(rq.OpenFiles(files=[str(dropped)])))
    )
    request.start()
    assert entered.wait(10)
    stopper = threading.Thread(target=owner.stop)
    stopper.start()
    time.sleep(0.3)
    assert stopper.is_alive()  # waiting for the request
    with pytest.raises(OwnerStopping, match="stopping"):
        owner.handle(rq.Queue())
    release.set()
    request.join(10)
    stopper.join(30)
    assert answers[0].handed_to == "tray" and not stopper.is_alive()


def test_bad_ids_are_named_for_what_they_are(owner: Owner) -> None:
    from gputray.scheduler.owner import OwnerRequestError

    with pytest.raises(OwnerRequestError, match=r"schedule ids .*'abc'; see `gputray schedule list`"):
        owner.handle(rq.ScheduleRemove(id="abc"))
    with pytest.raises(OwnerRequestError, match=r"task ids are whole numbers from 1, not '-1'"):
        owner.handle(rq.Get(id="-1"))


def test_a_reply_is_the_typed_record_with_its_epoch_times(
    owner: Owner, client: ipc.IpcClient, tmp_path: Path
) -> None:
    """What the CLI and the tray read: the task's own epoch seconds (nothing to parse back from text),
    the same record over the socket as in-process."""
    run = client.ask(rq.Run(argv=[PY, "-c", "pass"], cwd=str(tmp_path), overrides={"device_prefs": ["cpu"]}))
    (task,) = run.tasks
    assert isinstance(run, Submitted) and isinstance(task, TaskView) and task.state == "queued"
    done = wait_for(
        lambda: (t := client.ask(rq.Get(id=task.id)).task).state == "succeeded" and t,
        what="the job to end",
    )
    rec = owner.queue.get(task.id)
    assert (done.submitted_at, done.started_at, done.ended_at) == (
        rec.submitted_at,
        rec.started_at,
        rec.ended_at,
    )
    assert (
        isinstance(done.ended_at, float) and done.started_at is not None and done.started_at <= done.ended_at
    )
    assert owner.handle(rq.Get(id=task.id)).task == done
