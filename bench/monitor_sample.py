"""Cost of one full monitor sample against the floor of merely opening and reading the same files.

The sample: the real captured Radeon 780M tree (amdgpu sysfs + hwmon + gpu_metrics), an NVIDIA GPU
through the NVML backend (the tests' fake pynvml at the library boundary), the host through psutil,
and 200 processes with DRM fds in a built /proc tree whose engine counters grow every round.
The floor: every file that sample opened, folder it listed and link it read, recorded during one
sample and done again with plain os calls, doing nothing with what they return. Both are timed in
the same run, alternating, and the medians compared. Goal (issue 2): <= 1.3x the floor and <= 1 ms
per GPU.

    python3 bench/monitor_sample.py [--rounds 300]
"""

from __future__ import annotations

import argparse
import builtins
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "monitor"))  # fake_pynvml: the NVML library boundary

from fake_pynvml import FakeGpu, FakeNvml  # noqa: E402

from gputray.monitor.amd_sysfs import AmdSysfsBackend  # noqa: E402
from gputray.monitor.host import HostReader  # noqa: E402
from gputray.monitor.monitor import Monitor  # noqa: E402
from gputray.monitor.nvml_backend import NvmlBackend  # noqa: E402

PHOENIX = ROOT.parent / "shared" / "fixtures" / "amdgpu-sysfs" / "phoenix"
PROCESSES = 200
FDS_PER_PROCESS = 8  # stdin/out/err, a few files and sockets, one or two DRM fds


def build_sys(root: Path) -> Path:
    sys_dir = root / "sys"
    (sys_dir / "class").mkdir(parents=True)
    shutil.copytree(PHOENIX / "card1", sys_dir / "class" / "drm" / "card1", symlinks=True)
    shutil.copytree(PHOENIX / "kfd", sys_dir / "class" / "kfd" / "kfd", symlinks=True)
    return sys_dir


def fdinfo_text(pid: int, fd: int, round_no: int) -> str:
    """One DRM client's fdinfo; its engine counter grows each round, as a busy client's does."""
    return (
        f"pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1061\ndrm-driver:\tamdgpu\n"
        f"drm-client-id:\t{pid * 10 + fd}\ndrm-pdev:\t0000:64:00.0\n"
        f"drm-memory-vram:\t{fd * 1024} KiB\ndrm-memory-gtt:\t{fd * 4096} KiB\n"
        f"drm-memory-cpu:\t0 KiB\ndrm-engine-gfx:\t{pid * 1000 + round_no * 7_000_000} ns\n"
        f"drm-engine-compute:\t0 ns\ndrm-engine-dma:\t0 ns\n"
    )


DRM_FDS: list[tuple[Path, int, int]] = []  # (fdinfo path, pid, fd)


def advance_counters(round_no: int) -> None:
    for path, pid, fd in DRM_FDS:
        path.write_text(fdinfo_text(pid, fd, round_no))


def build_proc(root: Path) -> Path:
    proc = root / "proc"
    proc.mkdir()
    for i in range(PROCESSES):
        pid = 2000 + i
        (proc / str(pid) / "fd").mkdir(parents=True)
        (proc / str(pid) / "fdinfo").mkdir()
        (proc / str(pid) / "comm").write_text(f"worker{i}\n")
        for fd in range(FDS_PER_PROCESS):
            target = "/dev/null" if fd < 3 else f"socket:[{pid * 10 + fd}]"
            drm = fd in (5, 6) if i % 2 else fd == 5
            if drm:
                target = "/dev/dri/renderD128"
                DRM_FDS.append((proc / str(pid) / "fdinfo" / str(fd), pid, fd))
                DRM_FDS[-1][0].write_text(fdinfo_text(pid, fd, 0))
            os.symlink(target, proc / str(pid) / "fd" / str(fd))
    (proc / "self").symlink_to("2000")
    return proc


Access = tuple[str, str]  # ("open" | "listdir" | "readlink", path)


