"""Which processes hold a DRM or KFD file descriptor, at a cost that does not grow with the desktop.

The only way to learn it without root is to walk ``/proc/PID/fd`` (``readlink`` of every fd). A desktop
has 400–500 processes and tens of thousands of fds; one full walk of a built 500 × 60 tree costs
~87 ms, 9 % of a core at 1 Hz, for the handful of processes that are GPU clients. So a full walk is
never done per tick (after the first). Per tick, :class:`ProcWalker`:

1. lists ``/proc`` when a task was created (``/proc/loadavg`` names the newest pid; else every
   ``LISTING_S``); an exited GPU client is gone at once (its fdinfo no longer reads);
2. walks a pid the first time it appears (a new process is seen within one tick);
3. walks the pids it was asked to :meth:`~ProcWalker.watch` (the queue's own jobs, and their
   children) every tick, so our own jobs are attributed at once;
4. re-walks a pid whose known DRM fd no longer reads as a DRM client (closed, or the number reused);
5. runs a rolling *sweep*: each tick visits ``n × Δt / sweep_s`` pids in turn (fractions carried to
   the next tick), so every pid is visited once per ``sweep_s`` (4 s: a process that opens the render
   node seconds after it started, like a torch job, is seen within 5 s at 1 Hz). A visit is one ``stat`` of
   ``/proc/PID/fd``, whose size is the number of open fds on Linux ≥ 6.2: only a pid whose count
   changed since its last walk is walked again. Where the sizes turn out to be no counts (kernels
   before 6.2 report 0; Debian 12 ships 6.1), a visit reads ``/proc/PID/stat`` instead: a process
   whose start time, CPU time and page-fault counts did not move since its last visit has not run,
   so it opened nothing, and is left alone; one that ran has its fd folder listed (no link read) and
   is walked only when its fd numbers changed since its last walk (the *fd-table signature*).
   Walking a quarter of the pids a tick instead cost 8x the stat probe in two daemons side by side.
   (Setting up a GPU context runs for milliseconds and faults pages in; an open that moved none of
   those counters is left to the inotify round and the slow cursor below.)
6. A second, slower rolling cursor walks every pid once per ``deep_s`` whatever its count says: an fd
   can be replaced by a DRM fd without the count changing (close one, open the render node). When
   the DRM device nodes can be watched with inotify (``IN_OPEN``; see :class:`OpenWatch`), an open that
   no walk of the tick explains makes the next sweep round walk instead of ``stat`` (at most one such
   round per ``FORCED_GAP_S``), which closes that gap for the common case; fds passed over a socket
   (SCM_RIGHTS) and nodes inside containers are then found by the slow cursor within ``deep_s``.

Other users' fds are unreadable without root: such a pid is remembered as unreadable and only tried
again by the slow cursor; that is normal, not an error. Everything here is plain ``os`` calls on
strings: this runs every second.
"""

from __future__ import annotations

import bisect
import ctypes
import ctypes.util
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

SWEEP_S = 4.0
"""Every pid is looked at (one stat) at least this often: a late-opened render node shows within 5 s."""
DEEP_S = 600.0
"""Every pid is walked in full at least this often, whatever its fd count says: the backstop for an fd
swapped in without the count changing and without an open the inotify watch saw (an fd passed over a
socket, a device node inside a container). 500 × 60 fds walked once per 10 min costs ~0.1 ms a tick."""
LISTING_S = 30.0
"""With no task created, /proc is still listed this often (to forget processes that exited)."""
FORCED_GAP_S = 20.0
"""An unexplained open starts a walking sweep round at most this often: something that opens the render
node every second (a polling tool) costs at most one full walk per 20 s, not one per 4 s."""
DRI_PREFIX = "/dev/dri/"
KFD_PATH = "/dev/kfd"


@dataclass(slots=True)
class PidFds:
    """What the last walk of one pid found. ``size`` is ``st_size`` of its fd folder at that walk;
    ``fd_dir`` that folder's path (built once: the sweep stats it every few seconds). ``signature``:
    a hash of the fd numbers that walk listed, ``activity`` one of the start time, CPU time and fault
    counts of ``/proc/PID/stat`` at the last sweep visit (the probes where sizes are no counts)."""

    fd_dir: str
    drm_fds: tuple[str, ...] = ()
    kfd_fds: tuple[str, ...] = ()
    size: int | None = None
    signature: int | None = None
    activity: int | None = None
    walked_s: float = 0.0
    unreadable: bool = False
    empty: bool = False  # no fd at all: a kernel thread (they never open files)


