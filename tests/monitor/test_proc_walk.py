"""Process attribution at desktop scale: who holds a DRM fd, without walking every fd every second.

All with a fake clock (the ``now_s`` handed to each tick); no timing asserts: the bounds are counted in
ticks and fake seconds, and the cost in the walker's own counters (walks, probes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from amd_trees import PHOENIX, add_process, amdgpu_fdinfo, copy_card

from gputray.monitor.backends.amd import AmdSysfsBackend
from gputray.monitor.fdinfo import DrmUsageReader
from gputray.monitor.monitor import Monitor
from gputray.monitor.proc_walk import DEEP_S, SWEEP_S, OpenWatch, ProcWalker
from gputray.monitor.serialize import snapshot_to_json
from gputray.scheduler.reasons.render import render

RENDER = "/dev/dri/renderD128"
PROCESSES, FDS = 80, 12
SHM = Path("/dev/shm")


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    """A folder on tmpfs, where a folder's size follows its entries as /proc/PID/fd's does (the fd count):
    the sweep's stat probe then works on a built tree as on the real /proc."""
    if not SHM.is_dir() or not os.access(SHM, os.W_OK):
        pytest.skip("no writable /dev/shm (tmpfs) to build a /proc-like tree on")
    folder = Path(tempfile.mkdtemp(prefix="gputray-test-walk-", dir=SHM))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def desktop(proc: Path, drm_pids: tuple[int, ...] = (1005, 1040)) -> Path:
    """``PROCESSES`` processes with ``FDS`` ordinary fds each; ``drm_pids`` also hold the render node."""
    for i in range(PROCESSES):
        pid = 1000 + i
        fds = {fd: "/dev/null" if fd < 3 else f"socket:[{pid * 100 + fd}]" for fd in range(FDS)}
        fdinfo = {}
        if pid in drm_pids:
            fds[FDS] = RENDER
            fdinfo[FDS] = amdgpu_fdinfo(pid)
        add_process(proc, pid, f"proc{i}", fds, fdinfo)
    return proc


def ticks_until(walker: ProcWalker, start_s: float, found: object, limit_s: float) -> float:
    """Tick once per fake second from ``start_s`` until ``found(result)``; the fake time it took."""
    t = start_s
    while t - start_s <= limit_s:
        result = walker.tick(t)
        if found(result):  # type: ignore[operator]
            return t - start_s
        t += 1.0
    raise AssertionError(f"not found within {limit_s} fake seconds")


def open_render_node(proc: Path, pid: int, fd: int) -> None:
    (proc / str(pid) / "fd" / str(fd)).symlink_to(RENDER)
    (proc / str(pid) / "fdinfo" / str(fd)).write_text(amdgpu_fdinfo(pid * 7))


def test_first_tick_finds_every_client_then_ticks_cost_a_fraction(tree: Path, tmp_path: Path) -> None:
    proc = desktop(tree / "proc")
    walker = ProcWalker(str(proc))
    first = walker.tick(0.0)
    assert sorted(first.drm) == [1005, 1040] and first.drm[1005] == (str(FDS),)
    assert walker.stats.walks == PROCESSES  # everything once, at the start
    for t in range(1, 9):
        walker.tick(float(t))
        # nothing changed: a quarter of them stat()ed, none walked but the slow cursor's share
        assert walker.stats.probes == PROCESSES / SWEEP_S
        assert walker.stats.walks <= 1
    # the slow cursor: every process walked once per DEEP_S, 80 / 600 of one a tick
    walks = 0
    for t in range(9, 9 + int(DEEP_S)):
        walker.tick(float(t))
        walks += walker.stats.walks
        assert walker.stats.fds_read <= FDS + 1  # at most one process's fds, never the lot
    assert PROCESSES - 1 <= walks <= PROCESSES + 1


@pytest.mark.parametrize("where", ["tmpfs", "no-count"])
def test_a_render_node_opened_later_is_found_within_five_seconds(where: str, tmp_path: Path) -> None:
    """A torch job imports torch seconds after it started: its pid is known, its new fd is not.

    On tmpfs the stat probe sees the count change; where folder sizes are no counts (ext4, kernels
    before 6.2) the sweep lists the fd folders instead: just as punctual."""
    base = tmp_path
    if where == "tmpfs":
        if not SHM.is_dir() or not os.access(SHM, os.W_OK):
            pytest.skip("no writable /dev/shm (tmpfs)")
        base = Path(tempfile.mkdtemp(prefix="gputray-test-walk-", dir=SHM))
    elif os.stat(tmp_path).st_size in (0, 40):
        pytest.skip("tmp_path is itself on tmpfs: no folder without counting sizes here")
    proc = desktop(base / "proc")
    walker = ProcWalker(str(proc))
    walker.tick(0.0)
    for pid in (1001, 1020, 1079):  # wherever the sweep's cursor stands, each is found within 5 s
        open_render_node(proc, pid, 40)
        waited = ticks_until(walker, walker.ticks + 0.0, lambda r, pid=pid: pid in r.drm, limit_s=10)
        assert waited <= 5.0, (pid, waited)
    if where == "tmpfs":
        shutil.rmtree(base)


