"""Per-process GPU use on Linux from DRM fdinfo (``Documentation/gpu/drm-usage-stats.rst``).

A process's DRM file descriptors are found by ``readlink`` of ``<proc>/PID/fd/N`` landing under
``/dev/dri/`` (no stat, so it works on captured trees too); ``<proc>/PID/fdinfo/N`` then holds
``drm-pdev``, ``drm-client-id``, ``drm-engine-<name>: <ns> ns`` and memory keys. Memory is taken from
``drm-resident-<region>``, else amdgpu's legacy ``drm-memory-<region>`` (the same figure), else
``drm-total-<region>``; values carry an optional ``KiB``/``MiB`` unit (bytes without one).

One ``drm_file`` can sit behind several fds (dup, fork); its ``drm-client-id`` is unique per device,
so clients are counted once per (pid, pdev, client id). Busy % is the growth of the engine counters
between two reads over the wall time between them, per client, the busier of ``gfx`` and ``compute``
(divided by ``drm-engine-capacity-<name>`` when given); a counter that went backwards (client id
reused, driver reset) gives no figure for that read. ROCm compute goes through ``/dev/kfd`` and does
not show in fdinfo: processes holding ``/dev/kfd`` are listed separately.

Cost matters (a desktop has hundreds of processes and this runs every second): plain ``os`` calls on
strings, one read per file, and only processes with a DRM or KFD fd get their fdinfo and comm read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gputray.monitor.sysfs import normalize_bdf

BUSY_ENGINES = ("gfx", "compute")
_UNITS = {b"": 1, b"B": 1, b"KiB": 1024, b"MiB": 1024 * 1024, b"GiB": 1024**3}
_MEMORY_PREFIXES = (b"drm-resident-", b"drm-memory-", b"drm-total-")
_ClientKey = tuple[int, str | None, str]


def read_file_bytes(path: str, limit: int = 1 << 16) -> bytes | None:
    """One file's bytes (up to ``limit``) with plain os calls; None if it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = []
        total = 0
        while total < limit:
            chunk = os.read(fd, limit - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


@dataclass(frozen=True)
class DrmClient:
    """One DRM client (an open ``drm_file``) as one fdinfo file describes it."""

    pid: int
    client_id: str | None
    pdev: str | None
    driver: str | None
    engines_ns: dict[str, int]
    capacities: dict[str, int]
    vram_bytes: int | None
    gtt_bytes: int | None
    fd: str = ""

    @property
    def identity(self) -> str:
        """What tells this client apart within its process: the client id, else the fd number."""
        return self.client_id if self.client_id is not None else f"fd{self.fd}"


def _int(value: bytes) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def _size(value: bytes) -> int | None:
    number, _, unit = value.strip().partition(b" ")
    factor = _UNITS.get(unit.strip())
    count = _int(number)
    return None if factor is None or count is None or count < 0 else count * factor


def parse_fdinfo(pid: int, raw: bytes, fd: str = "") -> DrmClient | None:
    """Parse one fdinfo file; None when it is not a DRM client (no ``drm-`` keys)."""
    driver: str | None = None
    pdev: str | None = None
    client_id: str | None = None
    engines: dict[str, int] = {}
    capacities: dict[str, int] = {}
    memory: dict[bytes, dict[str, int]] = {}
    seen = False
    for line in raw.split(b"\n"):
        if not line.startswith(b"drm-"):
            continue
        key, sep, value = line.partition(b":")
        if not sep:
            continue
        seen = True
        key = key.strip()
        if key.startswith(b"drm-engine-capacity-"):
            capacity = _int(value)
            if capacity is not None:
                capacities[key[20:].decode("ascii", "replace")] = capacity
        elif key.startswith(b"drm-engine-"):
            busy_ns = _int(value.strip().partition(b" ")[0])
            if busy_ns is not None:
                engines[key[11:].decode("ascii", "replace")] = busy_ns
        elif key == b"drm-pdev":
            pdev = normalize_bdf(value.decode("ascii", "replace"))
        elif key == b"drm-client-id":
            client_id = value.strip().decode("ascii", "replace") or None
        elif key == b"drm-driver":
            driver = value.strip().decode("ascii", "replace") or None
        else:
            for prefix in _MEMORY_PREFIXES:
                if key.startswith(prefix):
                    size = _size(value)
                    if size is not None:
                        region = key[len(prefix) :].decode("ascii", "replace")
                        memory.setdefault(prefix, {})[region] = size
                    break
    if not seen:
        return None
    vram = gtt = None
    for prefix in _MEMORY_PREFIXES:
        regions = memory.get(prefix)
        if regions and ("vram" in regions or "gtt" in regions):
            vram, gtt = regions.get("vram"), regions.get("gtt")
            break
    return DrmClient(pid, client_id, pdev, driver, engines, capacities, vram, gtt, fd)


@dataclass(frozen=True)
class DrmProcessUse:
    """One process's use of one DRM device (``pdev``), summed over its distinct clients."""

    pid: int
    name: str
    pdev: str | None
    driver: str | None
    vram_bytes: int | None
    gtt_bytes: int | None
    util_percent: float | None
    engines_used: frozenset[str]
    holds_kfd: bool


@dataclass(frozen=True)
class ProcUsage:
    drm: tuple[DrmProcessUse, ...] = ()
    kfd: tuple[tuple[int, str], ...] = ()  # (pid, name) of processes holding /dev/kfd


@dataclass
class _Found:
    clients: list[DrmClient]
    kfd_pids: set[int]
    names: dict[int, str]


def _comm(proc: str, pid_name: str) -> str:
    raw = read_file_bytes(f"{proc}/{pid_name}/comm", 256)
    if raw is None:
        return f"pid {pid_name}"
    return raw.rstrip(b"\n\x00").decode("utf-8", "replace") or f"pid {pid_name}"


def scan(proc_dir: Path) -> _Found:
    """Every DRM client and /dev/kfd holder under ``proc_dir`` (read as if it were /proc)."""
    proc = str(proc_dir)
    found = _Found([], set(), {})
    try:
        pids = os.listdir(proc)
    except OSError:
        return found
    seen: set[_ClientKey] = set()
    for pid_name in pids:
        if not pid_name.isdigit():
            continue
        fd_dir = f"{proc}/{pid_name}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        drm_fds: list[str] = []
        kfd = False
        for fd in fds:
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if target.startswith("/dev/dri/"):
                drm_fds.append(fd)
            elif target == "/dev/kfd":
                kfd = True
        if not drm_fds and not kfd:
            continue
        pid = int(pid_name)
        for fd in drm_fds:
            raw = read_file_bytes(f"{proc}/{pid_name}/fdinfo/{fd}")
            if raw is None:
                continue
            client = parse_fdinfo(pid, raw, fd)
            if client is None:
                continue
            key: _ClientKey = (pid, client.pdev, client.identity)
            if key in seen:
                continue
            seen.add(key)
            found.clients.append(client)
        if kfd:
            found.kfd_pids.add(pid)
        found.names[pid] = _comm(proc, pid_name)
    return found


class DrmUsageReader:
    """Reads DRM fdinfo each poll and turns engine counters into busy % between polls."""

    def __init__(self, proc_dir: Path = Path("/proc")) -> None:
        self.proc_dir = proc_dir
        self._previous: dict[_ClientKey, tuple[float, dict[str, int]]] = {}

    def _busy(self, key: _ClientKey, client: DrmClient, now_s: float) -> float | None:
        prev = self._previous.get(key)
        self._previous[key] = (now_s, client.engines_ns)
        if prev is None:
            return None
        then_s, before = prev
        wall_ns = (now_s - then_s) * 1e9
        if wall_ns <= 0:
            return None
        best: float | None = None
        for engine in BUSY_ENGINES:
            now_ns = client.engines_ns.get(engine)
            if now_ns is None:
                continue
            old_ns = before.get(engine)
            if old_ns is None:
                continue
            delta = now_ns - old_ns
            if delta < 0:
                return None  # counter went backwards: no figure this time, new baseline kept
            percent = 100.0 * delta / wall_ns / max(1, client.capacities.get(engine, 1))
            best = percent if best is None else max(best, percent)
        return None if best is None else min(100.0, best)

    def read(self, now_s: float) -> ProcUsage:
        found = scan(self.proc_dir)
        live: set[_ClientKey] = set()
        per_process: dict[tuple[int, str | None], list[tuple[DrmClient, float | None]]] = {}
        for client in found.clients:
            key: _ClientKey = (client.pid, client.pdev, client.identity)
            live.add(key)
            busy = self._busy(key, client, now_s)
            per_process.setdefault((client.pid, client.pdev), []).append((client, busy))
        for stale in self._previous.keys() - live:
            del self._previous[stale]
        uses = []
        for (pid, pdev), items in per_process.items():
            busies = [b for _, b in items if b is not None]
            uses.append(
                DrmProcessUse(
                    pid=pid,
                    name=found.names.get(pid, f"pid {pid}"),
                    pdev=pdev,
                    driver=items[0][0].driver,
                    vram_bytes=_sum(c.vram_bytes for c, _ in items),
                    gtt_bytes=_sum(c.gtt_bytes for c, _ in items),
                    util_percent=min(100.0, sum(busies)) if busies else None,
                    engines_used=frozenset(e for c, _ in items for e, ns in c.engines_ns.items() if ns > 0),
                    holds_kfd=pid in found.kfd_pids,
                )
            )
        kfd = tuple(sorted((pid, found.names.get(pid, f"pid {pid}")) for pid in found.kfd_pids))
        return ProcUsage(drm=tuple(sorted(uses, key=lambda u: (u.pid, u.pdev or ""))), kfd=kfd)


def _sum(values: Iterable[int | None]) -> int | None:
    total: int | None = None
    for value in values:
        if value is not None:
            total = value if total is None else total + value
    return total