@dataclass
class TickStats:
    """What one tick cost, in system-call units (the benchmark prints these)."""

    pids: int = 0
    listed: bool = False  # /proc was listed this tick (a task was created, or every LISTING_S)
    walks: int = 0
    probes: int = 0  # stat()s of an fd folder (where its size counts its fds)
    stat_reads: int = 0  # reads of /proc/PID/stat (the sweep's probe where sizes are no counts)
    lists: int = 0  # listings of an fd folder without reading links (a pid that ran since its last visit)
    fds_read: int = 0


@dataclass
class WalkResult:
    """The GPU clients after one tick: pid → its DRM fd numbers; the pids holding ``/dev/kfd``."""

    drm: dict[int, tuple[str, ...]] = field(default_factory=dict)
    kfd: set[int] = field(default_factory=set)
    new_drm: set[int] = field(default_factory=set)  # pids whose set of DRM fds changed this tick
    listed: bool = False  # the proc folder could be listed at all


class OpenWatch:
    """``IN_OPEN`` inotify watches on the DRM device nodes (and ``/dev/kfd``): did anyone open one?

    inotify reports opens of a device node by any process the kernel lets us watch (read access to
    the node, which a user of the GPU has), without saying who: :class:`ProcWalker` then sweeps.
    Linux only; where inotify or the nodes are unavailable :meth:`create` returns None and the
    walker relies on its slow cursor for count-preserving fd swaps.
    """

    IN_OPEN = 0x20
    _IN_NONBLOCK = getattr(os, "O_NONBLOCK", 0o4000)  # the attribute exists only where inotify can
    _IN_CLOEXEC = 0o2000000

    def __init__(self, fd: int, libc: ctypes.CDLL) -> None:
        self._fd = fd
        self._libc = libc
        self._watched: dict[str, int] = {}

    @classmethod
    def create(cls, paths: Iterable[str]) -> OpenWatch | None:
        if not hasattr(os, "O_NONBLOCK"):
            return None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            init = libc.inotify_init1
        except (OSError, AttributeError):
            return None
        fd = init(cls._IN_NONBLOCK | cls._IN_CLOEXEC)
        if fd < 0:
            return None
        watch = cls(fd, libc)
        watch.set_paths(paths)
        if not watch._watched:
            watch.close()
            return None
        return watch

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(sorted(self._watched))

    def set_paths(self, paths: Iterable[str]) -> None:
        """Watch exactly these nodes (an eGPU plugged in adds a render node)."""
        wanted = set(paths)
        for path in [p for p in self._watched if p not in wanted]:
            self._libc.inotify_rm_watch(self._fd, self._watched.pop(path))
        for path in sorted(wanted - self._watched.keys()):
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), self.IN_OPEN)
            if wd >= 0:
                self._watched[path] = wd

    def opened(self) -> bool:
        """True when a watched node was opened since the last call (events are drained)."""
        seen = False
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return seen
            except OSError:
                return seen
            if not data:
                return seen
            seen = True

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def drm_device_nodes(dev_dir: str = "/dev") -> list[str]:
    """The DRM nodes (``/dev/dri/card*``, ``renderD*``) and ``/dev/kfd`` that exist here."""
    nodes = [f"{dev_dir}/kfd"] if os.path.exists(f"{dev_dir}/kfd") else []
    try:
        names = os.listdir(f"{dev_dir}/dri")
    except OSError:
        return nodes
    nodes += [f"{dev_dir}/dri/{n}" for n in sorted(names) if n.startswith(("card", "renderD"))]
    return nodes