def no_count_folder(tmp_path: Path) -> Path:
    """A folder whose sub-folders' sizes do not follow their entries (ext4: one block, 4096), as
    ``/proc/PID/fd`` on kernels before 6.2 (size 0): the walker's stat probe learns nothing there."""
    if os.stat(tmp_path).st_size in (0, 40):
        pytest.skip("tmp_path is itself on tmpfs: no folder without counting sizes here")
    return tmp_path


def test_where_sizes_are_no_counts_the_sweep_walks_only_pids_whose_fds_changed(tmp_path: Path) -> None:
    """Kernels before 6.2 (Debian 12's 6.1): each sweep visit lists the pid's fd folder (no readlink)
    and walks it only when its fd numbers changed, so a quiet desktop costs no walks, and a render
    node opened later is still found within the sweep's 5 s, wherever its pid stands in the round."""
    proc = desktop(no_count_folder(tmp_path) / "proc")
    walker = ProcWalker(str(proc))
    walker.tick(0.0)
    assert walker.stats.walks == PROCESSES  # everything once, at the start
    for t in range(1, 9):
        walker.tick(float(t))
        assert walker.stats.lists == PROCESSES / SWEEP_S  # each fd folder listed once per sweep
        assert walker.stats.walks <= 1  # unchanged pids are not walked: the slow cursor's share only
    t = 9.0
    for pid in (1001, 1020, 1079):  # wherever the sweep's cursor stands, each is found within 5 s
        open_render_node(proc, pid, 40)
        start, walks = t, 0
        while True:
            result = walker.tick(t)
            walks += walker.stats.walks
            if pid in result.drm:
                break
            t += 1.0
            assert t - start <= 5.0, pid
        assert walks <= 1 + (t - start + 1)  # the pid itself, and the slow cursor's share (< 1 a tick)
        t += 1.0


def write_stat(proc: Path, pid: int, cpu_ticks: int) -> None:
    """``/proc/PID/stat`` as Linux prints it; ``cpu_ticks`` of user time (and as many minor faults)."""
    fields = ["S", "1", str(pid), str(pid), "0", "-1", "4194304", str(100 + cpu_ticks), "0", "0", "0"]
    fields += [str(cpu_ticks), "3", "0", "0", "20", "0", "1", "0", "51234", "1000000", "100"]
    (proc / str(pid) / "stat").write_text(f"{pid} (a (tricky) name) " + " ".join(fields) + "\n")


def test_where_sizes_are_no_counts_a_process_that_has_not_run_is_not_listed(tmp_path: Path) -> None:
    """With stat lines (as a real /proc has), a sweep visit is one read of /proc/PID/stat: a process
    whose CPU time and faults did not move has not run and opened nothing. One that ran is listed,
    walked only if its fd numbers changed, and a render node it opened is found within 5 s."""
    proc = desktop(no_count_folder(tmp_path) / "proc")
    for i in range(PROCESSES):
        write_stat(proc, 1000 + i, cpu_ticks=0)
    walker = ProcWalker(str(proc))
    walker.tick(0.0)
    lists = 0
    for t in range(1, 5):  # the first round: no visit seen yet, each fd folder listed once
        walker.tick(float(t))
        lists += walker.stats.lists
    assert lists == PROCESSES
    for t in range(5, 13):  # nothing ran: one stat read a visit, nothing listed, nothing walked
        walker.tick(float(t))
        assert walker.stats.stat_reads == PROCESSES / SWEEP_S
        assert walker.stats.lists == 0
        assert walker.stats.walks <= 1  # the slow cursor's share only
    write_stat(proc, 1051, cpu_ticks=4)  # ran, opened nothing: listed once, not walked
    write_stat(proc, 1050, cpu_ticks=9)  # ran and opened the render node
    open_render_node(proc, 1050, 40)
    t, lists, walks = 13.0, 0, 0
    while 1050 not in walker.tick(t).drm:
        lists, walks = lists + walker.stats.lists, walks + walker.stats.walks
        t += 1.0
        assert t - 13.0 <= 5.0
    lists, walks = lists + walker.stats.lists, walks + walker.stats.walks
    assert 1 <= lists <= 2 and walks <= 1 + (t - 13.0 + 1)


