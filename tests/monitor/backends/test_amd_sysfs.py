"""The amdgpu sysfs backend on the three real captured snapshots and on trees built from them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from amd_trees import (
    PHOENIX,
    RX6900XT,
    STRIX,
    add_process,
    amdgpu_fdinfo,
    copy_card,
    link_snapshot,
    make_unreadable,
    record_opens,
    write,
)

from gputray.monitor import busy_why as why
from gputray.monitor.backends.amd import ASLEEP_REASON, AmdSysfsBackend
from gputray.monitor.device_map import gfx_target_name
from gputray.monitor.records import BackendPoll, DeviceReading, ProcessUse
from gputray.scheduler.reasons.render import render

PHOENIX_KEY = "pci:0000:64:00.0"
RX_KEY = "pci:0000:0c:00.0"
NO_IDS = None  # amdgpu.ids differs between machines: the tests name GPUs from gputray's own table


def backend(sys_dir: Path, proc_dir: Path | None = None) -> AmdSysfsBackend:
    return AmdSysfsBackend(sys_dir, proc_dir or sys_dir.parent / "no-proc", amdgpu_ids=NO_IDS)


def only(poll: BackendPoll, key: str) -> DeviceReading:
    matches = [r for r in poll.readings if r.info.key == key]
    assert len(matches) == 1, [r.info.key for r in poll.readings]
    return matches[0]


def procs(poll: BackendPoll, pid: int) -> list[ProcessUse]:
    return [p for p in poll.processes if p.pid == pid]


# -- the real snapshots, untouched --------------------------------------------------------------------


def test_phoenix_780m_snapshot_gives_exactly_its_file_values(tmp_path: Path) -> None:
    sys_dir = link_snapshot(tmp_path / "sys", PHOENIX)
    poll = backend(sys_dir).poll(100.0)
    assert len(poll.readings) == 1
    reading = only(poll, PHOENIX_KEY)
    info, s = reading.info, reading.sample
    assert info.name == "Radeon 780M"
    assert info.vendor == "amd"
    assert info.kind == "integrated"
    assert info.backend == "amdgpu-sysfs"
    assert info.pci_bdf == "0000:64:00.0"
    assert (info.pci_vendor_id, info.pci_device_id) == (0x1002, 0x15BF)
    assert info.compute_units == 12  # kfd simd_count 24 / simd_per_cu 2
    assert info.gfx_target == "gfx1103"
    assert info.render_node == "renderD128"
    assert info.drm_card == "card1"
    assert info.temp_limit_c is None  # an APU has no temp1_crit: thresholds are ours
    assert info.vram_total_bytes == 4294967296
    assert info.shared_total_bytes == 31433977856
    assert s.state == "ok" and s.reason is None
    assert s.timestamp_s == 100.0
    assert s.util_percent == 0.0
    assert s.temp_c == 25.0
    assert s.power_w == pytest.approx(3.103)  # power1_average, not power1_input (3.142)
    assert (s.vram_used_bytes, s.vram_total_bytes) == (1272893440, 4294967296)
    assert (s.shared_used_bytes, s.shared_total_bytes) == (211398656, 31433977856)
    assert (s.sclk_mhz, s.mclk_mhz) == (800, 400)
    assert s.throttle == ()  # gpu_metrics v2.1 throttle_status 0


def test_rx6900xt_snapshot_nul_padded_files(tmp_path: Path) -> None:
    """Every file of this capture is padded with NULs to 4096 bytes; it has no ``device`` id file."""
    sys_dir = link_snapshot(tmp_path / "sys", RX6900XT)
    reading = only(backend(sys_dir).poll(5.0), RX_KEY)
    info, s = reading.info, reading.sample
    assert info.name == "Radeon RX 6900 XT"  # 1002:73BF revision 0xC0
    assert info.kind == "discrete"
    assert info.temp_limit_c == 100.0  # temp1_crit of the edge sensor
    assert info.render_node is None and info.compute_units is None  # no KFD in this capture
    assert s.util_percent == 3.0
    assert s.temp_c == 56.0  # edge, not junction (59) or mem (54)
    assert s.power_w == 36.0
    assert (s.vram_used_bytes, s.vram_total_bytes) == (668274688, 17163091968)
    assert (s.shared_used_bytes, s.shared_total_bytes) == (62369792, 16786171904)
    assert (s.sclk_mhz, s.mclk_mhz) == (500, 1000)
    assert s.throttle == ()  # gpu_metrics v1.3 indep_throttle_status 0


def test_strix_point_snapshot(tmp_path: Path) -> None:
    sys_dir = link_snapshot(tmp_path / "sys", STRIX)
    reading = only(backend(sys_dir).poll(7.0), "pci:0000:c1:00.0")
    info, s = reading.info, reading.sample
    # 1002:150E rev 0xC4 with 12 CUs: libdrm's current amdgpu.ids calls it the 880M (the 890M has 16)
    assert info.name == "Radeon 880M"
    assert info.compute_units == 12
    assert info.gfx_target == "gfx1150"
    assert info.kind == "integrated"
    assert s.util_percent == 3.0
    assert s.temp_c == 38.0
    assert s.power_w == pytest.approx(9.087)
    assert (s.vram_used_bytes, s.vram_total_bytes) == (514580480, 536870912)
    assert (s.shared_used_bytes, s.shared_total_bytes) == (3946811392, 16441004032)
    assert s.sclk_mhz == 848
    assert s.mclk_mhz == 836  # pp_dpm_mclk marks no level: gpu_metrics v3.0 average_uclk
    assert s.throttle is None  # v3.0 has residency counters only: known after a second table


def test_a_captured_class_drm_folder_works_as_sys_dir() -> None:
    """LACT stores /sys/class/drm itself; reading it directly gives the same device."""
    poll = AmdSysfsBackend(PHOENIX, Path("/nonexistent-proc"), amdgpu_ids=NO_IDS).poll(1.0)
    reading = only(poll, PHOENIX_KEY)
    assert reading.info.name == "Radeon 780M"
    assert reading.info.compute_units == 12
    assert reading.sample.temp_c == 25.0


def test_gfx_target_names() -> None:
    assert gfx_target_name(110003) == "gfx1103"
    assert gfx_target_name(110500) == "gfx1150"
    assert gfx_target_name(90010) == "gfx90a"
    assert gfx_target_name(90402) == "gfx942"
    assert gfx_target_name(0) is None


# -- never wake a GPU --------------------------------------------------------------------------------


def test_suspended_dgpu_is_asleep_and_nothing_else_is_read(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    rx = copy_card(sys_dir, RX6900XT, "card0")
    copy_card(sys_dir, PHOENIX, "card1")
    write(rx / "power" / "runtime_status", "suspended\n")
    be = backend(sys_dir)
    with record_opens() as opened:
        poll = be.poll(1.0)
    rx_reading = only(poll, RX_KEY)
    s = rx_reading.sample
    assert s.state == "asleep"
    assert s.reason == ASLEEP_REASON
    metrics = (s.util_percent, s.temp_c, s.power_w, s.vram_used_bytes, s.vram_total_bytes, s.sclk_mhz)
    assert metrics == (None,) * 6
    assert rx_reading.info.kind == "discrete"
    assert rx_reading.info.name == "Radeon RX 6800/6900 series"  # the revision file was not read
    card0 = str(sys_dir / "class" / "drm" / "card0")
    touched = sorted(os.path.relpath(p, card0) for p in opened if p.startswith(card0 + "/"))
    assert touched == ["device/power/runtime_status", "device/uevent"]
    # the awake 780M next to it was read in full
    assert only(poll, PHOENIX_KEY).sample.temp_c == 25.0

    write(rx / "power" / "runtime_status", "active\n")
    woke = only(be.poll(2.0), RX_KEY)
    assert woke.sample.state == "ok"
    assert woke.sample.temp_c == 56.0
    assert woke.info.name == "Radeon RX 6900 XT"
    assert woke.info.vram_total_bytes == 17163091968

    write(rx / "power" / "runtime_status", "suspended\n")
    asleep_again = only(be.poll(3.0), RX_KEY)
    assert asleep_again.sample.state == "asleep"
    assert asleep_again.info.vram_total_bytes == 17163091968  # what was learnt awake is kept


def test_suspended_card_with_values_that_would_read_fine_reports_none(tmp_path: Path) -> None:
    """No file-level trick: every metric file holds a valid value, and still none is used."""
    sys_dir = tmp_path / "sys"
    dev = copy_card(sys_dir, PHOENIX, "card1")
    write(dev / "power" / "runtime_status", "suspended")
    s = only(backend(sys_dir).poll(1.0), PHOENIX_KEY).sample
    assert s.state == "asleep"
    assert (s.util_percent, s.temp_c, s.shared_used_bytes) == (None, None, None)


# -- appearing and vanishing -------------------------------------------------------------------------


def test_card_that_vanishes_between_polls_drops_out_and_comes_back(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    copy_card(sys_dir, RX6900XT, "card0")
    copy_card(sys_dir, PHOENIX, "card1")
    be = backend(sys_dir)
    assert {r.info.key for r in be.poll(1.0).readings} == {RX_KEY, PHOENIX_KEY}

    shutil.rmtree(sys_dir / "class" / "drm" / "card0")  # the eGPU is unplugged
    second = be.poll(2.0)
    assert [r.info.key for r in second.readings] == [PHOENIX_KEY]

    copy_card(sys_dir, RX6900XT, "card0")  # and plugged back in
    third = be.poll(3.0)
    assert {r.info.key for r in third.readings} == {RX_KEY, PHOENIX_KEY}
    assert only(third, RX_KEY).sample.temp_c == 56.0


def test_card_replaced_by_another_gpu_under_the_same_name_gets_the_new_identity(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    copy_card(sys_dir, RX6900XT, "card0")
    be = backend(sys_dir)
    assert only(be.poll(1.0), RX_KEY).info.kind == "discrete"
    shutil.rmtree(sys_dir / "class" / "drm" / "card0")
    copy_card(sys_dir, PHOENIX, "card1", as_card="card0")
    reading = only(be.poll(2.0), PHOENIX_KEY)
    assert reading.info.name == "Radeon 780M"
    assert reading.info.drm_card == "card0"


def test_connectors_render_nodes_and_other_vendors_are_skipped(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    copy_card(sys_dir, PHOENIX, "card1")
    drm = sys_dir / "class" / "drm"
    (drm / "card1-DP-1").mkdir()
    (drm / "card1-DP-1" / "status").write_text("connected\n")
    (drm / "renderD128").mkdir()
    (drm / "version").write_text("drm 1.1.0 20060810\n")
    nvidia = drm / "card0" / "device"
    (nvidia / "power").mkdir(parents=True)
    (nvidia / "power" / "runtime_status").write_text("active\n")
    (nvidia / "uevent").write_text("DRIVER=nvidia\nPCI_ID=10DE:2D04\nPCI_SLOT_NAME=0000:01:00.0\n")
    (nvidia / "gpu_busy_percent").write_text("99\n")
    poll = backend(sys_dir).poll(1.0)
    assert [r.info.key for r in poll.readings] == [PHOENIX_KEY]


def test_missing_trees_give_an_empty_poll(tmp_path: Path) -> None:
    poll = AmdSysfsBackend(tmp_path / "nothing", tmp_path / "no-proc").poll(1.0)
    assert poll == BackendPoll()


# -- bad files cost one metric each ------------------------------------------------------------------


def test_garbage_empty_and_unreadable_files_cost_only_their_metric(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    dev = copy_card(sys_dir, PHOENIX, "card1")
    hwmon = dev / "hwmon" / "hwmon6"
    make_unreadable(dev / "gpu_metrics")  # no fallback values from there either
    write(dev / "gpu_busy_percent", "banana\n")
    write(hwmon / "temp1_input", "")
    (hwmon / "power1_average").unlink()
    (hwmon / "power1_average").symlink_to(tmp_path / "dangling")  # → power1_input
    write(dev / "mem_info_vram_used", b"\x00\x00\x00")
    write(dev / "pp_dpm_sclk", "what\n")  # → hwmon freq1_input (sclk)
    write(dev / "mem_info_gtt_used", b"  211398656 \n\x00\x00\x00\x00")
    be = backend(sys_dir)
    reading = only(be.poll(1.0), PHOENIX_KEY)
    s = reading.sample
    assert s.state == "ok"
    assert s.util_percent is None
    assert s.temp_c is None
    assert s.power_w == pytest.approx(3.142)
    assert s.vram_used_bytes is None
    assert s.vram_total_bytes == 4294967296
    assert (s.shared_used_bytes, s.shared_total_bytes) == (211398656, 31433977856)
    assert s.sclk_mhz == 800
    assert s.mclk_mhz == 400
    assert s.throttle is None
    assert s.reason == why.NotReported(metrics=("load", "temperature"))
    assert render(s.reason) == "not reported: load, temperature"
    assert reading.info.name == "Radeon 780M"
    assert reading.info.kind == "integrated"

    write(dev / "gpu_busy_percent", "250\n")  # out of range is garbage too
    assert only(be.poll(2.0), PHOENIX_KEY).sample.util_percent is None


def test_gpu_metrics_fills_in_what_sysfs_lacks(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    dev = copy_card(sys_dir, PHOENIX, "card1")
    shutil.rmtree(dev / "hwmon")
    (dev / "gpu_busy_percent").unlink()
    s = only(backend(sys_dir).poll(1.0), PHOENIX_KEY).sample
    assert s.temp_c == 25.0  # temperature_gfx 2500 centi-°C
    assert s.power_w == pytest.approx(3.401)  # average_socket_power 3401 mW
    assert s.util_percent == pytest.approx(0.79)  # average_gfx_activity 79 centi-%


def test_strix_throttle_comes_from_residency_counters_growing(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    dev = copy_card(sys_dir, STRIX, "card1")
    be = backend(sys_dir)
    key = "pci:0000:c1:00.0"
    assert only(be.poll(1.0), key).sample.throttle is None
    raw = bytearray((dev / "gpu_metrics").read_bytes())
    spl = int.from_bytes(raw[232:236], "little")
    raw[232:236] = (spl + 500).to_bytes(4, "little")  # SPL power limit residency grew
    write(dev / "gpu_metrics", bytes(raw))
    assert only(be.poll(2.0), key).sample.throttle == ("power:spl",)
    assert only(be.poll(3.0), key).sample.throttle == ()


# -- processes ---------------------------------------------------------------------------------------


def test_780m_under_load_with_processes(tmp_path: Path) -> None:
    sys_dir, proc = tmp_path / "sys", tmp_path / "proc"
    dev = copy_card(sys_dir, PHOENIX, "card1")
    write(dev / "gpu_busy_percent", "97\n")
    write(dev / "mem_info_gtt_used", "9663676416\n")
    write(dev / "hwmon" / "hwmon6" / "temp1_input", "71000\n")
    write(dev / "hwmon" / "hwmon6" / "power1_average", "27500000\n")
    write(dev / "pp_dpm_sclk", "0: 800Mhz \n1: 1100Mhz \n2: 2700Mhz *\n")
    render = "/dev/dri/renderD128"
    add_process(
        proc, 4242, "llama-server", {0: "/dev/null", 5: render},
        {5: amdgpu_fdinfo(17, gfx_ns=1_000_000_000, vram_kib=102400, gtt_kib=8_000_000)},
    )  # fmt: skip
    add_process(proc, 5151, "upscale", {7: render}, {7: amdgpu_fdinfo(21, compute_ns=4_000_000_000)})
    add_process(proc, 6000, "bash", {0: "/dev/pts/1", 1: "/dev/pts/1"})
    add_process(
        proc, 7000, "nvidia-app", {3: "/dev/dri/card0"},
        {3: amdgpu_fdinfo(3, pdev="0000:01:00.0", gfx_ns=5).replace("amdgpu", "nvidia-drm")},
    )  # fmt: skip
    be = backend(sys_dir, proc)
    first = be.poll(10.0)
    s = only(first, PHOENIX_KEY).sample
    assert (s.util_percent, s.temp_c, s.power_w, s.sclk_mhz) == (97.0, 71.0, 27.5, 2700)
    assert s.shared_used_bytes == 9663676416
    llama = procs(first, 4242)
    assert len(llama) == 1
    assert llama[0].name == "llama-server"
    assert llama[0].device == PHOENIX_KEY
    assert llama[0].kind == "graphics"
    assert llama[0].vram_bytes == 102400 * 1024
    assert llama[0].shared_bytes == 8_000_000 * 1024
    assert llama[0].util_percent is None  # busy % needs two polls
    assert procs(first, 5151)[0].kind == "compute"
    assert procs(first, 6000) == [] and procs(first, 7000) == []

    write(proc / "4242" / "fdinfo" / "5", amdgpu_fdinfo(17, gfx_ns=1_900_000_000, vram_kib=102400))
    write(proc / "5151" / "fdinfo" / "7", amdgpu_fdinfo(21, compute_ns=4_250_000_000))
    second = be.poll(11.5)  # 1.5 s later
    assert procs(second, 4242)[0].util_percent == pytest.approx(60.0)  # 0.9 s of gfx in 1.5 s
    assert procs(second, 5151)[0].util_percent == pytest.approx(100 * 0.25 / 1.5)

    shutil.rmtree(proc / "5151")  # the process exits
    assert procs(be.poll(12.5), 5151) == []


def test_duplicate_client_ids_are_counted_once(tmp_path: Path) -> None:
    sys_dir, proc = tmp_path / "sys", tmp_path / "proc"
    copy_card(sys_dir, PHOENIX, "card1")
    same = amdgpu_fdinfo(30, gfx_ns=0, vram_kib=1000, gtt_kib=2000)
    other = amdgpu_fdinfo(31, gfx_ns=0, vram_kib=10, gtt_kib=20)
    add_process(
        proc, 100, "blender",
        {4: "/dev/dri/renderD128", 9: "/dev/dri/renderD128", 11: "/dev/dri/card1"},
        {4: same, 9: same, 11: other},
    )  # fmt: skip
    (use,) = procs(backend(sys_dir, proc).poll(1.0), 100)
    assert use.vram_bytes == (1000 + 10) * 1024  # client 30 behind two fds counts once
    assert use.shared_bytes == (2000 + 20) * 1024


def test_counters_going_backwards_are_ignored(tmp_path: Path) -> None:
    sys_dir, proc = tmp_path / "sys", tmp_path / "proc"
    copy_card(sys_dir, PHOENIX, "card1")
    info = proc / "55" / "fdinfo" / "3"
    add_process(proc, 55, "game", {3: "/dev/dri/renderD128"}, {3: amdgpu_fdinfo(8, gfx_ns=5_000_000_000)})
    be = backend(sys_dir, proc)
    be.poll(1.0)
    write(info, amdgpu_fdinfo(8, gfx_ns=1_000_000_000))
    assert procs(be.poll(2.0), 55)[0].util_percent is None
    write(info, amdgpu_fdinfo(8, gfx_ns=1_500_000_000))
    assert procs(be.poll(3.0), 55)[0].util_percent == pytest.approx(50.0)


def test_dev_kfd_holders_are_rocm_users_of_the_amd_gpu(tmp_path: Path) -> None:
    sys_dir, proc = tmp_path / "sys", tmp_path / "proc"
    rx = copy_card(sys_dir, RX6900XT, "card0")
    copy_card(sys_dir, PHOENIX, "card1")  # also copies Phoenix's KFD topology (780M only)
    write(rx / "power" / "runtime_status", "suspended\n")
    add_process(
        proc, 300, "python3", {3: "/dev/kfd", 4: "/dev/dri/renderD128"},
        {4: amdgpu_fdinfo(40, vram_kib=2048, gtt_kib=4_194_304)},
    )  # fmt: skip
    add_process(proc, 301, "rocm-smi", {3: "/dev/kfd"})
    poll = backend(sys_dir, proc).poll(1.0)
    (torch,) = procs(poll, 300)
    assert (torch.kind, torch.device) == ("rocm", PHOENIX_KEY)
    assert torch.shared_bytes == 4_194_304 * 1024
    (kfd_only,) = procs(poll, 301)  # KFD alone cannot say which GPU: every GPU KFD exposes
    assert (kfd_only.kind, kfd_only.device, kfd_only.vram_bytes) == ("rocm", PHOENIX_KEY, None)


def test_unreadable_process_entries_are_skipped(tmp_path: Path) -> None:
    sys_dir, proc = tmp_path / "sys", tmp_path / "proc"
    copy_card(sys_dir, PHOENIX, "card1")
    add_process(proc, 10, "ok", {3: "/dev/dri/renderD128"}, {3: amdgpu_fdinfo(1, vram_kib=4)})
    broken = add_process(proc, 11, "gone", {3: "/dev/dri/renderD128"})
    make_unreadable(broken / "fdinfo" / "3")
    (proc / "12").mkdir()  # a process whose fd folder we may not read
    (proc / "12" / "fd").write_text("")
    (proc / "self").mkdir()
    poll = backend(sys_dir, proc).poll(1.0)
    assert [p.pid for p in poll.processes] == [10]
