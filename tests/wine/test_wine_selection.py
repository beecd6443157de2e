"""The Windows cells of the selection matrix (tests/scheduler/pyenvs/test_selection_matrix.py) on the official
Windows CPython under Wine: the doctor, its probe and the job launcher all run as Windows processes, so
the env's interpreter reports ``sys.platform == "win32"`` for real (no ``STANDIN_TORCH_OS``), and the job
is started by the Windows supervisor in its job object.

The GPU build is the stand-in ``torch`` (tests/fixtures/standin_torch), put into a copy of the cached
Windows Python by a ``.pth`` file in its ``Lib\\site-packages`` (the probe runs with ``-I``, which still
reads that folder). Two cells, on the simulated RTX 5060 Ti + Radeon 780M machine, with TheRock's Windows
multi-arch wheel (HIP_VISIBLE_DEVICES selects; ROCm/TheRock#5113):

- proven: the 780M is reached with ``HIP_VISIBLE_DEVICES=0`` (never ``ROCR_VISIBLE_DEVICES``: Windows has
  no ROCr); a job then runs there and its log header names the selection and what torch saw;
- refusing: a runtime that does not list the 780M at all: the pair is wrong-device and a task that may
  run only on the 780M waits with that reason, never starting a process.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from winpython import WinePython, winpath

STANDIN = Path(__file__).resolve().parents[1] / "fixtures" / "standin_torch"
GIB = 1024**3
MACHINE = [  # the stand-in's GPU table: the seed user's machine
    {"vendor": "nvidia", "name": "NVIDIA GeForce RTX 5060 Ti", "pci": "0000:01:00.0",
     "uuid": "GPU-5e1f0c2a-7b3d-4e8f-9a61-0c2d4e6f8a10", "memory": 16 * GIB, "arch": None, "igpu": False},
    {"vendor": "amd", "name": "Radeon 780M", "pci": "0000:64:00.0", "uuid": None, "memory": 4 * GIB,
     "arch": "gfx1103", "igpu": True},
]  # fmt: skip


@pytest.fixture(scope="module")
def standin_python(win: WinePython, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the cached Windows Python (21 MB, copied in well under a second) whose ``torch`` is the
    stand-in; the cached one stays without torch for the other tests."""
    folder = tmp_path_factory.mktemp("standin-win") / "python"
    shutil.copytree(win.python_dir, folder)
    site = folder / "Lib" / "site-packages"
    site.mkdir(parents=True)
    (site / "standin-torch.pth").write_text(f"{winpath(STANDIN)}\nimport standin_boot\n", encoding="utf-8")
    return folder / "python.exe"


def test_the_windows_cells_prove_hip_visible_devices_and_refuse_a_gpu_torch_cannot_see(
    win: WinePython, standin_python: Path, home: Path, tmp_path: Path
) -> None:
    good_table, bad_table = tmp_path / "machine.json", tmp_path / "machine-without-780m.json"
    good_table.write_text(json.dumps(MACHINE), encoding="utf-8")
    hidden = [{**gpu, "invisible_to": ["therock-multiarch"]} if gpu["igpu"] else gpu for gpu in MACHINE]
    bad_table.write_text(json.dumps(hidden), encoding="utf-8")
    script = tmp_path / "job.py"
    script.write_text(JOB, encoding="utf-8")
    done = win.run(
        "-c", CELLS, winpath(standin_python), winpath(good_table), winpath(bad_table), winpath(script),
        env={"GPUTRAY_HOME": winpath(home)}, timeout_s=240,
    )  # fmt: skip
    assert done.returncode == 0, done.text
    doc = json.loads(done.stdout.splitlines()[-1])
    assert doc["platform"] == "win32"

    good, bad = doc["pairs"]["therock"], doc["pairs"]["wrong"]
    assert good["status"] == "proven" and good["verdict"] == "works", good
    assert good["selection"] == "HIP_VISIBLE_DEVICES=0", good
    assert good["seen"] == {"name": "Radeon 780M", "pci": "0000:64:00.0", "arch": "gfx1103"}, good
    assert bad["status"] == "wrong-device" and bad["verdict"] == "fails", bad
    assert bad["reason"].startswith("wrong device: "), bad
    # every Windows candidate was tried, ROCR_VISIBLE_DEVICES never (Windows has no ROCr)
    tried = bad["tried"]
    assert "HIP_VISIBLE_DEVICES=0" in tried and "CUDA_VISIBLE_DEVICES=0" in tried, tried
    assert "GPUTRAY_TORCH_DEVICE=" in tried and "ROCR_VISIBLE_DEVICES" not in tried, tried

    waiting = doc["waiting"]  # only the wrong-device env configured: the task never starts a process
    assert waiting["state"] == "waiting" and waiting["attempts"] == 0 and not waiting["log"], waiting
    assert "wrong device" in waiting["reason"], waiting
    ran = doc["ran"]  # the proven env added: the same task runs, on the 780M
    assert ran["state"] == "succeeded" and ran["env"] == "therock", ran
    assert ran["job"] == {"device": "cuda:0", "name": "Radeon 780M", "bus": 0x64}, ran
    assert "selection: HIP_VISIBLE_DEVICES=0 (proven, env therock: torch sees Radeon 780M" in ran["log"], ran
    assert "seen device: Radeon 780M as cuda:0, pci 0000:64:00.0" in ran["log"], ran


