"""Per-process GPU use on Linux from DRM fdinfo (``Documentation/gpu/drm-usage-stats.rst``).

Which fds are DRM clients is :mod:`proc_walk`'s job (``readlink`` of ``<proc>/PID/fd/N`` landing
under ``/dev/dri/``, at a cost that does not grow with the desktop); ``<proc>/PID/fdinfo/N`` then holds
``drm-pdev``, ``drm-client-id``, engine counters and memory keys. Memory is taken from
``drm-resident-<region>``, else amdgpu's legacy ``drm-memory-<region>`` (the same figure), else
``drm-total-<region>``; values carry an optional ``KiB``/``MiB`` unit (bytes without one). Regions:
amdgpu ``vram``/``gtt``, i915 ``local0``/``system0``, xe ``vram0``/``gtt``/``system``.

Engine counters come in two shapes: ``drm-engine-<class>: <ns> ns`` (amdgpu ``gfx``, ``compute``,
``enc``, ``dec``...; i915 ``render``, ``copy``, ``video``, ``video-enhance``, ``compute``), whose growth
over wall time is the load, and xe's ``drm-cycles-<class>`` over ``drm-total-cycles-<class>`` (``rcs``,
``bcs``, ``vcs``, ``vecs``, ``ccs``), a ratio of GPU ticks; both are divided by
``drm-engine-capacity-<class>`` when given (several engines of one class). A counter that went
backwards (client id reused, driver reset) gives no figure for that read.

One ``drm_file`` can sit behind several fds (dup, fork); its ``drm-client-id`` is unique per device,
so clients are counted once per (pid, pdev, client id) for a process, and once per (pdev, client id)
for the device's total. A process's busy % is its busiest graphics/compute engine. ROCm compute goes
through ``/dev/kfd`` and does not show in fdinfo: processes holding ``/dev/kfd`` are listed separately.

Cost matters (this runs every second): plain ``os`` calls on strings, one read per file, an fdinfo
whose bytes did not change is not parsed again, and ``comm`` is read only for a new GPU client.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

from gputray.monitor.proc_walk import OpenWatch, ProcWalker, drm_device_nodes
from gputray.monitor.sysfs import normalize_bdf

# Engine classes whose load is "the GPU is busy" (amdgpu, i915, xe names), and how a process's
# engines read as graphics or compute (for ProcessUse.kind).
BUSY_ENGINES = frozenset({"gfx", "compute", "render", "rcs", "ccs"})
GFX_ENGINES = frozenset({"gfx", "render", "rcs"})
COMPUTE_ENGINES = frozenset({"compute", "ccs"})
_UNITS = {b"": 1, b"B": 1, b"KiB": 1024, b"MiB": 1024 * 1024, b"GiB": 1024**3}
_ClientKey = tuple[int, str | None, str]


def read_file_bytes(path: str, limit: int = 1 << 16) -> bytes | None:
    """One file's bytes (up to ``limit``) in one open and one read; None if it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, limit)  # sysfs and procfs hand a whole attribute over in one read
    except OSError:
        return None
    finally:
        os.close(fd)


class DrmClient(NamedTuple):
    """One DRM client (an open ``drm_file``) as one fdinfo file describes it.

    NamedTuples rather than frozen dataclasses here and below: they are as immutable and several
    times cheaper to build, which counts for hundreds of clients every second. ``identity`` tells the
    client apart within its process: the client id, else the fd number.

    ``engines_ns`` holds ``drm-engine-<class>`` (ns of busy time: amdgpu, i915); ``cycles`` and
    ``total_cycles`` xe's ``drm-cycles-<class>`` / ``drm-total-cycles-<class>`` (busy GPU ticks and
    all GPU ticks in the same time, so their ratio is the load without a wall clock).
    """

    pid: int
    client_id: str | None
    pdev: str | None
    driver: str | None
    engines_ns: dict[str, int]
    capacities: dict[str, int]
    vram_bytes: int | None
    gtt_bytes: int | None
    cycles: dict[str, int]
    total_cycles: dict[str, int]
    fd: str = ""
    identity: str = ""


def _int(value: bytes) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


