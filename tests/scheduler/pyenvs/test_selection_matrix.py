"""The right GPU, proven (issue 23): each env's device selection is read back from torch itself.

The GPU builds are played by a stand-in ``torch`` (``tests/fixtures/standin_torch``) in a real venv (no pip, a
``.pth`` file: made in well under a second); every probe and every job is a real process. The stand-in
answers ``torch.cuda.*`` from a JSON table of simulated GPUs and from the selection variables, as each
build is reported to behave:

- ``cuda``: CUDA_VISIBLE_DEVICES by index or UUID; index order is fastest-first unless
  CUDA_DEVICE_ORDER=PCI_BUS_ID. From NVIDIA's CUDA documentation of both variables.
- ``rocm`` (Linux): ROCR_VISIBLE_DEVICES filters first, HIP_VISIBLE_DEVICES indexes what ROCr left, so
  both set inconsistently select nothing or the wrong GPU. pytorch/pytorch#142292 (PyTorch honours
  ROCR_VISIBLE_DEVICES on Linux), mcmonkeyprojects/SwarmUI#566 (HIP and ROCR numbering differ).
- ``therock-multiarch`` (Windows, no ROCr): HIP_VISIBLE_DEVICES=1 selects the second AMD GPU; ROCR and
  CUDA variables do nothing. ROCm/TheRock#5113.
- ``therock-igpu`` (Windows): the iGPU is cuda:0 and only CUDA_VISIBLE_DEVICES selects; HIP is ignored.
  ROCm/TheRock#3392.
- ``ignores-vars``: neither HIP nor ROCR variables change what torch sees; only an explicit
  ``torch.device("cuda:N")`` picks. warpfront/hipfire#623.
- ``igpu-unhideable``: the iGPU stays visible (as cuda:0) whatever the variables say.
  ROCm/legacy-rocm-build#5871.
- GPU ``override = "needs"``: gfx1103 without HSA_OVERRIDE_GFX_VERSION has no kernels ("invalid device
  function"). Crosstalk-Solutions/project-nomad#1134 (ROCm 7.2 rocBLAS without gfx1103 kernels).
- GPU ``override = "refuses"``: an override on that GPU, anywhere the runtime loaded, gives wrong
  results (gfx1100 WMMA instructions). project-nomad#1075.
- ``HSA_OVERRIDE_GFX_VERSION_<n>`` applies to the GPU at KFD node n only (node 0 is the CPU).
  ROCm/ROCT-Thunk-Interface#104.
- GPU ``invisible_to``: a runtime that does not enumerate the target at all, so every selection lands
  elsewhere. No public report: constructed, to have a wrong-device cell.
- GPU ``reports_pci = false`` with a generic name: torch gives nothing that tells the GPUs apart.
  Constructed, for the unprovable cell.

"OS" is the stand-in's ``STANDIN_TORCH_OS=windows``: the env's interpreter then reports
``sys.platform == "win32"`` to the probe, and gputray takes its Windows candidate list, as it would for a
real Windows Python (the Wine test set runs the probe on real Windows CPython).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import venv
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_for

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI, SimulatedBackend
from gputray.monitor.host import HostReader
from gputray.monitor.monitor import Monitor
from gputray.monitor.records import DeviceInfo
from gputray.monitor.scenario import Scenario
from gputray.scheduler.paths import app_paths
from gputray.scheduler.pyenvs.doctor import run_doctor
from gputray.scheduler.pyenvs.doctor_cache import PairResult, cache_file
from gputray.scheduler.pyenvs.registry import PythonEnv, add_env
from gputray.scheduler.queue.service import QueueService
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.doctor_codes import Passed
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import TaskView
from gputray.scheduler.tasks.records import TaskPatch, TaskRecord

STANDIN = Path(__file__).resolve().parents[2] / "fixtures" / "standin_torch"
GIB = 1024**3
DRIVERS = {"nvidia": "580.95", "amd": "kernel 6.17"}

RTX = dataclasses.replace(RTX_5060_TI, simulated=False, nvml_index=0)
IGPU = dataclasses.replace(RADEON_780M, simulated=False)
XTX = DeviceInfo(
    key="pci:0000:03:00.0",
    name="AMD Radeon RX 7900 XTX",
    vendor="amd",
    kind="discrete",
    backend="sysfs",
    pci_bdf="0000:03:00.0",
    vram_total_bytes=24 * GIB,
    gfx_target="gfx1100",
)
#: The seed user's machine, and one with an AMD dGPU beside the 780M.
MACHINES: dict[str, tuple[DeviceInfo, ...]] = {"5060ti+780m": (RTX, IGPU), "7900xtx+780m": (XTX, IGPU)}


def _table(devices: tuple[DeviceInfo, ...], **per_gpu: dict[str, Any]) -> list[dict[str, Any]]:
    """The stand-in's GPU table for ``devices``; ``per_gpu`` adds fields by device key."""
    rows = []
    for d in devices:
        row: dict[str, Any] = {
            "vendor": d.vendor,
            "name": d.name,
            "pci": d.pci_bdf,
            "uuid": d.uuid,
            "memory": d.vram_total_bytes,
            "arch": d.gfx_target,
            "igpu": d.kind == "integrated",
        }
        row.update(per_gpu.get(d.key, {}))
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def standin_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv whose ``torch`` is the stand-in: no pip, one ``.pth`` file (the folder, and the boot module
    that plays the OS)."""
    folder = tmp_path_factory.mktemp("envs") / "standin-torch"
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(folder)
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout
    Path(site.strip(), "standin-torch.pth").write_text(f"{STANDIN}\nimport standin_boot\n", encoding="utf-8")
    return python


@dataclasses.dataclass(frozen=True)
class Cell:
    build: str
    os: str
    machine: str
    target: DeviceInfo
    want: str  # the learned selection's label, or "wrong-device" / "unprovable"
    gpus: Mapping[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    extra_env: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.build}-{self.os}-{self.machine}-{self.target.name.split()[-1]}"


NEEDS = {IGPU.key: {"override": "needs"}}
REFUSES = {IGPU.key: {"override": "refuses"}}
CELLS = [
    Cell("cuda", "linux", "5060ti+780m", RTX, f"CUDA_VISIBLE_DEVICES={RTX.uuid}"),
    Cell("cuda", "windows", "5060ti+780m", RTX, f"CUDA_VISIBLE_DEVICES={RTX.uuid}"),
    Cell("cuda", "linux", "5060ti+780m", IGPU, "not served"),
    Cell("rocm", "linux", "5060ti+780m", IGPU, "ROCR_VISIBLE_DEVICES=0"),
    Cell(
        "rocm", "linux", "5060ti+780m", IGPU, "HSA_OVERRIDE_GFX_VERSION=11.0.0 ROCR_VISIBLE_DEVICES=0", NEEDS
    ),
    Cell(
        "rocm",
        "linux",
        "5060ti+780m",
        IGPU,
        "ROCR_VISIBLE_DEVICES=0 HSA_OVERRIDE_GFX_VERSION unset",
        REFUSES,
        {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"},
    ),
    Cell("therock-multiarch", "windows", "5060ti+780m", IGPU, "HIP_VISIBLE_DEVICES=0"),
    Cell("rocm", "linux", "7900xtx+780m", XTX, "ROCR_VISIBLE_DEVICES=0"),
    Cell("rocm", "linux", "7900xtx+780m", IGPU, "ROCR_VISIBLE_DEVICES=1"),
    Cell(
        "ignores-vars",
        "linux",
        "7900xtx+780m",
        IGPU,
        "HSA_OVERRIDE_GFX_VERSION_2=11.0.0 GPUTRAY_TORCH_DEVICE=cuda:1",
        {IGPU.key: {"override": "needs"}, XTX.key: {"override": "refuses"}},
    ),
    Cell("therock-multiarch", "windows", "7900xtx+780m", IGPU, "HIP_VISIBLE_DEVICES=1"),
    Cell("therock-multiarch", "windows", "7900xtx+780m", XTX, "HIP_VISIBLE_DEVICES=0"),
    Cell("therock-igpu", "windows", "7900xtx+780m", XTX, "CUDA_VISIBLE_DEVICES=1"),
    Cell("ignores-vars", "linux", "7900xtx+780m", IGPU, "GPUTRAY_TORCH_DEVICE=cuda:1"),
    Cell("ignores-vars", "windows", "7900xtx+780m", IGPU, "GPUTRAY_TORCH_DEVICE=cuda:1"),
    Cell("igpu-unhideable", "linux", "7900xtx+780m", XTX, "GPUTRAY_TORCH_DEVICE=cuda:1"),
    Cell("igpu-unhideable", "linux", "7900xtx+780m", IGPU, "ROCR_VISIBLE_DEVICES=1"),
    Cell(
        "therock-multiarch",
        "windows",
        "7900xtx+780m",
        IGPU,
        "wrong-device",
        {IGPU.key: {"invisible_to": ["therock-multiarch"]}},
    ),
    Cell(
        "ignores-vars",
        "linux",
        "7900xtx+780m",
        IGPU,
        "unprovable",
        {d.key: {"reports_pci": False, "name": "AMD Radeon Graphics"} for d in (XTX, IGPU)},
    ),
]


def _env_for(cell: Cell, python: Path, folder: Path) -> PythonEnv:
    table = folder / f"{cell.id}.json"
    table.write_text(json.dumps(_table(MACHINES[cell.machine], **dict(cell.gpus))), encoding="utf-8")
    extra = {
        "STANDIN_TORCH_BUILD": cell.build,
        "STANDIN_TORCH_GPUS": str(table),
        **({"STANDIN_TORCH_OS": "windows"} if cell.os == "windows" else {}),
        **cell.extra_env,
    }
    return PythonEnv(cell.build.replace("-", "_"), python, extra)


def _pair_on(pairs: list[PairResult], target: DeviceInfo) -> PairResult:
    return next(p for p in pairs if p.device_key == target.key)


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c.id)
def test_every_cell_lands_on_the_intended_gpu_or_refuses_with_the_reason(
    cell: Cell, standin_python: Path, tmp_path: Path
) -> None:
    env = _env_for(cell, standin_python, tmp_path)
    devices = MACHINES[cell.machine]
    pairs = run_doctor([env], devices, bench=False, cache_path=tmp_path / "doctor.json", drivers=DRIVERS)
    pair = _pair_on(pairs, cell.target)
    if cell.want == "not served":  # a CUDA build cannot drive an AMD GPU: no selection to learn
        assert pair.verdict == "fails" and pair.selection is None and "CUDA build" in pair.reason
        return
    assert (pair.selection is not None and pair.seen_device is not None) or cell.want == "wrong-device", pair
    if cell.want == "wrong-device":
        assert pair.verdict == "fails" and pair.selection_status == "wrong-device", pair
        assert pair.reason.startswith("wrong device: "), pair.reason
        assert pair.seen_device is not None and pair.seen_device.name == XTX.name  # what it got
        return
    if cell.want == "unprovable":
        assert pair.works and pair.selection_status == "unprovable", pair
        assert pair.unproven
        return
    assert pair.selection is not None and pair.seen_device is not None
    assert pair.selection_status == "proven" and pair.works, (pair.reason, pair.selection_reason, pair.error)
    assert pair.selection.label() == cell.want, pair.selection_reason
    assert pair.seen_device.name == cell.target.name
    if pair.seen_device.pci_address() is not None:
        assert pair.seen_device.pci_address() == cell.target.pci_bdf


def test_the_windows_candidates_are_taken_for_a_windows_env() -> None:
    from gputray.scheduler.pyenvs.selection import candidates

    linux = candidates(IGPU, MACHINES["7900xtx+780m"], build="rocm", platform="linux", rocm_index=None)
    windows = candidates(IGPU, MACHINES["7900xtx+780m"], build="rocm", platform="win32", rocm_index=None)
    assert [s.label() for s in linux][:2] == ["ROCR_VISIBLE_DEVICES=1", "ROCR_VISIBLE_DEVICES=0"]
    assert not any("ROCR" in s.label() for s in windows)  # Windows has no ROCr runtime
    assert [s.label() for s in windows][:4] == [
        "HIP_VISIBLE_DEVICES=1",
        "HIP_VISIBLE_DEVICES=0",
        "CUDA_VISIBLE_DEVICES=1",
        "CUDA_VISIBLE_DEVICES=0",
    ]


# ---------------------------------------------------------------------------------------------------
# Through the real queue: a proven cell runs on its GPU, a wrong-device cell never starts a job.

JOB = """
import json, os, torch
device = os.environ["GPUTRAY_TORCH_DEVICE"]
props = torch.cuda.get_device_properties(int(device.partition(":")[2] or 0))
print("JOB " + json.dumps({"device": device, "name": props.name, "bus": props.pci_bus_id}), flush=True)
"""


class Queue:
    def __init__(self) -> None:
        self.clock = lambda: 1000.0
        self.monitor = Monitor([SimulatedBackend(Scenario(()), clock=self.clock)], host=HostReader())
        self.store = TaskStore(app_paths().queue_db)
        self.monitor.sample_once()
        self.q = QueueService(self.store, self.monitor, paths=app_paths())
        self.q.start()

    def until(self, check: Callable[[], Any], timeout_s: float = 60.0) -> Any:
        try:
            return wait_for(check, timeout_s)
        except AssertionError:
            raise AssertionError(f"timed out; queue: {[TaskView.of(r) for r in self.q.list()]}") from None

    def log(self, rec: TaskRecord) -> str:
        path = self.q.get(rec.id).log_path
        return Path(path).read_text(encoding="utf-8") if path else ""


@pytest.fixture
def queue(gputray_home: Path) -> Iterator[Queue]:
    q = Queue()
    yield q
    q.q.close(kill_running=True)
    q.store.close()


def test_through_the_queue_a_proven_pair_runs_on_its_gpu_and_a_wrong_one_never_starts(
    queue: Queue, standin_python: Path, tmp_path: Path
) -> None:
    """The simulated 5060 Ti + 780M machine: ``rocm`` proves ROCR_VISIBLE_DEVICES=0 for the 780M (the
    job there sees the 780M and its log header says so); ``wrong`` cannot reach the 780M at all, so a
    task that may run only there waits with the doctor's reason and never starts a process."""
    script = tmp_path / "job.py"
    script.write_text(JOB, encoding="utf-8")
    good = Cell("rocm", "linux", "5060ti+780m", IGPU, "ROCR_VISIBLE_DEVICES=0")
    bad = Cell("therock-multiarch", "linux", "5060ti+780m", IGPU, "wrong-device")
    bad = dataclasses.replace(bad, gpus={IGPU.key: {"invisible_to": ["therock-multiarch"]}})
    machine = MACHINES["5060ti+780m"]
    wrong = dataclasses.replace(_env_for(bad, standin_python, tmp_path), name="wrong")
    rocm = dataclasses.replace(_env_for(good, standin_python, tmp_path), name="rocm")
    run_doctor([wrong, rocm], machine, bench=False, cache_path=cache_file())  # as `gputray doctor` does
    add_env(wrong.python, name="wrong", extra_env=dict(wrong.extra_env), check=False)
    (rec,) = queue.q.submit_files([script], overrides=TaskPatch(device_prefs=(IGPU.key,)))
    waiting = queue.until(lambda: "wrong device" in render((r := queue.q.get(rec.id)).reason) and r)
    assert waiting.state == "waiting" and waiting.attempts == 0 and not waiting.log_path, waiting
    assert "torch sees AMD Radeon RX 7900 XTX" not in render(waiting.reason)  # this machine has no 7900 XTX
    assert f"torch sees {RTX.name}" not in render(waiting.reason)
    # The env whose selection is proven is added: the same task now runs, on the 780M.
    add_env(rocm.python, name="rocm", extra_env=dict(rocm.extra_env), check=False)
    queue.q.request_dispatch()
    done = queue.until(lambda: (r := queue.q.get(rec.id)).finished and r)
    log = queue.log(rec)
    assert done.state == "succeeded" and done.env == "rocm", log
    job = json.loads(next(ln for ln in log.splitlines() if ln.startswith("JOB "))[4:])
    assert job == {"device": "cuda:0", "name": IGPU.name, "bus": 0x64}
    assert "selection: ROCR_VISIBLE_DEVICES=0 (proven, env rocm: torch sees Radeon 780M" in log, log
    assert "seen device: Radeon 780M as cuda:0, pci 0000:64:00.0" in log, log
    assert "\nGPUTRAY_TORCH_DEVICE=cuda:0\n" in log, log  # what the script is told to use, said