def record_accesses(action: Callable[[], Any]) -> list[Access]:
    """Every file opened, folder listed and link read while ``action`` runs, in order."""
    seen: list[Access] = []
    real = {"open": os.open, "listdir": os.listdir, "scandir": os.scandir, "readlink": os.readlink}
    real_builtin_open = builtins.open

    def wrap(kind: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def recorder(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            seen.append(("listdir" if kind == "scandir" else kind, os.fsdecode(path)))
            return func(path, *args, **kwargs)

        return recorder

    def py_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | bytes | os.PathLike):
            seen.append(("open", os.fsdecode(file)))
        return real_builtin_open(file, *args, **kwargs)

    for name, func in real.items():
        setattr(os, name, wrap(name, func))
    builtins.open = py_open  # type: ignore[assignment]
    try:
        action()
    finally:
        for name, func in real.items():
            setattr(os, name, func)
        builtins.open = real_builtin_open  # type: ignore[assignment]
    return seen


def floor(accesses: list[Access]) -> None:
    """The same system calls and nothing else: list the folders, read the links, open and read the files."""
    for kind, path in accesses:
        try:
            if kind == "open":
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.read(fd, 65536)
                finally:
                    os.close(fd)
            elif kind == "listdir":
                os.listdir(path)
            else:
                os.readlink(path)
        except OSError:
            pass


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gputray-bench-") as tmp:
        sys_dir, proc_dir = build_sys(Path(tmp)), build_proc(Path(tmp))
        nvml = NvmlBackend(FakeNvml([FakeGpu()]), sys_dir=sys_dir, use_sysfs=False, idle_release_s=None)
        amd = AmdSysfsBackend(sys_dir=sys_dir, proc_dir=proc_dir)
        monitor = Monitor([nvml, amd], host=HostReader())
        for _ in range(5):  # discovery, first fdinfo counters, NVML init
            monitor.sample_once()
        snap = monitor.sample_once()
        gpus = len(snap.readings)
        assert gpus == 2 and len(snap.processes) >= PROCESSES, (gpus, len(snap.processes))
        advance_counters(1)  # record a sample in which every client did work, as in the timed rounds
        accesses = record_accesses(monitor.sample_once)

        sample_s: list[float] = []
        floor_s: list[float] = []
        for round_no in range(2, args.rounds + 2):
            advance_counters(round_no)  # not timed: the clients did work since the last sample
            # Alternate which goes first: the second finds the same files warm in the caches.
            timed = [(sample_s, monitor.sample_once), (floor_s, lambda: floor(accesses))]
            for times, action in timed if round_no % 2 else reversed(timed):
                t0 = time.perf_counter()
                action()
                times.append(time.perf_counter() - t0)

        # Per GPU: each backend's device readings alone (no process scan), medians over the same rounds.
        amd_devices_only = AmdSysfsBackend(sys_dir=sys_dir, proc_dir=proc_dir, processes=False)
        per_gpu: dict[str, list[float]] = {"NVML (GeForce RTX 5060 Ti)": [], "amdgpu sysfs (Radeon 780M)": []}
        for i in range(args.rounds):
            for name, backend in zip(per_gpu, (nvml, amd_devices_only), strict=True):
                t0 = time.perf_counter()
                backend.poll(float(i))
                per_gpu[name].append(time.perf_counter() - t0)

    sample_ms = statistics.median(sample_s) * 1000
    floor_ms = statistics.median(floor_s) * 1000
    ratio = sample_ms / floor_ms
    print(f"devices: {gpus} GPUs ({', '.join(r.info.name for r in snap.readings)}) + host")
    counts = {k: sum(1 for kind, _ in accesses if kind == k) for k in ("open", "listdir", "readlink")}
    print(
        f"processes with DRM fds: {PROCESSES}; one sample: {counts['open']} files opened,"
        f" {counts['listdir']} folders listed, {counts['readlink']} links read"
    )
    print(f"rounds: {args.rounds} (medians)")
    print(f"full sample:      {sample_ms:8.3f} ms")
    print(f"floor (open+read): {floor_ms:7.3f} ms")
    print(f"ratio:            {ratio:8.2f} x   (goal <= 1.30 x)")
    print(f"per GPU, whole sample / {gpus}: {sample_ms / gpus:6.3f} ms (200 processes' scan included)")
    for name, times in per_gpu.items():
        print(f"per GPU, {name} readings: {statistics.median(times) * 1000:6.3f} ms  (goal <= 1 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