# Only the keys gputray uses are matched, so one C-level pass does most of the work. The pattern
# starts with a literal newline (fdinfo always opens with "pos:"), which lets the regex engine skip
# ahead by substring search: about twice as fast as anchoring with ^ in MULTILINE mode.
_LINE = re.compile(
    rb"\ndrm-(engine-capacity-|engine-|total-cycles-|cycles-|resident-|memory-|total-|pdev|client-id|driver)"
    rb"([A-Za-z0-9_.\-]*):[ \t]*(\S*)[ \t]*(\S*)"
)
_TIER = {b"resident-": 0, b"memory-": 1, b"total-": 2}  # best first: resident, amdgpu legacy, total


def _region(name: bytes) -> int | None:
    """Memory region → 0 VRAM (amdgpu ``vram``, xe ``vram0``, i915 ``local0``), 1 GTT, 2 system RAM.

    amdgpu's ``cpu`` and the stolen regions are not counted (not GPU memory a job holds).
    """
    if name.startswith((b"vram", b"local")):
        return 0
    if name == b"gtt":
        return 1
    if name.startswith(b"system"):
        return 2
    return None


@functools.lru_cache(maxsize=256)  # a handful of distinct PCI addresses, parsed for every client
def _pdev(value: bytes) -> str | None:
    return normalize_bdf(value.decode("ascii", "replace"))


@functools.lru_cache(maxsize=256)
def _name(value: bytes) -> str:
    return value.decode("ascii", "replace")


def parse_fdinfo(pid: int, raw: bytes, fd: str = "") -> DrmClient | None:
    """Parse one fdinfo file; None when it is not a DRM client (none of the keys gputray reads).

    Every engine class is kept (``gfx``, ``enc``, ``render``, ``video``, ``rcs``, ``vcs``...);
    memory is VRAM and GPU-mapped system memory (``gtt``, else ``system``), summed over regions of a
    kind (multi-tile ``vram0`` + ``vram1``), from the best tier present. One regular-expression pass:
    this runs for every DRM fd whose bytes changed since the last tick.
    """
    lines = _LINE.findall(raw if raw[:4] != b"drm-" else b"\n" + raw)
    if not lines:
        return None
    driver: str | None = None
    pdev: str | None = None
    client_id: str | None = None
    engines: dict[str, int] = {}
    capacities: dict[str, int] = {}
    cycles: dict[str, int] = {}
    total_cycles: dict[str, int] = {}
    sizes: list[list[int | None]] = [[None, None, None], [None, None, None], [None, None, None]]
    for kind, name, value, unit in lines:
        if kind == b"engine-":
            number = _int(value)
            if number is not None:
                engines[_name(name)] = number
        elif kind == b"pdev":
            pdev = _pdev(value)
        elif kind == b"client-id":
            client_id = value.decode("ascii", "replace") or None
        elif kind == b"driver":
            driver = value.decode("ascii", "replace") or None
        elif kind == b"cycles-" or kind == b"total-cycles-" or kind == b"engine-capacity-":
            number = _int(value)
            if number is not None:
                target = cycles if kind == b"cycles-" else total_cycles if kind[0] == 116 else capacities
                target[_name(name)] = number
        else:
            region = _region(name)
            factor = _UNITS.get(unit)
            count = _int(value)
            if region is None or factor is None or count is None or count < 0:
                continue
            row = sizes[_TIER[kind]]
            have = row[region]
            row[region] = count * factor if have is None else have + count * factor
    vram = gtt = None
    for row in sizes:
        if row[0] is not None or row[1] is not None or row[2] is not None:
            vram, gtt = row[0], row[1] if row[1] is not None else row[2]
            break
    identity = client_id if client_id is not None else f"fd{fd}"
    return DrmClient(
        pid, client_id, pdev, driver, engines, capacities, vram, gtt, cycles, total_cycles, fd, identity
    )