def test_the_real_cpu_torch_env_shows_its_selection_and_seen_device(
    torch_python: Path, tmp_path: Path
) -> None:
    """``gputray doctor --json`` with the real torch 2.13.0 CPU env: the CPU pair's selection sets no
    variable (torch's own cpu device) and torch's seen device is the CPU; the table says so too."""
    from cli import gputray

    home = tmp_path / "home"
    added = gputray("envs", "add", str(torch_python), "--name", "torchcpu", home=home)
    assert added.returncode == 0, added.stderr
    done = gputray("doctor", "--no-bench", "--json", home=home)
    assert done.returncode == 0, done.stderr
    cpu = next(p for p in json.loads(done.stdout)["pairs"] if p["device_key"] == "cpu")
    assert cpu["verdict"] == "works"
    assert cpu["selection"] == {"variables": {}, "unset": [], "torch_device": "cpu"}
    assert cpu["seen_device"]["name"] == "cpu" and cpu["seen_device"]["torch_device"] == "cpu"
    assert cpu["selection_status"] == "proven"
    table = gputray("doctor", "--no-bench", home=home)
    header = next(ln for ln in table.stdout.splitlines() if ln.startswith("ENV"))
    row = next(ln for ln in table.stdout.splitlines() if ln.startswith("torchcpu") and "works" in ln)
    assert "SELECTED BY" in header and "— ✓ cpu" in row, table.stdout
    print("\n" + header + "\n" + row)