class ProcWalker:
    """Finds the DRM and KFD fds of every process; see the module docstring for the schedule.

    ``open_watch``: an :class:`OpenWatch` (or None). The default for the real ``/proc`` watches the
    real device nodes; for a captured or built tree there is none (its processes are not real).
    """

    def __init__(
        self,
        proc_dir: str,
        *,
        sweep_s: float = SWEEP_S,
        deep_s: float = DEEP_S,
        open_watch: OpenWatch | None = None,
    ) -> None:
        self.proc = proc_dir
        self.sweep_s = sweep_s
        self.deep_s = deep_s
        self.open_watch = open_watch
        self.stats = TickStats()
        self._pids: dict[int, PidFds] = {}
        self._order: list[int] = []  # sorted pids: the sweep's round
        self._sweep_after = -1  # the sweep resumes after this pid
        self._credit = [0.0, 0.0]  # visits owed to the sweep and to the slow cursor (fractions)
        self._deep_after = -1
        self._last_s: float | None = None
        self._watched: frozenset[int] = frozenset()
        self._probe_ok: bool | None = None  # does st_size of an fd folder count its fds?
        self._votes = [0, 0]  # first walks whose fd folder size did not / did match their fd count
        self._forced_walks = 0  # an unexplained open: this many sweep visits walk instead of stat
        self._forced_at_s = float("-inf")
        self._open_pending = False
        self._gpu_pids: set[int] = set()  # pids whose last walk found a DRM or KFD fd
        self._last_names: list[str] = []
        self._current: set[int] = set()
        self._newest_pid: str | None = None
        self._listed_s = float("-inf")
        self.ticks = 0

    # -- what the owner says -------------------------------------------------------------------------

    def watch(self, pids: Iterable[int]) -> None:
        """Walk these pids (and their children) every tick: the queue's own jobs."""
        self._watched = frozenset(pids)

    def rewalk(self, pid: int, now_s: float) -> tuple[str, ...]:
        """Walk one known pid again now (a DRM fd of it stopped reading as a DRM client); its DRM fds."""
        if pid not in self._pids:
            return ()
        self._walk(pid, now_s, WalkResult())
        return self._pids[pid].drm_fds

    def close(self) -> None:
        if self.open_watch is not None:
            self.open_watch.close()
            self.open_watch = None

    # -- one tick ------------------------------------------------------------------------------------

    def _listing_due(self, now_s: float) -> bool:
        """Whether ``/proc`` must be listed this tick: a task was created since the last listing (the
        last field of ``/proc/loadavg`` is the newest pid), or it is ``LISTING_S`` since the last one.
        Listing 500 entries costs more than the rest of a quiet tick; one small read settles it. A tree
        without ``loadavg`` (captured, built) is listed every tick. Exits need no listing: a GPU
        client's fdinfo stops reading at once, and the next listing drops the rest."""
        raw = _read(f"{self.proc}/loadavg")
        newest = raw.rsplit(None, 1)[-1] if raw and raw.strip() else None
        due = newest is None or newest != self._newest_pid or now_s - self._listed_s >= LISTING_S
        self._newest_pid = newest
        return due or self._listed_s == float("-inf")

    def tick(self, now_s: float) -> WalkResult:
        self.stats = TickStats()
        result = WalkResult()
        if self._listing_due(now_s):
            try:
                names = os.listdir(self.proc)
            except OSError:
                self._pids.clear()
                self._gpu_pids.clear()
                self._order, self._last_names, self._current = [], [], set()
                self._listed_s = float("-inf")
                return result
            self._listed_s = now_s
            self.stats.listed = True
            if names != self._last_names:  # a process started or exited
                self._update_pids(names)
        result.listed = True
        known = self._pids
        current = self._current
        self.stats.pids = len(current)
        dt = self.sweep_s if self._last_s is None else max(0.0, now_s - self._last_s)
        self._last_s = now_s
        self.ticks += 1

        walked: set[int] = set()
        for pid in current - known.keys() if len(known) != len(current) else ():  # new: within one tick
            self._walk(pid, now_s, result)
            walked.add(pid)
        for pid in self._own_pids(current):
            if pid not in walked:
                self._walk(pid, now_s, result)
                walked.add(pid)
        for pid in [p for p in self._gpu_pids if known[p].kfd_fds and p not in walked]:
            if not self.kfd_alive(pid):  # a ROCm user closed /dev/kfd: see what it holds now
                self._walk(pid, now_s, result)
                walked.add(pid)

        if self._probe_ok is None and 0 < sum(self._votes) >= min(8, len(current)):
            self._probe_ok = self._votes[1] >= 0.9 * sum(self._votes)  # a few races are no evidence
            if not self._probe_ok:
                log.info("%s: fd folder sizes are no fd counts; the sweep lists instead of stat", self.proc)
        opened = self.open_watch.opened() if self.open_watch is not None else False
        self._sweep(now_s, dt, walked, result)
        if opened and not result.new_drm:
            self._open_pending = True
        if self._open_pending and self._forced_walks <= 0 and now_s - self._forced_at_s >= FORCED_GAP_S:
            # Someone opened a DRM node and no walk explained it: an existing process whose fd count
            # did not change. The next full round of sweep visits walks instead of stat.
            self._forced_walks = len(self._order)
            self._forced_at_s = now_s
            self._open_pending = False
        self._deep(now_s, dt, walked, result)

        for pid in self._gpu_pids:
            state = known[pid]
            if state.drm_fds:
                result.drm[pid] = state.drm_fds
            if state.kfd_fds:
                result.kfd.add(pid)
        return result

    def _update_pids(self, names: list[str]) -> None:
        known = self._pids
        self._last_names = names
        self._current = {int(n) for n in names if n.isdigit()}
        if len(known) != len(self._current) or not self._current.issuperset(known):
            for pid in known.keys() - self._current:  # exited: gone at this tick
                del known[pid]
                self._gpu_pids.discard(pid)
        self._order = sorted(self._current)

    def _own_pids(self, current: set[int]) -> list[int]:
        if not self._watched:
            return []
        out: list[int] = []
        for pid in self._watched:
            if pid not in current:
                continue
            out.append(pid)
            raw = _read(f"{self.proc}/{pid}/task/{pid}/children")
            if raw:
                out.extend(int(c) for c in raw.split() if c.isdigit() and int(c) in current)
        return out

    def _quota(self, dt: float, period_s: float, cursor: int) -> int:
        """How many pids a cursor visits this tick: ``n × Δt / period``, the fractions carried over to
        the next tick, so a round takes ``period`` however the ticks fall, and a slow cursor costs
        0.8 walks a tick on 500 pids, not one (``ceil`` would make it one whatever the period)."""
        n = len(self._order)
        if n == 0:
            return 0
        credit = self._credit[cursor] + n * min(1.0, dt / period_s)
        count = min(n, int(credit))
        self._credit[cursor] = min(float(n), credit - count)
        return count

    def _round(self, after: int, count: int) -> tuple[list[int], int]:
        """The next ``count`` pids of the round after pid ``after``, wrapping; and the last one."""
        order = self._order
        start = bisect.bisect_right(order, after)
        picked = order[start : start + count]
        if len(picked) < count:
            picked += order[: count - len(picked)]
        return picked, (picked[-1] if picked else after)

    def _sweep(self, now_s: float, dt: float, walked: set[int], result: WalkResult) -> None:
        picked, self._sweep_after = self._round(self._sweep_after, self._quota(dt, self.sweep_s, 0))
        known = self._pids
        if self._forced_walks <= 0 and self._probe_ok is False:
            self._sweep_by_listing(picked, now_s, walked, result)
            return
        if self._forced_walks > 0 or self._probe_ok is None:
            for pid in picked:
                state = known.get(pid)
                if state is not None and not state.unreadable and pid not in walked:
                    self._forced_walks = max(0, self._forced_walks - 1)
                    self._walk(pid, now_s, result)
                    walked.add(pid)
            return
        stat = os.stat
        probes = 0
        for pid in picked:
            state = known.get(pid)
            if state is None or state.unreadable or state.empty or pid in walked:
                continue  # kernel threads hold no fds: the slow cursor still looks at them
            probes += 1
            try:
                size = stat(state.fd_dir).st_size
            except OSError:
                continue  # exiting: the next listing drops it
            if size != state.size:
                self._walk(pid, now_s, result)
                walked.add(pid)
        self.stats.probes += probes

    def _sweep_by_listing(
        self, picked: list[int], now_s: float, walked: set[int], result: WalkResult
    ) -> None:
        """The sweep where fd folder sizes are no counts: a pid that ran since its last visit (its
        stat line moved; a tree without stat lines: always) has its fd folder listed, no link read,
        and is walked only if its fd numbers are not those of its last walk."""
        known = self._pids
        listdir = os.listdir
        proc = self.proc
        stat_reads = lists = 0
        for pid in picked:
            state = known.get(pid)
            if state is None or state.unreadable or pid in walked:
                continue
            stat_reads += 1
            activity = _activity(_read(f"{proc}/{pid}/stat"))
            if activity is not None:
                if activity == state.activity:
                    continue  # it has not run: it opened nothing
                state.activity = activity  # before the listing: what it opens after shows next time
            lists += 1
            try:
                signature = hash("/".join(listdir(state.fd_dir)))
            except OSError:
                continue  # exiting: the next listing drops it
            if signature != state.signature:
                self._walk(pid, now_s, result)
                walked.add(pid)
        self.stats.stat_reads += stat_reads
        self.stats.lists += lists

    def _deep(self, now_s: float, dt: float, walked: set[int], result: WalkResult) -> None:
        picked, self._deep_after = self._round(self._deep_after, self._quota(dt, self.deep_s, 1))
        for pid in picked:
            if pid not in walked and pid in self._pids:
                self._walk(pid, now_s, result)
                walked.add(pid)

    def _walk(self, pid: int, now_s: float, result: WalkResult) -> None:
        """listdir + readlink of every fd of one pid; records its DRM and KFD fds."""
        self.stats.walks += 1
        state = self._pids.get(pid)
        if state is None:
            state = self._pids[pid] = PidFds(f"{self.proc}/{pid}/fd")
        fd_dir = state.fd_dir + "/"
        state.walked_s = now_s
        try:
            size: int | None = os.stat(fd_dir).st_size  # before the listing: an fd opened after it shows
            fds = os.listdir(fd_dir)
        except OSError:
            state.drm_fds, state.kfd_fds, state.unreadable, state.size = (), (), True, None
            self._gpu_pids.discard(pid)
            return
        readlink = os.readlink
        try:
            targets = [readlink(fd_dir + fd) for fd in fds]
        except OSError:  # an fd closed while we looked: go one by one
            targets = [_readlink_or_empty(fd_dir + fd) for fd in fds]
        self.stats.fds_read += len(fds)
        state.unreadable = False
        state.empty = not fds
        if self._probe_ok is None and fds and size is not None:
            self._votes[_counts_entries(size, len(fds))] += 1
        state.size = size
        state.signature = hash("/".join(fds))
        joined = "\n".join(targets)  # one C-level search settles the common case: no GPU fd at all
        if DRI_PREFIX not in joined and KFD_PATH not in joined:
            drm: tuple[str, ...] = ()
            kfd: tuple[str, ...] = ()
        else:
            drm = tuple(fd for fd, t in zip(fds, targets, strict=True) if t[:9] == DRI_PREFIX)
            kfd = tuple(fd for fd, t in zip(fds, targets, strict=True) if t == KFD_PATH)
        if drm and drm != state.drm_fds:
            result.new_drm.add(pid)
        state.drm_fds, state.kfd_fds = drm, kfd
        if drm or kfd:
            self._gpu_pids.add(pid)
        else:
            self._gpu_pids.discard(pid)

    # -- for the owner and the tests -----------------------------------------------------------------

    def kfd_alive(self, pid: int) -> bool:
        """Whether a known ``/dev/kfd`` holder still holds it (one readlink)."""
        state = self._pids.get(pid)
        if state is None:
            return False
        fd_dir = f"{self.proc}/{pid}/fd/"
        return any(_readlink_or_empty(fd_dir + fd) == KFD_PATH for fd in state.kfd_fds)

    def known(self) -> Sequence[int]:
        return self._order


def _counts_entries(size: int, entries: int) -> bool:
    """Whether an fd folder's ``st_size`` follows its number of entries, so that a changed count shows.

    procfs (Linux 6.2+) reports the count itself; tmpfs, where tests and the benchmark build their
    trees, 20 bytes per entry (the two dot entries included). Anything else (0 on older kernels, a
    block size on ext4) says nothing: then the sweep lists the fd folders instead of stat.
    """
    return size == entries or size == 20 * (entries + 2)


def _activity(stat_line: str | None) -> int | None:
    """A hash of what moves in ``/proc/PID/stat`` when a process runs: minor and major faults, user and
    system time, and the start time (a pid taken by a new process); None if it does not parse."""
    if not stat_line:
        return None
    fields = stat_line[stat_line.rfind(")") + 1 :].split()  # after the name, which may hold anything
    if len(fields) < 20:
        return None
    return hash((fields[7], fields[9], fields[11], fields[12], fields[19]))


def _read(path: str) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 65536).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _readlink_or_empty(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""
