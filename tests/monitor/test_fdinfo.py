"""DRM fdinfo parsing and per-process busy % between reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from amd_trees import add_process, amdgpu_fdinfo, write

from gputray.monitor.fdinfo import DrmUsageReader, parse_fdinfo, read_file_bytes


def test_amdgpu_legacy_fdinfo() -> None:
    c = parse_fdinfo(
        7, amdgpu_fdinfo(27, gfx_ns=123, compute_ns=4, vram_kib=4348, gtt_kib=2340).encode(), "5"
    )
    assert c is not None
    assert (c.pid, c.client_id, c.pdev, c.driver, c.fd) == (7, "27", "0000:64:00.0", "amdgpu", "5")
    assert c.engines_ns == {"gfx": 123, "compute": 4, "dma": 0}  # every engine class is kept
    assert (c.vram_bytes, c.gtt_bytes) == (4348 * 1024, 2340 * 1024)


def test_standard_memory_keys_units_and_preference() -> None:
    text = (
        "drm-driver:\tamdgpu\ndrm-client-id:\t3\ndrm-pdev:\t0000:03:00.0\n"
        "drm-total-vram:\t64 MiB\ndrm-total-gtt:\t10 MiB\n"
        "drm-resident-vram:\t32 MiB\ndrm-resident-gtt:\t4096\n"  # no unit: bytes
        "drm-memory-vram:\t99 KiB\n"
        "drm-engine-gfx:\t10 ns\ndrm-engine-capacity-gfx:\t2\n"
    )
    c = parse_fdinfo(1, text.encode())
    assert c is not None
    assert (c.vram_bytes, c.gtt_bytes) == (32 * 1024 * 1024, 4096)  # resident first
    assert c.capacities == {"gfx": 2}
    assert c.engines_ns == {"gfx": 10}


def test_total_keys_when_nothing_else() -> None:
    c = parse_fdinfo(1, b"drm-driver: xe\ndrm-client-id: 1\ndrm-total-vram0: 5 KiB\ndrm-total-gtt: 2 MiB\n")
    assert c is not None
    assert (c.vram_bytes, c.gtt_bytes) == (5 * 1024, 2 * 1024 * 1024)  # xe calls its VRAM vram0


def test_garbage_values_are_dropped_not_fatal() -> None:
    text = b"drm-client-id:\t9\ndrm-pdev:\tnonsense\ndrm-engine-gfx:\tlots ns\ndrm-memory-vram:\t12 parsecs\n"
    c = parse_fdinfo(1, text)
    assert c is not None
    assert (c.pdev, c.engines_ns, c.vram_bytes) == (None, {}, None)


def test_non_drm_fdinfo_is_not_a_client() -> None:
    assert parse_fdinfo(1, b"pos:\t0\nflags:\t0100002\nmnt_id:\t15\nino:\t3\n") is None


def test_client_without_id_is_told_apart_by_fd() -> None:
    c = parse_fdinfo(1, b"drm-driver: amdgpu\ndrm-engine-gfx: 1 ns\n", "12")
    assert c is not None
    assert c.identity == "fd12"


def test_read_file_bytes(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 70000)
    assert read_file_bytes(str(tmp_path / "f")) == b"x" * 65536
    assert read_file_bytes(str(tmp_path / "f"), 10) == b"x" * 10
    assert read_file_bytes(str(tmp_path / "absent")) is None
    (tmp_path / "d").mkdir()
    assert read_file_bytes(str(tmp_path / "d")) is None


def test_reader_busy_percent_over_two_reads(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    add_process(proc, 42, "llama-server", {5: "/dev/dri/renderD128"}, {5: amdgpu_fdinfo(1, gfx_ns=0)})
    add_process(
        proc, 43, "two-rings", {6: "/dev/dri/renderD128"},
        {6: "drm-client-id: 2\ndrm-pdev: 0000:64:00.0\ndrm-engine-compute: 0 ns\n"
            "drm-engine-capacity-compute: 4\n"},
    )  # fmt: skip
    reader = DrmUsageReader(proc)
    first = reader.read(100.0)
    assert [(u.pid, u.name, u.util_percent) for u in first.drm] == [
        (42, "llama-server", None),
        (43, "two-rings", None),
    ]
    write(proc / "42" / "fdinfo" / "5", amdgpu_fdinfo(1, gfx_ns=250_000_000))
    write(
        proc / "43" / "fdinfo" / "6",
        "drm-client-id: 2\ndrm-pdev: 0000:64:00.0\ndrm-engine-compute: 2000000000 ns\n"
        "drm-engine-capacity-compute: 4\n",
    )
    second = reader.read(100.5)
    busy = {u.pid: u.util_percent for u in second.drm}
    assert busy[42] == pytest.approx(50.0)
    assert busy[43] == pytest.approx(100.0)  # 2 s over 0.5 s on 4 rings = 100 %
    assert second.drm[0].engines_used == ("gfx",)


def test_reader_sums_clients_of_one_process_and_caps_at_100(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    fds = {3: "/dev/dri/renderD128", 4: "/dev/dri/renderD128"}
    add_process(proc, 8, "game", fds, {3: amdgpu_fdinfo(1), 4: amdgpu_fdinfo(2)})
    reader = DrmUsageReader(proc)
    reader.read(1.0)
    write(proc / "8" / "fdinfo" / "3", amdgpu_fdinfo(1, gfx_ns=700_000_000))
    write(proc / "8" / "fdinfo" / "4", amdgpu_fdinfo(2, gfx_ns=600_000_000))
    (use,) = reader.read(2.0).drm
    assert use.util_percent == 100.0


def test_same_client_in_two_processes_counts_for_each(tmp_path: Path) -> None:
    """A forked child shares its parent's drm_file; dedupe is per process."""
    proc = tmp_path / "proc"
    add_process(proc, 20, "parent", {3: "/dev/dri/card1"}, {3: amdgpu_fdinfo(5, vram_kib=8)})
    add_process(proc, 21, "child", {3: "/dev/dri/card1"}, {3: amdgpu_fdinfo(5, vram_kib=8)})
    uses = DrmUsageReader(proc).read(1.0).drm
    assert [(u.pid, u.vram_bytes) for u in uses] == [(20, 8192), (21, 8192)]