def test_a_read_back_is_matched_by_pci_address_then_uuid_then_name_and_memory() -> None:
    from gputray.scheduler.pyenvs.selection import SeenDevice, match_seen

    known = MACHINES["5060ti+780m"]
    at_64 = SeenDevice("cuda:0", name="whatever", pci_bus_id=0x64, pci_device_id=0)
    assert match_seen(at_64, IGPU, known).by == "PCI address"
    assert match_seen(at_64, RTX, known).status == "wrong-device"
    assert RTX.uuid is not None
    by_uuid = SeenDevice("cuda:0", name="GeForce RTX 5060 Ti", uuid=RTX.uuid.removeprefix("GPU-"))
    assert match_seen(by_uuid, RTX, known).by == "UUID"
    by_name = SeenDevice("cuda:0", name="AMD Radeon 780M Graphics", total_memory_bytes=4 * GIB)
    assert match_seen(by_name, IGPU, known).by == "name + memory"
    assert match_seen(by_name, XTX, (XTX, IGPU)).status == "wrong-device"  # it is the other GPU
    assert (
        match_seen(dataclasses.replace(by_name, total_memory_bytes=64 * GIB), IGPU, known).status != "proven"
    )
    twins = (XTX, dataclasses.replace(XTX, key="pci:0000:04:00.0", pci_bdf="0000:04:00.0"))
    same = SeenDevice("cuda:0", name=XTX.name, total_memory_bytes=XTX.vram_total_bytes)
    assert match_seen(same, twins[0], twins).status == "unprovable"  # two of a kind, no address
    assert match_seen(None, IGPU, known).status == "wrong-device"  # torch saw nothing