def test_new_process_in_one_tick_exited_process_gone_at_the_next(tree: Path, tmp_path: Path) -> None:
    proc = desktop(tree / "proc")
    walker = ProcWalker(str(proc))
    walker.tick(0.0)
    add_process(proc, 4000, "llama-server", {0: "/dev/null", 5: RENDER}, {5: amdgpu_fdinfo(77)})
    assert 4000 in walker.tick(1.0).drm
    shutil.rmtree(proc / "1005")
    result = walker.tick(2.0)
    assert 1005 not in result.drm and 1005 not in walker.known()


def test_a_swapped_fd_with_the_count_unchanged_is_found_by_the_slow_cursor(
    tree: Path, tmp_path: Path
) -> None:
    """close(socket) + open(render node) keeps the fd count: the stat probe cannot see it."""
    proc = desktop(tree / "proc")
    walker = ProcWalker(str(proc))
    walker.tick(0.0)
    link = proc / "1033" / "fd" / "7"
    link.unlink()
    link.symlink_to(RENDER)
    (proc / "1033" / "fdinfo" / "7").write_text(amdgpu_fdinfo(1033))
    waited = ticks_until(walker, 1.0, lambda r: 1033 in r.drm, limit_s=DEEP_S + 5)
    assert SWEEP_S < waited <= DEEP_S  # not by the 4 s sweep; by the slow cursor within DEEP_S


def test_an_open_of_a_watched_node_makes_the_sweep_walk(tree: Path, tmp_path: Path) -> None:
    """inotify IN_OPEN on the device node (real kernel inotify, on stand-in files): an open that no walk
    explains turns the next sweep's stat()s into walks, so the swapped fd shows within 5 s."""
    nodes = tmp_path / "dev"
    nodes.mkdir()
    (nodes / "renderD128").write_text("")
    watch = OpenWatch.create([str(nodes / "renderD128")])
    assert watch is not None
    proc = desktop(tree / "proc")
    walker = ProcWalker(str(proc), open_watch=watch)
    try:
        walker.tick(0.0)
        assert walker.tick(1.0).drm.keys() == {1005, 1040}
        link = proc / "1062" / "fd" / "3"
        link.unlink()
        link.symlink_to(RENDER)
        (proc / "1062" / "fdinfo" / "3").write_text(amdgpu_fdinfo(1062))
        with open(nodes / "renderD128"):  # someone opens the render node
            pass
        waited = ticks_until(walker, 2.0, lambda r: 1062 in r.drm, limit_s=10)
        assert waited <= 5.0
        assert not watch.opened()  # the events were drained
    finally:
        walker.close()


def test_our_own_jobs_are_walked_every_tick(tree: Path, tmp_path: Path) -> None:
    proc = desktop(tree / "proc")
    add_process(proc, 5000, "python3", {0: "/dev/null", 1: "pipe:[1]", 2: "pipe:[2]"})
    add_process(proc, 5001, "dataloader", {0: "/dev/null"})
    (proc / "5000" / "task" / "5000").mkdir(parents=True)
    (proc / "5000" / "task" / "5000" / "children").write_text("5001 ")
    walker = ProcWalker(str(proc))
    walker.tick(0.0)
    walker.watch({5000})
    for t in (1.0, 2.0):
        walker.tick(t)
        assert 2 <= walker.stats.walks <= 3  # the job and its child (and the slow cursor's share)
    link = proc / "5001" / "fd" / "0"  # the child swaps an fd for the render node, count unchanged
    link.unlink()
    link.symlink_to(RENDER)
    assert 5001 in walker.tick(3.0).drm  # at the very next tick