def test_kfd_holders_and_names(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    add_process(proc, 77, "python3", {3: "/dev/kfd"})
    base = add_process(proc, 78, "ignored", {3: "/dev/kfd"})
    (base / "comm").unlink()  # exited half-way: a name is still given
    usage = DrmUsageReader(proc).read(1.0)
    assert usage.kfd == ((77, "python3"), (78, "pid 78"))
    assert usage.drm == ()


def test_state_of_exited_clients_is_dropped(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    add_process(proc, 9, "x", {3: "/dev/dri/renderD128"}, {3: amdgpu_fdinfo(1, gfx_ns=10)})
    reader = DrmUsageReader(proc)
    reader.read(1.0)
    os.unlink(proc / "9" / "fd" / "3")  # the client closes the render node: fd and fdinfo go
    os.unlink(proc / "9" / "fdinfo" / "3")
    assert reader.read(2.0).drm == ()
    assert reader._previous == {}  # nothing kept for a client that is gone
    (proc / "9" / "fd" / "3").symlink_to("/dev/dri/renderD128")  # ... and opens it again
    write(proc / "9" / "fdinfo" / "3", amdgpu_fdinfo(1, gfx_ns=10))
    t = 3.0
    while not (usage := reader.read(t)).drm:  # found by the sweep, within its 4 s
        t += 1.0
        assert t <= 7.0
    assert usage.drm[0].util_percent is None  # a fresh baseline, not a stale delta


def test_missing_proc_is_empty(tmp_path: Path) -> None:
    usage = DrmUsageReader(tmp_path / "absent").read(1.0)
    assert (usage.drm, usage.kfd) == ((), ())


def test_real_proc_of_this_machine() -> None:
    """The real /proc (other users' fds unreadable, processes exiting mid-scan) reads without error."""
    usage = DrmUsageReader(Path("/proc")).read(1.0)
    assert os.getpid() not in {u.pid for u in usage.drm}  # the test process holds no DRM fd
    assert os.getpid() not in {pid for pid, _ in usage.kfd}


def test_unchanged_fdinfo_is_an_idle_client_not_a_stale_one(tmp_path: Path) -> None:
    """Bytes identical to the last read are not parsed again; the client then did no work: 0 %."""
    proc = tmp_path / "proc"
    text = amdgpu_fdinfo(4, gfx_ns=10**9, vram_kib=64)
    add_process(proc, 12, "compositor", {3: "/dev/dri/card1"}, {3: text})
    reader = DrmUsageReader(proc)
    reader.read(1.0)
    (idle,) = reader.read(2.0).drm
    assert (idle.util_percent, idle.vram_bytes) == (0.0, 64 * 1024)
    write(proc / "12" / "fdinfo" / "3", amdgpu_fdinfo(4, gfx_ns=10**9 + 10**8, vram_kib=128))
    (busy,) = reader.read(3.0).drm
    assert busy.util_percent == pytest.approx(10.0)
    assert busy.vram_bytes == 128 * 1024


def test_a_reused_pid_gets_the_new_process_name(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    add_process(proc, 31, "old-game", {3: "/dev/dri/renderD128"}, {3: amdgpu_fdinfo(70, vram_kib=1)})
    reader = DrmUsageReader(proc)
    assert reader.read(1.0).drm[0].name == "old-game"
    assert reader.read(2.0).drm[0].name == "old-game"  # idle: comm not read again
    write(proc / "31" / "comm", "new-tool\n")  # another process now has pid 31 ...
    write(proc / "31" / "fdinfo" / "3", amdgpu_fdinfo(71, vram_kib=1))  # ... and its own DRM client
    (use,) = reader.read(3.0).drm
    assert use.name == "new-tool"
    assert use.util_percent is None  # a new client: no baseline yet