def test_devices_json_carries_each_envs_selection_and_seen_device(
    standin_python: Path, tmp_path: Path
) -> None:
    from gputray.scheduler.cli.commands.devices import add_torch_selections, build_document, render_text

    cell = Cell("therock-multiarch", "windows", "7900xtx+780m", IGPU, "HIP_VISIBLE_DEVICES=1")
    pairs = run_doctor(
        [_env_for(cell, standin_python, tmp_path)], MACHINES[cell.machine], bench=False,
        cache_path=tmp_path / "doctor.json", drivers=DRIVERS,
    )  # fmt: skip
    doc = build_document(list(MACHINES[cell.machine]), None, tmp_path / "no-sysfs")
    add_torch_selections(doc, pairs)
    rows = {r["key"]: r for r in doc["devices"]}
    (igpu,) = rows[IGPU.key]["torch"]
    assert igpu["selection"]["variables"] == {"HIP_VISIBLE_DEVICES": "1"}
    assert igpu["seen_device"]["name"] == IGPU.name and igpu["seen_device"]["pci_bus_id"] == 0x64
    assert igpu["selection_status"] == "proven"
    assert json.dumps(doc)  # plain JSON
    # `gputray devices` (text): the same, one line per env under each GPU, cut to the terminal's width
    text = render_text(doc, width=60).splitlines()
    under_igpu = text[text.index(f"{IGPU.name}  ({IGPU.key})") :]
    env = pairs[0].env_name
    line = f"  Selected by   {env}: HIP_VISIBLE_DEVICES=1 ✓ {IGPU.name}"
    assert line[:59] + "…" in under_igpu, text
    assert line in render_text(doc).splitlines()