JOB = """
import json, os, torch
device = os.environ["GPUTRAY_TORCH_DEVICE"]
props = torch.cuda.get_device_properties(int(device.partition(":")[2] or 0))
print("JOB " + json.dumps({"device": device, "name": props.name, "bus": props.pci_bus_id}), flush=True)
"""

# Runs in the Windows Python: the doctor on both envs, then the real queue (a simulated monitor) with the
# wrong-device env alone, then with the proven one; prints one JSON document.
CELLS = r"""
import dataclasses, json, sys, time
from pathlib import Path
from gputray.monitor.host import HostReader
from gputray.monitor.monitor import Monitor
from gputray.monitor.scenario import Scenario
from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI, SimulatedBackend
from gputray.scheduler.paths import app_paths
from gputray.scheduler.pyenvs.doctor import run_doctor
from gputray.scheduler.pyenvs.doctor_cache import cache_file
from gputray.scheduler.pyenvs.registry import PythonEnv, add_env
from gputray.scheduler.queue.service import QueueService
from gputray.scheduler.reasons.render import render
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.tasks.records import TaskPatch

python, good_table, bad_table, script = (Path(a) for a in sys.argv[1:5])
RTX = dataclasses.replace(RTX_5060_TI, simulated=False, nvml_index=0)
IGPU = dataclasses.replace(RADEON_780M, simulated=False)
build = {"STANDIN_TORCH_BUILD": "therock-multiarch"}
good = PythonEnv("therock", python, {**build, "STANDIN_TORCH_GPUS": str(good_table)})
wrong = PythonEnv("wrong", python, {**build, "STANDIN_TORCH_GPUS": str(bad_table)})
pairs = {}
for env in (good, wrong):
    found = run_doctor([env], (RTX, IGPU), bench=False, cache_path=cache_file())  # as `gputray doctor` does
    pair = next(p for p in found if p.device_key == IGPU.key)
    seen = pair.seen_device
    pairs[env.name] = {
        "verdict": pair.verdict, "status": pair.selection_status, "reason": pair.reason,
        "selection": pair.selection.label() if pair.selection else None,
        "seen": seen and {"name": seen.name, "pci": seen.pci_address(), "arch": seen.gcn_arch_name},
        "tried": pair.error if pair.selection_status == "wrong-device" else None,
    }

def wait(check, timeout_s=90):
    deadline = time.monotonic() + timeout_s
    while not (value := check()):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out; queue: {q.list()}")
        time.sleep(0.1)
    return value

monitor = Monitor([SimulatedBackend(Scenario(()), clock=lambda: 1000.0)], host=HostReader())
store = TaskStore(app_paths().queue_db)
monitor.sample_once()
q = QueueService(store, monitor, paths=app_paths())
q.start()
try:
    add_env(wrong.python, name="wrong", extra_env=dict(wrong.extra_env), check=False)
    (rec,) = q.submit_files([script], overrides=TaskPatch(device_prefs=(IGPU.key,)))
    r = wait(lambda: "wrong device" in render((r := q.get(rec.id)).reason) and r)
    waiting = {"state": r.state, "attempts": r.attempts, "log": r.log_path, "reason": render(r.reason)}
    add_env(good.python, name="therock", extra_env=dict(good.extra_env), check=False)
    q.request_dispatch()
    r = wait(lambda: (r := q.get(rec.id)).finished and r)
    log = Path(r.log_path).read_text(encoding="utf-8") if r.log_path else ""
    job = next((json.loads(ln[4:]) for ln in log.splitlines() if ln.startswith("JOB ")), None)
    ran = {"state": r.state, "env": r.env, "log": log, "job": job}
finally:
    q.close(kill_running=True)
    store.close()
print(json.dumps({"platform": sys.platform, "pairs": pairs, "waiting": waiting, "ran": ran}))
"""
