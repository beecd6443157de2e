"""Builds the Monitor with the backends that fit this machine (or the simulated pair for the demo)."""

from __future__ import annotations

import sys
from pathlib import Path

from gputray.monitor.backends.base import Backend
from gputray.monitor.host import HostReader
from gputray.monitor.monitor import Monitor
from gputray.monitor.records import Snapshot
from gputray.monitor.scenario import Scenario, load_scenario
from gputray.monitor.verdict import BusyThresholds


def real_backends(sysfs_root: Path = Path("/sys"), proc_root: Path = Path("/proc")) -> list[Backend]:
    """NVML first (it knows NVIDIA best), then the OS sources (PDH on Windows; on Linux amdgpu, Intel
    and every other DRM card, sharing one DRM process reader), then amdsmi to fill gaps."""
    from gputray.monitor.backends.amdsmi import AmdSmiBackend
    from gputray.monitor.backends.nvidia import NvmlBackend

    nvml = NvmlBackend(sys_dir=sysfs_root)
    backends: list[Backend] = [nvml]
    if sys.platform == "win32":
        from gputray.monitor.backends.pdh import WindowsPdhBackend

        # When Windows cannot say which PCI address an adapter LUID has, PDH matches by name and size
        # against the GPUs NVML knows, so the 5060 Ti still shows once.
        backends.append(WindowsPdhBackend(candidates=nvml.known_devices))
    else:
        from gputray.monitor.backends.amd import AmdSysfsBackend
        from gputray.monitor.backends.drm_other import OtherDrmBackend
        from gputray.monitor.backends.intel import IntelSysfsBackend
        from gputray.monitor.fdinfo import DrmUsageReader

        usage = DrmUsageReader(proc_root)  # one walk of /proc per tick, for every DRM backend
        backends.append(AmdSysfsBackend(sys_dir=sysfs_root, proc_dir=proc_root, usage=usage))
        backends.append(IntelSysfsBackend(sys_dir=sysfs_root, proc_dir=proc_root, usage=usage))
        backends.append(OtherDrmBackend(sys_dir=sysfs_root, proc_dir=proc_root, usage=usage))
    backends.append(AmdSmiBackend())
    return backends


def build_monitor(
    *,
    demo: bool = False,
    scenario: Path | Scenario | None = None,
    sysfs_root: Path = Path("/sys"),
    proc_root: Path = Path("/proc"),
    thresholds: BusyThresholds | None = None,
    interval_s: float = 1.0,
    history_s: float = 3900.0,
) -> Monitor:
    """``sysfs_root``/``proc_root`` are read as if they were /sys and /proc (captured trees, tests).

    A scenario file is read here; a malformed one raises ScenarioError with the file and the entry.
    """
    backends: list[Backend]
    if demo or scenario is not None:
        from gputray.monitor.backends.simulated import SimulatedBackend

        loaded = load_scenario(scenario) if isinstance(scenario, Path) else scenario
        backends = [SimulatedBackend(loaded)]
    else:
        backends = real_backends(sysfs_root, proc_root)
    return Monitor(
        backends, host=HostReader(), interval_s=interval_s, history_s=history_s, thresholds=thresholds
    )


def has_gpu(snapshot: Snapshot) -> bool:
    return any(r.info.kind != "cpu" for r in snapshot.readings)