def test_an_unprovable_pair_runs_only_a_task_that_allows_it_and_its_log_says_so(
    queue: Queue, standin_python: Path, tmp_path: Path
) -> None:
    script = tmp_path / "job.py"
    script.write_text(JOB, encoding="utf-8")
    # torch gives the 780M no PCI address and a generic name: nothing proves it is the 780M.
    generic = {IGPU.key: {"reports_pci": False, "name": "AMD Radeon Graphics"}}
    cell = Cell("ignores-vars", "linux", "5060ti+780m", IGPU, "unprovable", generic)
    env = dataclasses.replace(_env_for(cell, standin_python, tmp_path), name="rocm")
    pairs = run_doctor([env], MACHINES[cell.machine], bench=False, cache_path=cache_file())
    assert _pair_on(pairs, IGPU).selection_status == "unprovable", _pair_on(pairs, IGPU)
    add_env(env.python, name="rocm", extra_env=dict(env.extra_env), check=False)
    (strict,) = queue.q.submit_files([script], overrides=TaskPatch(device_prefs=(IGPU.key,)))
    waiting = queue.until(lambda: "not proven" in render((r := queue.q.get(strict.id)).reason) and r)
    assert waiting.state == "waiting" and waiting.attempts == 0, waiting
    assert "allow_unproven = true" in render(waiting.reason)
    (allowed,) = queue.q.submit_files(
        [script], overrides=TaskPatch(device_prefs=(IGPU.key,), allow_unproven=True)
    )
    assert queue.q.get(allowed.id).spec.allow_unproven
    done = queue.until(lambda: (r := queue.q.get(allowed.id)).finished and r)
    log = queue.log(allowed)
    assert done.state == "succeeded", log
    assert "(NOT PROVEN (the task allows it: allow_unproven), env rocm:" in log, log
    assert queue.q.get(strict.id).state == "waiting"