def engine_busy(
    prev: tuple[float, DrmClient] | None, client: DrmClient, now_s: float
) -> dict[str, float] | None:
    """Per engine class, the % of the time between two reads of one client that it kept it busy.

    ns counters over wall time (divided by ``drm-engine-capacity``), xe's cycles over total cycles;
    None without a previous read, or when a counter went backwards (client id reused, driver reset:
    no figure this time, the new reading is the next baseline).
    """
    if prev is None:
        return None
    then_s, before = prev
    if before is client:  # the very same fdinfo bytes as last time: nothing ran
        names = client.engines_ns.keys() | client.cycles.keys()
        return dict.fromkeys(names, 0.0) if names else None
    busy: dict[str, float] = {}
    wall_ns = (now_s - then_s) * 1e9
    caps = client.capacities
    if wall_ns > 0:
        old = before.engines_ns
        for engine, now_ns in client.engines_ns.items():
            old_ns = old.get(engine)
            if old_ns is None:
                continue
            delta = now_ns - old_ns
            if delta < 0:
                return None
            busy[engine] = min(100.0, 100.0 * delta / wall_ns / max(1, caps.get(engine, 1)))
    old_cycles, old_total = before.cycles, before.total_cycles
    for engine, now_c in client.cycles.items():
        was_c, was_t, now_t = old_cycles.get(engine), old_total.get(engine), client.total_cycles.get(engine)
        if was_c is None or was_t is None or now_t is None:
            continue
        delta, span = now_c - was_c, now_t - was_t
        if delta < 0 or span < 0:
            return None
        if span > 0:
            busy[engine] = min(100.0, 100.0 * delta / span / max(1, caps.get(engine, 1)))
        elif delta == 0:
            busy[engine] = 0.0
    return busy if busy or client.engines_ns or client.cycles else None


def _util(busy: dict[str, float] | None) -> float | None:
    """A client's or process's busy %: the busiest of its graphics/compute engines (0 if it used none)."""
    if busy is None:
        return None
    return max((v for k, v in busy.items() if k in BUSY_ENGINES), default=0.0)


def _used(client: DrmClient) -> set[str]:
    used: set[str] = set()
    for counters in (client.engines_ns, client.cycles):
        for engine, value in counters.items():
            if value > 0:
                if engine in GFX_ENGINES:
                    used.add("gfx")
                elif engine in COMPUTE_ENGINES:
                    used.add("compute")
    return used


class DrmProcessUse(NamedTuple):
    """One process's use of one DRM device (``pdev``), summed over its distinct clients."""

    pid: int
    name: str
    pdev: str | None
    driver: str | None
    vram_bytes: int | None
    gtt_bytes: int | None
    util_percent: float | None
    engines_used: tuple[str, ...]  # "gfx" / "compute": which kinds of engine it has used at all
    holds_kfd: bool
    # (engine class, %) pairs of this read (a tuple: the record is hashable); None without a baseline
    engine_percent: tuple[tuple[str, float], ...] | None = None


@dataclass(frozen=True)
class DeviceClients:
    """All readable clients of one DRM device (``pdev``) together, each client counted once.

    ``engine_percent`` per engine class (summed over clients, capped at 100); empty when no client
    had a baseline yet. ``measured`` is False on the first read (no figure can exist yet).
    """

    engine_percent: dict[str, float]
    vram_bytes: int | None
    gtt_bytes: int | None
    clients: int


@dataclass(frozen=True)
class ProcUsage:
    drm: tuple[DrmProcessUse, ...] = ()
    kfd: tuple[tuple[int, str], ...] = ()  # (pid, name) of processes holding /dev/kfd
    devices: dict[str | None, DeviceClients] = field(default_factory=dict)
    measured: bool = False  # a previous read exists: per-engine figures can be there

    def drm_pids(self) -> set[int]:
        return {u.pid for u in self.drm}


def device_engine(usage: ProcUsage, pdev: str, prefixes: tuple[str, ...]) -> float | None:
    """A device's load on the engine classes starting with ``prefixes`` (``("enc",)``: ``enc``,
    ``enc_1``...), the busiest of them; 0 when no readable client uses it; None before two reads."""
    if not usage.measured:
        return None
    clients = usage.devices.get(pdev)
    if clients is None:
        return 0.0  # no DRM client at all: nothing can be running on it
    if not clients.engine_percent:
        return None  # clients without a baseline yet
    return max((v for k, v in clients.engine_percent.items() if k.startswith(prefixes)), default=0.0)


def _comm(proc: str, pid: int) -> str:
    raw = read_file_bytes(f"{proc}/{pid}/comm", 256)
    if raw is None:
        return f"pid {pid}"
    return raw.rstrip(b"\n\x00").decode("utf-8", "replace") or f"pid {pid}"