def test_the_real_kernel_counts_fds_in_the_fd_folder_size(tmp_path: Path) -> None:
    """The sweep's probe relies on st_size of /proc/PID/fd being the fd count (Linux 6.2+)."""
    (tmp_path / "x").write_text("")
    script = (
        "import sys\nprint('ready', flush=True)\nsys.stdin.readline()\nf = open(sys.argv[1])\n"
        "print('opened', flush=True)\nsys.stdin.readline()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path / "x")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "ready"  # started up: its fds are settled
        before = os.stat(f"/proc/{child.pid}/fd").st_size
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "opened"
        after = os.stat(f"/proc/{child.pid}/fd").st_size
        if before == after == 0:
            return  # a kernel before 6.2: the walker sees size 0 and lists fd folders instead
        assert after == before + 1
        assert len(os.listdir(f"/proc/{child.pid}/fd")) == after
    finally:
        child.communicate("\n", timeout=30)


def test_the_reader_drops_a_closed_fd_and_rewalks_at_once(tree: Path, tmp_path: Path) -> None:
    proc = desktop(tree / "proc")
    reader = DrmUsageReader(proc)
    assert [u.pid for u in reader.read(0.0).drm] == [1005, 1040]
    (proc / "1040" / "fd" / str(FDS)).unlink()  # the client closed the render node
    (proc / "1040" / "fdinfo" / str(FDS)).unlink()
    assert [u.pid for u in reader.read(1.0).drm] == [1005]  # this tick, not at the next sweep


def test_status_json_shows_a_late_opened_fd_within_five_seconds(tree: Path, tmp_path: Path) -> None:
    """The issue's goal end to end: the Monitor on a fake clock, the 780M tree, a built desktop /proc."""
    sys_dir, proc = tmp_path / "sys", desktop(tree / "proc")
    copy_card(sys_dir, PHOENIX, "card1")
    now = [100.0]
    backend = AmdSysfsBackend(sys_dir, proc, amdgpu_ids=None)
    monitor = Monitor([backend], clock=lambda: now[0])

    def pids() -> set[int]:
        return {p["pid"] for p in snapshot_to_json(monitor.sample_once(), render)["processes"]}

    assert pids() == {1005, 1040}
    open_render_node(proc, 1050, 20)
    seen_after = None
    for second in range(1, 7):
        now[0] += 1.0
        if 1050 in pids():
            seen_after = second
            break
    assert seen_after is not None and seen_after <= 5
    # our own job: the monitor hands its pid to the backend, which walks it every tick
    monitor.job_started("pci:0000:64:00.0", 1060)
    now[0] += 1.0
    monitor.sample_once()
    link = proc / "1060" / "fd" / "4"
    link.unlink()
    link.symlink_to(RENDER)
    (proc / "1060" / "fdinfo" / "4").write_text(amdgpu_fdinfo(1060))
    now[0] += 1.0
    assert 1060 in pids()
    monitor.stop()


def test_a_tool_that_keeps_opening_the_node_costs_one_walking_round_per_20_s(
    tree: Path, tmp_path: Path
) -> None:
    nodes = tmp_path / "dev"
    nodes.mkdir()
    (nodes / "renderD128").write_text("")
    watch = OpenWatch.create([str(nodes / "renderD128")])
    assert watch is not None
    walker = ProcWalker(str(desktop(tree / "proc")), open_watch=watch)
    try:
        walker.tick(0.0)
        walks = []
        for t in range(1, 41):
            with open(nodes / "renderD128"):  # every second, like a polling tool
                pass
            walker.tick(float(t))
            walks.append(walker.stats.walks)
        # two walking rounds in 40 s (started at 1 s and 21 s), not ten (one per 4 s sweep); the slow
        # cursor's slice (1 a tick) is skipped where the round walked the same pid
        assert 2 * PROCESSES <= sum(walks) <= 2 * PROCESSES + 40 * PROCESSES / DEEP_S + 1
        assert walks[25] <= 1  # between rounds: the slow cursor's share only
    finally:
        walker.close()


def test_proc_is_listed_only_when_a_task_was_created(tree: Path) -> None:
    """/proc/loadavg's last field is the newest pid: while it stands still no process can be new."""
    proc = desktop(tree / "proc")
    (proc / "loadavg").write_text("0.31 0.40 0.38 1/612 1079\n")
    walker = ProcWalker(str(proc))
    walker.tick(0.0)
    walker.tick(1.0)
    assert not walker.stats.listed  # nothing created: 500 entries not listed again
    add_process(proc, 4100, "python3", {0: "/dev/null", 4: RENDER}, {4: amdgpu_fdinfo(41)})
    (proc / "loadavg").write_text("0.31 0.40 0.38 2/613 4100\n")
    assert 4100 in walker.tick(2.0).drm and walker.stats.listed  # a new process: within one tick
    shutil.rmtree(proc / "1005")  # a GPU client exits: gone at once, no listing needed
    assert 1005 not in DrmUsageReader(proc, walker=walker).read(3.0).drm_pids()


def test_a_new_process_on_the_real_proc_is_seen_at_the_next_tick() -> None:
    walker = ProcWalker("/proc")
    walker.tick(0.0)
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.readline()"], stdin=subprocess.PIPE
    )
    try:
        walker.tick(1.0)
        assert walker.stats.listed and child.pid in walker.known()
    finally:
        child.communicate(b"\n", timeout=30)