def test_a_task_allows_an_unproven_pair_by_its_file_or_the_command_line(tmp_path: Path) -> None:
    import argparse

    from gputray.scheduler.cli.commands.submit import add_placement_args, patch_from_args
    from gputray.scheduler.tasks.taskfile import TaskFileError, load_task_file

    job = tmp_path / "job.toml"
    job.write_text('script = "train.py"\nallow_unproven = true\n', encoding="utf-8")
    assert load_task_file(job).allow_unproven
    job.write_text('script = "train.py"\nallow_unproven = "yes"\n', encoding="utf-8")
    with pytest.raises(TaskFileError, match=r"allow_unproven.*must be true or false"):
        load_task_file(job)
    parser = argparse.ArgumentParser()
    add_placement_args(parser)
    assert patch_from_args(parser.parse_args(["--allow-unproven"])).allow_unproven is True
    assert patch_from_args(parser.parse_args([])).given().get("allow_unproven") is None


def test_the_doctor_table_says_which_pairs_only_allowing_tasks_run_on() -> None:
    from gputray.scheduler.cli.commands.doctor import render_table
    from gputray.scheduler.pyenvs.selection import SeenDevice, Selection

    pair = PairResult(
        env_name="rocm", python="/x/python", device_key=IGPU.key, device_name=IGPU.name, vendor="amd",
        verdict="works", finding=Passed(benched=False),
        selection=Selection({"ROCR_VISIBLE_DEVICES": "0"}),
        seen_device=SeenDevice("cuda:0", name="AMD Radeon Graphics"),
        selection_status="unprovable", selection_reason="torch sees AMD Radeon Graphics: no PCI address",
    )  # fmt: skip
    table = render_table([pair])
    assert "ROCR_VISIBLE_DEVICES=0 ? AMD Radeon Graphics" in table
    assert "selection not proven: torch sees AMD Radeon Graphics" in table
    assert "only tasks with allow_unproven = true run here" in table


def test_the_log_header_of_a_cpu_job_says_seen_device_cpu_once() -> None:
    from gputray.scheduler.jobs.launch_plan import selection_header
    from gputray.scheduler.pyenvs.selection import CPU_SEEN, CPU_SELECTION

    pair = PairResult(
        env_name="torchcpu", python="/p", device_key="cpu", device_name="CPU", vendor="cpu", verdict="works",
        finding=Passed(benched=False), selection=CPU_SELECTION, seen_device=CPU_SEEN,
        selection_status="proven", selection_reason="torch's own cpu device",
    )  # fmt: skip
    assert selection_header(pair) == (
        "selection: — (proven, env torchcpu: torch's own cpu device)\nseen device: cpu\n"
    )
