"""Host CPU and RAM through psutil. On an APU the GPU's shared memory *is* this RAM."""

from __future__ import annotations

import psutil

from gputray.monitor.records import HostSample


class HostReader:
    def __init__(self) -> None:
        # The first cpu_percent(None) call only primes psutil's counters and returns 0.0.
        psutil.cpu_percent(interval=None)
        self._primed = False

    def read(self) -> HostSample:
        try:
            cpu = psutil.cpu_percent(interval=None)
            cpu_percent: float | None = cpu if self._primed else None
            self._primed = True
        except (OSError, RuntimeError):
            cpu_percent = None
        try:
            mem = psutil.virtual_memory()
            return HostSample(cpu_percent, int(mem.total - mem.available), int(mem.total))
        except (OSError, RuntimeError):
            return HostSample(cpu_percent, None, None)