_RawCache = dict[tuple[int, str], tuple[bytes, "DrmClient | None"]]


def _default_open_watch(proc_dir: Path) -> OpenWatch | None:
    if proc_dir != Path("/proc"):
        return None  # a captured or built tree: its processes are not this machine's nodes' users
    return OpenWatch.create(drm_device_nodes())


class DrmUsageReader:
    """Per-process DRM use each tick, at desktop scale (see ``proc_walk.py``); busy % between reads.

    One reader serves every Linux DRM backend (amdgpu, Intel, the others): ``read`` does the work
    once per ``now_s`` and hands the same result to each caller of that tick.
    """

    def __init__(
        self,
        proc_dir: Path = Path("/proc"),
        *,
        walker: ProcWalker | None = None,
    ) -> None:
        self.proc_dir = proc_dir
        self._watch_nodes = walker is None and proc_dir == Path("/proc")  # the real nodes, and only then
        self.walker = walker or ProcWalker(str(proc_dir), open_watch=_default_open_watch(proc_dir))
        self._previous: dict[_ClientKey, tuple[float, DrmClient]] = {}
        self._raw: _RawCache = {}
        self._names: dict[int, tuple[frozenset[str], str]] = {}  # pid -> (client identities, name)
        self._kfd_names: dict[int, str] = {}
        self._last: tuple[float, ProcUsage] | None = None
        self._reads = 0
        self._nodes_checked_s: float | None = None
        self._last_listed = False

    def watch_pids(self, pids: frozenset[int]) -> None:
        """The queue's own jobs: walked every tick, so their GPU use shows at once."""
        self.walker.watch(pids)

    def close(self) -> None:
        self.walker.close()

    def read(self, now_s: float) -> ProcUsage:
        last = self._last
        if last is not None and last[0] == now_s:
            return last[1]
        usage = self._read(now_s)
        self._last = (now_s, usage)
        return usage

    def _refresh_nodes(self, now_s: float) -> None:
        """An eGPU plugged in adds a render node: watch it too (looked at every 10 s)."""
        if not self._watch_nodes:
            return
        if self._nodes_checked_s is not None and now_s - self._nodes_checked_s < 10.0:
            return
        self._nodes_checked_s = now_s
        watch = self.walker.open_watch
        if watch is None:  # no node could be watched at start (no GPU yet, an eGPU plugged in later)
            self.walker.open_watch = OpenWatch.create(drm_device_nodes())
        else:
            watch.set_paths(drm_device_nodes())

    def _clients(self, now_s: float) -> tuple[list[DrmClient], set[int], _RawCache]:
        walker = self.walker
        found = walker.tick(now_s)
        self._last_listed = found.listed  # without a /proc to read no figure can be had

        proc = str(self.proc_dir)
        cache = self._raw
        raw_seen: _RawCache = {}
        clients: list[DrmClient] = []
        seen: set[_ClientKey] = set()
        for pid, fds in found.drm.items():
            info_dir = f"{proc}/{pid}/fdinfo/"
            retried = False
            pending = list(fds)
            while pending:
                fd = pending.pop()
                raw = read_file_bytes(info_dir + fd)
                cached = cache.get((pid, fd))
                if raw is not None and cached is not None and cached[0] == raw:
                    client = cached[1]
                else:
                    client = parse_fdinfo(pid, raw, fd) if raw is not None else None
                if client is None or raw is None:
                    if not retried:  # closed, or its number now holds another file: walk it again
                        retried = True
                        pending = [f for f in walker.rewalk(pid, now_s) if (pid, f) not in raw_seen]
                    continue
                raw_seen[pid, fd] = (raw, client)
                key: _ClientKey = (pid, client.pdev, client.identity)
                if key not in seen:
                    seen.add(key)
                    clients.append(client)
        return clients, found.kfd, raw_seen

    def _read(self, now_s: float) -> ProcUsage:
        self._refresh_nodes(now_s)
        clients, kfd_pids, raw_seen = self._clients(now_s)
        self._raw = raw_seen
        self._reads += 1
        previous = self._previous
        baselines: dict[_ClientKey, tuple[float, DrmClient]] = {}
        per_process: dict[tuple[int, str | None], list[tuple[DrmClient, dict[str, float] | None]]] = {}
        devices: dict[str | None, tuple[dict[str, float], list[int | None], int]] = {}
        device_seen: set[tuple[str | None, str]] = set()
        for client in clients:
            key: _ClientKey = (client.pid, client.pdev, client.identity)
            busy = engine_busy(previous.get(key), client, now_s)
            baselines[key] = (now_s, client)
            group = per_process.get(key[:2])
            if group is None:
                per_process[key[:2]] = [(client, busy)]
            else:
                group.append((client, busy))
            # The device's total: a drm_file shared by parent and child (fork) counts once.
            dev_key = (client.pdev, client.client_id or f"{client.pid}/{client.fd}")
            if dev_key in device_seen:
                continue
            device_seen.add(dev_key)
            engines, memory, count = devices.get(client.pdev) or ({}, [None, None], 0)
            for engine, pct in (busy or {}).items():
                engines[engine] = min(100.0, engines.get(engine, 0.0) + pct)
            for i, value in enumerate((client.vram_bytes, client.gtt_bytes)):
                if value is not None:
                    memory[i] = value if memory[i] is None else memory[i] + value  # type: ignore[operator]
            devices[client.pdev] = (engines, memory, count + 1)
        self._previous = baselines  # clients that went away are forgotten
        uses = []
        for (pid, pdev), items in per_process.items():
            first = items[0][0]
            if len(items) == 1:  # the common case, kept cheap
                busy = items[0][1]
                vram, gtt = first.vram_bytes, first.gtt_bytes
                used = _used(first)
            else:
                busy = vram = gtt = None
                used = set()
                for client, client_busy in items:
                    if client_busy is not None and busy is None:
                        busy = dict(client_busy)
                    elif client_busy is not None and busy is not None:
                        for engine, pct in client_busy.items():
                            busy[engine] = min(100.0, busy.get(engine, 0.0) + pct)
                    if client.vram_bytes is not None:
                        vram = client.vram_bytes if vram is None else vram + client.vram_bytes
                    if client.gtt_bytes is not None:
                        gtt = client.gtt_bytes if gtt is None else gtt + client.gtt_bytes
                    used |= _used(client)
            name = self._name(pid, items)
            engines_used = tuple(e for e in ("gfx", "compute") if e in used)
            uses.append(
                DrmProcessUse(
                    pid,
                    name,
                    pdev,
                    first.driver,
                    vram,
                    gtt,
                    _util(busy),
                    engines_used,
                    pid in kfd_pids,
                    None if busy is None else tuple(busy.items()),
                )
            )
        uses.sort(key=itemgetter(0))
        live = {u.pid for u in uses}
        for pid in [p for p in self._names if p not in live]:
            del self._names[pid]
        kfd = tuple(sorted((pid, self._kfd_name(pid)) for pid in kfd_pids))
        for pid in [p for p in self._kfd_names if p not in kfd_pids]:
            del self._kfd_names[pid]
        return ProcUsage(
            drm=tuple(uses),
            kfd=kfd,
            devices={
                pdev: DeviceClients(engines, memory[0], memory[1], count)
                for pdev, (engines, memory, count) in devices.items()
            },
            measured=self._reads > 1 and self._last_listed,
        )

    def _name(self, pid: int, items: list[tuple[DrmClient, dict[str, float] | None]]) -> str:
        """A process keeps its name while its DRM clients stay the same ones (a new process under a
        reused pid has new client ids): ``comm`` is read only when they change."""
        identities = frozenset(c.identity for c, _ in items)
        have = self._names.get(pid)
        if have is not None and have[0] == identities:
            return have[1]
        same_process = have is not None and have[0] <= identities  # it opened one more client
        name = have[1] if have is not None and same_process else _comm(str(self.proc_dir), pid)
        self._names[pid] = (identities, name)
        return name

    def _kfd_name(self, pid: int) -> str:
        name = self._names.get(pid)
        if name is not None:
            return name[1]
        kfd = self._kfd_names.get(pid)
        if kfd is None:
            kfd = self._kfd_names[pid] = _comm(str(self.proc_dir), pid)
        return kfd
