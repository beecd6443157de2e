"""The doctor on real environments: a torch CPU venv certified with measured figures, the cache,
the scheduler's ``env_for_device``, recorded GPU failures, hangs and crashes, and the CLI end to end."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.monitor.records import DeviceInfo
from gputray.scheduler.pyenvs.doctor import (
    PairResult,
    cache_file,
    cached_results,
    device_key_for,
    env_for_device,
    match_device_keys,
    pair_from_device,
    run_doctor,
)
from gputray.scheduler.pyenvs.doctor import _EnvFacts as EnvFacts
from gputray.scheduler.pyenvs.registry import PythonEnv, add_env, remove_env
from gputray.scheduler.reasons.doctor_codes import DoctorNews
from gputray.scheduler.reasons.render import render

posix_only = pytest.mark.skipif(os.name != "posix", reason="shell-script interpreters need a POSIX shell")

RTX = replace(RTX_5060_TI, backend="nvml", simulated=False)
IGPU = replace(RADEON_780M, backend="amd_sysfs", simulated=False)
GPUS = (RTX, IGPU)
DRIVERS = {"nvidia": "575.64.03", "amd": "kernel 6.14.0"}
CAPABILITY_NAMES = ["conv2d_fp32", "matmul_fp32", "matmul_fp16", "matmul_bf16", "sdpa", "bandwidth"]


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, news: DoctorNews) -> None:
        self.lines.append(render(news))

    @property
    def probed(self) -> bool:
        return any("probing" in line for line in self.lines)


@pytest.fixture(scope="module")
def certified(torch_python: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[PairResult], Path]:
    """One real doctor run of the torch CPU venv, with the bench, seen with the user's two GPUs."""
    cache = tmp_path_factory.mktemp("doctor") / "doctor.json"
    env = PythonEnv("torch-cpu", torch_python)
    pairs = run_doctor([env], GPUS, cache_path=cache, drivers=DRIVERS)
    return pairs, cache


@pytest.mark.slow
def test_cpu_is_certified_with_measured_figures(certified: tuple[list[PairResult], Path]) -> None:
    pairs, _ = certified
    cpu = next(p for p in pairs if p.device_key == "cpu")
    assert cpu.verdict == "works", cpu.reason
    assert cpu.torch_version is not None and cpu.torch_version.startswith("2.13.0")
    assert [c.name for c in cpu.capabilities] == CAPABILITY_NAMES
    for cap in cpu.capabilities:
        assert cap.ok, f"{cap.name}: {cap.error}"
        assert cap.value is not None and cap.value > 0
    assert cpu.capability("bandwidth").unit == "GB/s"  # type: ignore[union-attr]
    assert cpu.capability("matmul_fp32").unit == "GFLOP/s"  # type: ignore[union-attr]
    assert cpu.probe_seconds is not None
    print("\nCPU figures:", ", ".join(f"{c.name} {c.figure()}" for c in cpu.capabilities))
    for need in ("fp32", "fp16", "bf16", "sdpa", "conv2d"):
        assert cpu.passes(need)
    assert not cpu.passes("no-such-need")


@pytest.mark.slow
def test_gpus_a_cpu_only_build_cannot_use_are_explained(certified: tuple[list[PairResult], Path]) -> None:
    pairs, _ = certified
    rtx = next(p for p in pairs if p.device_key == RTX.key)
    igpu = next(p for p in pairs if p.device_key == IGPU.key)
    for pair in (rtx, igpu):
        assert pair.verdict == "fails"
        assert pair.reason == "this env has a CPU-only build of torch"
        assert pair.device_name in ("GeForce RTX 5060 Ti", "Radeon 780M")
    assert rtx.fix is not None and "cu128" in rtx.fix
    assert igpu.fix is not None and "ROCm" in igpu.fix
    assert not rtx.passes("fp32")


@pytest.mark.slow
def test_second_run_comes_from_the_cache(
    certified: tuple[list[PairResult], Path], torch_python: Path
) -> None:
    pairs, cache = certified
    lines = Lines()
    again = run_doctor(
        [PythonEnv("torch-cpu", torch_python)], GPUS, cache_path=cache, drivers=DRIVERS, progress=lines
    )
    assert not lines.probed
    assert all(p.from_cache for p in again)
    assert all("(cached)" in line for line in lines.lines)
    assert [(p.device_key, p.verdict, p.capabilities) for p in again] == [
        (p.device_key, p.verdict, p.capabilities) for p in pairs
    ]
    # A request without the bench is answered by a cached run that had it.
    lines = Lines()
    run_doctor(
        [PythonEnv("torch-cpu", torch_python)],
        GPUS,
        cache_path=cache,
        drivers=DRIVERS,
        bench=False,
        progress=lines,
    )
    assert not lines.probed


def test_what_invalidates_the_cache(notorch_python: Path, tmp_path: Path) -> None:
    cache = tmp_path / "doctor.json"
    env = PythonEnv("plain", notorch_python)

    def probed(env: PythonEnv = env, devices: tuple[DeviceInfo, ...] = (RTX,), **kwargs: object) -> bool:
        lines = Lines()
        kwargs.setdefault("drivers", DRIVERS)
        run_doctor([env], devices, cache_path=cache, progress=lines, **kwargs)  # type: ignore[arg-type]
        return lines.probed

    assert probed(bench=False)
    assert not probed(bench=False)
    assert probed(bench=True)  # the cached run had no bench
    assert not probed()
    assert probed(refresh=True)
    st = notorch_python.stat()
    os.utime(notorch_python, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert probed()  # the interpreter changed
    assert not probed()
    assert probed(drivers={**DRIVERS, "nvidia": "580.1"})  # driver update
    assert probed(env=PythonEnv("plain", notorch_python, {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}))
    assert probed(devices=(RTX, IGPU))  # a GPU appeared (an eGPU plugged in)
    assert not probed(devices=(RTX, IGPU))
    cache.write_text("{ not json", encoding="utf-8")
    assert probed(devices=(RTX, IGPU))  # a damaged cache is probed over ...
    assert json.loads(cache.read_text(encoding="utf-8"))["entries"]  # ... and rewritten


def test_env_without_torch_fails_everywhere_with_the_install_command(
    notorch_python: Path, tmp_path: Path
) -> None:
    env = PythonEnv("plain", notorch_python)
    pairs = run_doctor([env], GPUS, cache_path=tmp_path / "c.json", drivers=DRIVERS)
    assert {p.device_key for p in pairs} == {"cpu", RTX.key, IGPU.key}
    for pair in pairs:
        assert pair.verdict == "fails"
        assert pair.reason == "torch is not installed in this env"
        assert pair.fix is not None and pair.fix.startswith(f"{notorch_python} -m pip install torch")


def test_missing_interpreter_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    env = PythonEnv("gone", tmp_path / "deleted-venv" / "bin" / "python")
    pairs = run_doctor([env], (RTX,), cache_path=tmp_path / "c.json", drivers=DRIVERS)
    assert [p.verdict for p in pairs] == ["fails", "fails"]
    assert "does not exist any more" in pairs[0].reason
    assert pairs[0].fix is not None and "gputray envs remove gone" in pairs[0].fix


@pytest.mark.slow
def test_env_for_device_reads_the_cache(
    certified: tuple[list[PairResult], Path],
    torch_python: Path,
    notorch_python: Path,
    gputray_home: Path,
) -> None:
    _, cache = certified
    cache_file().parent.mkdir(parents=True)
    shutil.copy(cache, cache_file())
    add_env(notorch_python, name="plain", check=False)  # first in the config, and it fails everywhere
    run_doctor([PythonEnv("plain", notorch_python)], GPUS, drivers=DRIVERS)
    add_env(torch_python, name="torch-cpu", check=False)

    found = env_for_device("cpu")
    assert found is not None and found.name == "torch-cpu"
    assert env_for_device("cpu", ["fp16", "bf16", "sdpa"]) == found
    assert env_for_device("sim:cpu", device_kind="cpu") == found
    assert env_for_device(RTX.key) is None
    assert env_for_device(IGPU.key, ["fp32"], device_kind="integrated") is None
    assert env_for_device("cpu", ["int4-tensor-cores"]) is None
    assert {p.env_name for p in cached_results()} == {"plain", "torch-cpu"}

    remove_env("torch-cpu")
    assert env_for_device("cpu") is None
    assert {p.env_name for p in cached_results()} == {"plain"}


# ---------------------------------------------------------------------------------------------------
# What a probe reports on the user's GPUs (recorded shapes of probe.py output).

SM120_WARNING = (
    "NVIDIA GeForce RTX 5060 Ti with CUDA capability sm_120 is not compatible with the current PyTorch "
    "installation.\nThe current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_61 sm_70 sm_75 "
    "sm_80 sm_86 sm_90."
)
FACTS = EnvFacts("2.5.1+cu124", "12.4", None, 1_764_000_000.0, True)


def _rtx_device(**overrides: object) -> dict[str, object]:
    device: dict[str, object] = {
        "torch_device": "cuda:0",
        "kind": "cuda",
        "index": 0,
        "name": "NVIDIA GeForce RTX 5060 Ti",
        "capability": "12.0",
        "uuid": "5060d3e1-7a2b-4c1e-9f00-0123456789ab",
        "pci_bus_id": 1,
        "pci_device_id": 0,
        "pci_domain_id": 0,
        "total_memory_bytes": 16 << 30,
        "basic_op": {
            "name": "basic_op",
            "ok": False,
            "error": "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
            "CUDA kernel errors might be asynchronously reported at some other API call",
        },
        "warnings": [SM120_WARNING],
    }
    device.update(overrides)
    return device


def test_old_cuda_wheel_on_the_5060_ti() -> None:
    env = PythonEnv("cu124", Path("/home/ana/venvs/cu124/bin/python"))
    pair = pair_from_device(env, _rtx_device(), GPUS, FACTS)
    assert pair.device_key == RTX.key
    assert pair.device_name == "GeForce RTX 5060 Ti"  # the monitor's friendly name
    assert pair.verdict == "fails"
    assert "sm_120" in pair.reason
    assert pair.fix is not None and "cu128" in pair.fix


def test_the_warning_from_cuda_init_names_the_architecture() -> None:
    env = PythonEnv("cu124", Path("/home/ana/venvs/cu124/bin/python"))
    device = _rtx_device(capability=None, warnings=[])
    assert "sm_120" not in pair_from_device(env, device, GPUS, FACTS).reason
    facts = EnvFacts("2.5.1+cu124", "12.4", None, 0.0, True, (SM120_WARNING,))
    assert "sm_120" in pair_from_device(env, device, GPUS, facts).reason


def test_780m_with_limits() -> None:
    env = PythonEnv("rocm", Path("/home/ana/venvs/rocm/bin/python"), {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    hip_error = (
        "RuntimeError: HIP error: invalid device function\n"
        "For debugging consider passing AMD_SERIALIZE_KERNEL=3"
    )
    device = {
        "torch_device": "cuda:0",
        "kind": "hip",
        "name": "AMD Radeon 780M Graphics",
        "gcn_arch_name": "gfx1100",
        "uuid": "58580000-0000-0000-0000-000000000000",
        "pci_bus_id": 0x64,
        "pci_device_id": 0,
        "pci_domain_id": 0,
        "basic_op": {"name": "basic_op", "ok": True, "value": None},
        "bench": [
            {"name": "conv2d_fp32", "ok": True, "value": 2150.5, "unit": "GFLOP/s", "size": "16x64x56x56 k3"},
            {"name": "matmul_fp32", "ok": True, "value": 3420.0, "unit": "GFLOP/s", "size": 2048},
            {"name": "matmul_fp16", "ok": False, "value": None, "unit": "GFLOP/s", "error": hip_error},
            {"name": "matmul_bf16", "ok": True, "value": 5100.2, "unit": "GFLOP/s", "size": 2048},
            {"name": "sdpa", "ok": False, "value": None, "unit": "GFLOP/s", "error": hip_error},
            {"name": "bandwidth", "ok": True, "value": 61.3, "unit": "GB/s", "size": "256 MiB"},
        ],
        "warnings": [],
    }
    pair = pair_from_device(env, device, GPUS, EnvFacts("2.9.0+rocm7.1", None, "7.1", 0.0, True))
    assert pair.device_key == IGPU.key  # by PCI address: RADV/HIP UUIDs are not the amdsmi one
    assert pair.verdict == "limited"
    assert pair.reason.startswith("works, but matmul fp16, attention failed")
    assert pair.passes("fp32") and pair.passes("conv2d") and pair.passes("bf16")
    assert not pair.passes("fp16") and not pair.passes("sdpa")
    assert pair.fix is not None and "install a ROCm build" in pair.fix  # the override is already set


def test_device_keys_by_uuid_then_pci_then_torch_index() -> None:
    assert device_key_for({"kind": "cpu"}, GPUS) == "cpu"
    by_uuid = {"kind": "cuda", "uuid": "GPU-5060D3E1-7A2B-4C1E-9F00-0123456789AB", "torch_device": "cuda:3"}
    assert device_key_for(by_uuid, GPUS) == RTX.key
    by_pci = {"kind": "cuda", "uuid": None, "pci_bus_id": 2, "pci_device_id": 0, "pci_domain_id": 0}
    assert device_key_for(by_pci, GPUS) == "pci:0000:02:00.0"
    assert device_key_for({"kind": "hip", "torch_device": "cuda:1"}, GPUS) == "torch:cuda:1"


def test_a_device_without_ids_takes_the_only_gpu_of_its_vendor() -> None:
    hip = {"kind": "hip", "torch_device": "cuda:0", "uuid": None, "pci_bus_id": None}
    cuda = {"kind": "cuda", "torch_device": "cuda:0", "uuid": None}
    assert match_device_keys([{"kind": "cpu"}, hip], GPUS) == ["cpu", IGPU.key]
    assert match_device_keys([cuda], GPUS) == [RTX.key]
    second_amd = DeviceInfo(
        key="pci:0000:03:00.0", name="RX 7600", vendor="amd", kind="discrete", backend="x"
    )
    # Two AMD GPUs and no ids: no guessing.
    assert match_device_keys([hip], (*GPUS, second_amd)) == ["torch:cuda:0"]
    # A device matched by its ids keeps its key and leaves the other GPU for a loose one.
    by_pci = {"kind": "hip", "torch_device": "cuda:1", "pci_bus_id": 3, "pci_device_id": 0}
    assert match_device_keys([by_pci, hip], (*GPUS, second_amd)) == [second_amd.key, IGPU.key]


# ---------------------------------------------------------------------------------------------------
# Hangs and crashes inside an env: partial results survive, the reason is in words.


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def version_line() -> Iterator[str]:
    # A fake interpreter answers the quick version query like probe.py would, then misbehaves.
    yield (
        'case "$*" in *--version-only*) '
        'echo \'{"python_version": "3.12.3", "torch_dist_version": "2.9.0"}\'; exit 0;; esac\n'
    )


@posix_only
def test_a_hang_on_the_gpu_keeps_the_cpu_result(tmp_path: Path, version_line: str) -> None:
    cpu_done = json.dumps(
        {
            "stage": "device",
            "device": {
                "torch_device": "cpu",
                "kind": "cpu",
                "name": "Ryzen 7 8700G",
                "basic_op": {"ok": True},
            },
        }
    )
    python = _script(
        tmp_path / "rocm" / "bin" / "python",
        version_line + f"echo '@gputray-progress {cpu_done}' >&2\nexec sleep 600\n",
    )
    env = PythonEnv("rocm", python, {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    pairs = run_doctor([env], (IGPU,), cache_path=tmp_path / "c.json", drivers=DRIVERS, timeout_s=3.0)
    cpu = next(p for p in pairs if p.device_key == "cpu")
    igpu = next(p for p in pairs if p.device_key == IGPU.key)
    assert cpu.verdict == "works"
    assert igpu.verdict == "fails"
    assert "hung" in igpu.reason
    assert igpu.fix is not None and "HSA_OVERRIDE_GFX_VERSION=10.3.0" in igpu.fix


@posix_only
def test_an_interpreter_that_hangs_at_once_is_not_probed_twice(tmp_path: Path) -> None:
    python = _script(tmp_path / "stuck" / "bin" / "python", "exec sleep 600\n")
    lines = Lines()
    pairs = run_doctor(
        [PythonEnv("stuck", python)],
        (RTX,),
        cache_path=tmp_path / "c.json",
        drivers=DRIVERS,
        timeout_s=2.0,
        progress=lines,
    )
    assert [p.verdict for p in pairs] == ["fails", "fails"]
    assert all("hung" in p.reason for p in pairs)
    assert not lines.probed  # the quick version query already told


@posix_only
def test_a_crash_is_explained_from_its_last_words(tmp_path: Path, version_line: str) -> None:
    crash = (
        "echo 'rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or "
        "directory for GPU arch : gfx1103' >&2\nkill -ABRT $$\n"
    )
    python = _script(tmp_path / "rocm" / "bin" / "python", version_line + crash)
    pairs = run_doctor([PythonEnv("rocm", python)], (IGPU,), cache_path=tmp_path / "c.json", drivers=DRIVERS)
    igpu = next(p for p in pairs if p.device_key == IGPU.key)
    assert igpu.verdict == "fails"
    assert "gfx1103" in igpu.reason and "SIGABRT" in igpu.reason
    assert igpu.fix is not None and "HSA_OVERRIDE_GFX_VERSION=11.0.0" in igpu.fix


@posix_only
def test_garbage_from_an_env_is_reported(tmp_path: Path, version_line: str) -> None:
    python = _script(tmp_path / "odd" / "bin" / "python", version_line + "printf 'Welcome!\\377\\n'\n")
    (pair,) = run_doctor([PythonEnv("odd", python)], (), cache_path=tmp_path / "c.json", drivers=DRIVERS)
    assert pair.verdict == "fails"
    assert "did not answer like a Python" in pair.reason


# ---------------------------------------------------------------------------------------------------
# The command line, end to end in subprocesses.


def _gputray(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPUTRAY_HOME": str(home), "PYTHONIOENCODING": "utf-8"}
    code = "import sys; from gputray.scheduler.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.slow
def test_cli_envs_add_then_doctor_prints_the_table_and_json(torch_python: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    added = _gputray(["envs", "add", str(torch_python), "--name", "torch-cpu"], home)
    assert added.returncode == 0, added.stderr
    assert "added torch-cpu" in added.stdout

    table = _gputray(["doctor"], home)
    assert table.returncode == 0, table.stderr
    print("\n" + table.stdout)
    assert re.search(r"doctor: torch-cpu × CPU.*✅ works", table.stderr)  # the progress line
    row = next(line for line in table.stdout.splitlines() if line.startswith("torch-cpu") and "✅" in line)
    figures = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d", row)]
    assert len(figures) == 6 and all(f > 0 for f in figures)
    assert "GFLOP/s" in table.stdout and "GB/s" in table.stdout

    as_json = _gputray(["doctor", "--json"], home)
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    (cpu,) = [p for p in doc["pairs"] if p["device_key"] == "cpu"]
    assert cpu["verdict"] == "works"
    assert [c["name"] for c in cpu["capabilities"]] == CAPABILITY_NAMES
    assert [round(c["value"], 1) for c in cpu["capabilities"]] == figures  # the same run, from the cache
    assert doc["envs"] == [{"name": "torch-cpu", "python": str(torch_python), "extra_env": {}}]

    listing = _gputray(["envs"], home)
    assert "torch 2.13.0" in listing.stdout and "✅" in listing.stdout


def test_cli_doctor_without_envs_says_what_to_do(tmp_path: Path) -> None:
    result = _gputray(["doctor"], tmp_path / "home")
    assert result.returncode == 1
    assert "gputray envs add" in result.stderr
    as_json = _gputray(["doctor", "--json"], tmp_path / "home")
    assert as_json.returncode == 1
    assert "gputray envs add" in as_json.stderr
    doc = json.loads(as_json.stdout)  # a script still gets a document, with nothing in it
    assert doc["envs"] == [] and doc["pairs"] == []
    result = _gputray(["doctor", "--env", "ghost"], tmp_path / "home")
    assert result.returncode == 1  # a refusal (an unknown name), as every command says it
    assert "no environment named 'ghost'" in result.stderr


def test_the_env_list_lines_up_with_japanese_env_names() -> None:
    """`学習` takes four terminal columns: the builds start in one column under each other."""
    from gputray.scheduler.cli.commands.common import terminal_cells
    from gputray.scheduler.cli.commands.doctor import render_envs
    from gputray.scheduler.pyenvs.record import PythonEnv

    envs = [PythonEnv("学習", Path("/v1/bin/python")), PythonEnv("rocm", Path("/v2/bin/python"))]
    lines = render_envs(envs, []).splitlines()
    assert [terminal_cells(line[: line.index("not probed")]) for line in lines] == [6, 6]


def test_a_cache_written_by_an_earlier_gputray_is_still_read(tmp_path: Path) -> None:
    python = tmp_path / "python3"
    python.write_text("#!/bin/sh\n", encoding="utf-8")
    extra = {"HSA_OVERRIDE_GFX_VERSION": "11.0.0", "A": "1"}
    pair = {
        "env_name": "old", "python": str(python), "device_key": "cpu", "device_name": "CPU",
        "vendor": "cpu", "verdict": "works", "reason": "ok", "fix": None, "torch_device": "cpu",
        "torch_version": "2.5.1", "cuda_version": None, "hip_version": None, "arch": None,
        "capabilities": [
            {"name": "matmul_fp32", "ok": True, "value": 12.5, "unit": "GFLOP/s", "error": None,
             "detail": None},
            {"name": "sdpa", "ok": False, "value": None, "unit": "GFLOP/s", "error": "boom", "detail": None},
        ],
        "error": None, "extra_env": extra, "probed_at_s": 1.5, "probe_seconds": 0.25, "bench": True,
        "from_cache": False,
    }  # fmt: skip
    fingerprint = {
        "python": str(python), "python_mtime_ns": python.stat().st_mtime_ns, "torch_version": "2.5.1",
        "torch_origin": None, "torch_mtime_ns": None, "extra_env": dict(sorted(extra.items())),
    }  # fmt: skip
    entry = {"fingerprint": fingerprint, "driver": "", "bench_requested": True, "pair": pair}
    cache = tmp_path / "doctor.json"
    cache.write_text(json.dumps({"format": 1, "entries": [entry]}, indent=1), encoding="utf-8")

    (result,) = cached_results([PythonEnv("renamed", python, extra)], cache_path=cache)

    assert result.from_cache and result.env_name == "renamed"
    assert result.passes("fp32") and not result.passes("sdpa")
    learned = {"selection": None, "seen_device": None, "selection_status": None, "selection_reason": None}
    assert json.loads(json.dumps(result.to_json())) == {
        **pair,
        **learned,  # not learned by that gputray: the doctor learns them on its next probe
        "env_name": "renamed",
        "from_cache": True,
        # its words, kept as that gputray wrote them (shown as written in every language)
        "reason_code": {"code": "Written", "text": "ok"},
        "fix_code": None,
    }
