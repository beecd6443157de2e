"""Every other DRM card is listed with a reason for what is missing; framebuffers are not GPUs."""

from __future__ import annotations

from pathlib import Path

import pytest
from amd_trees import PHOENIX, add_process, copy_card, write

from gputray.monitor import busy_why as why
from gputray.monitor.backends.drm_other import ASLEEP_REASON, OtherDrmBackend
from gputray.monitor.device_names import PCI_IDS
from gputray.monitor.factory import build_monitor
from gputray.monitor.fdinfo import DrmUsageReader
from gputray.scheduler.reasons.render import render


def pci_device(sys_dir: Path, path: str, uevent: str, **files: str) -> Path:
    """A PCI function under ``sys_dir/devices`` with its ``uevent`` and other attribute files."""
    folder = sys_dir / "devices" / path
    folder.mkdir(parents=True)
    (folder / "uevent").write_text(uevent)
    for name, text in files.items():
        target = folder / name.replace("__", "/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return folder


def drm_card(sys_dir: Path, card: str, device: Path) -> None:
    drm = sys_dir / "class" / "drm"
    drm.mkdir(parents=True, exist_ok=True)
    (drm / card).mkdir()
    (drm / card / "device").symlink_to(device, target_is_directory=True)
    (drm / f"{card}-HDMI-A-1").mkdir()  # a connector: not a card


def radeon(sys_dir: Path) -> Path:
    return pci_device(
        sys_dir,
        "pci0000:00/0000:00:01.0/0000:01:00.0",
        "DRIVER=radeon\nPCI_CLASS=30000\nPCI_ID=1002:6779\nPCI_SLOT_NAME=0000:01:00.0\n",
        current_link_speed="2.5 GT/s PCIe\n",
        current_link_width="16\n",
        max_link_speed="5.0 GT/s PCIe\n",
        max_link_width="16\n",
        hwmon__hwmon2__name="radeon\n",
        hwmon__hwmon2__temp1_input="45500\n",
        hwmon__hwmon2__temp1_crit="120000\n",
        power__runtime_status="active\n",
    )


def virtio(sys_dir: Path) -> Path:
    pci = pci_device(
        sys_dir,
        "pci0000:00/0000:00:02.0",
        "DRIVER=virtio-pci\nPCI_CLASS=30000\nPCI_ID=1AF4:1050\nPCI_SLOT_NAME=0000:00:02.0\n",
    )
    (pci / "virtio0").mkdir()
    (pci / "virtio0" / "uevent").write_text("DRIVER=virtio_gpu\nMODALIAS=virtio:d00000010v00001AF4\n")
    return pci / "virtio0"


def simpledrm(sys_dir: Path) -> Path:
    return pci_device(
        sys_dir, "platform/simple-framebuffer.0", "DRIVER=simple-framebuffer\nOF_NAME=framebuffer\n"
    )


def test_radeon_virtio_listed_with_reasons_and_the_framebuffer_is_not(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    drm_card(sys_dir, "card0", simpledrm(sys_dir))
    drm_card(sys_dir, "card1", radeon(sys_dir))
    drm_card(sys_dir, "card2", virtio(sys_dir))
    poll = OtherDrmBackend(sys_dir, tmp_path / "proc", pci_ids=()).poll(1.0)
    by_key = {r.info.key: r for r in poll.readings}
    assert list(by_key) == ["pci:0000:01:00.0", "pci:0000:00:02.0"]  # no simpledrm, no connector
    old = by_key["pci:0000:01:00.0"]
    assert (old.info.name, old.info.vendor, old.info.kind) == ("AMD GPU 0x6779", "amd", "discrete")
    assert old.info.drm_card == "card1" and old.info.backend == "drm-sysfs"
    assert old.sample.state == "ok" and old.sample.temp_c == 45.5
    assert old.sample.reason == why.NoFigures(driver="radeon", metrics=("load", "memory"))
    assert render(old.sample.reason) == "radeon driver: no load or memory figures"
    assert render(old.sample.reason, "ja") == "radeon ドライバー: 負荷・メモリの値がありません"
    assert (old.sample.util_percent, old.sample.vram_used_bytes) == (None, None)
    # an idle link at 2.5 GT/s of a PCIe 2.0 x16 card
    assert (
        old.sample.pcie_gen,
        old.sample.pcie_width,
        old.sample.pcie_max_gen,
        old.sample.pcie_max_width,
    ) == (
        1,
        16,
        2,
        16,
    )
    vm = by_key["pci:0000:00:02.0"]
    assert (vm.info.name, vm.info.vendor, vm.info.kind) == ("Virtio GPU", "other", "other")
    assert render(vm.sample.reason) == "virtio-gpu, a virtual GPU: no load, temperature or memory figures"
    assert render(vm.sample.reason, "ja") == "仮想 GPU の virtio-gpu: 負荷・温度・メモリの値がありません"
    assert vm.sample.pcie_gen is None


@pytest.mark.skipif(
    not any(p.exists() for p in PCI_IDS), reason="no PCI ID database (Debian package pci.ids) on this machine"
)
def test_radeon_is_named_from_the_systems_pci_id_database(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    drm_card(sys_dir, "card0", radeon(sys_dir))
    (reading,) = OtherDrmBackend(sys_dir, tmp_path / "proc").poll(1.0).readings
    assert reading.info.name == "Radeon HD 6450/7450/8450 / R5 230 OEM"  # "Caicos [...]" tidied


def test_runtime_suspended_nouveau_card_is_asleep_and_not_read(tmp_path: Path) -> None:
    sys_dir = tmp_path / "sys"
    card = pci_device(
        sys_dir,
        "pci0000:00/0000:00:01.0/0000:01:00.0",
        "DRIVER=nouveau\nPCI_ID=10DE:1C8D\nPCI_SLOT_NAME=0000:01:00.0\n",
        power__runtime_status="suspended\n",
        hwmon__hwmon3__temp1_input="50000\n",
    )
    drm_card(sys_dir, "card0", card)
    backend = OtherDrmBackend(sys_dir, tmp_path / "proc", pci_ids=())
    (reading,) = backend.poll(1.0).readings
    assert (reading.info.vendor, reading.sample.state, reading.sample.reason) == (
        "nvidia",
        "asleep",
        ASLEEP_REASON,
    )
    assert reading.sample.temp_c is None
    write(card / "power" / "runtime_status", "active\n")
    (awake,) = backend.poll(2.0).readings
    assert awake.sample.temp_c == 50.0
    assert render(awake.sample.reason) == "nouveau driver: no load or memory figures"


def test_processes_on_another_card_are_attributed_to_it(tmp_path: Path) -> None:
    sys_dir, proc = tmp_path / "sys", tmp_path / "proc"
    drm_card(sys_dir, "card0", virtio(sys_dir))
    text = "drm-driver:\tvirtio_gpu\ndrm-client-id:\t3\ndrm-pdev:\t0000:00:02.0\ndrm-total-system:\t64 MiB\n"
    add_process(proc, 55, "weston", {3: "/dev/dri/card0"}, {3: text})
    poll = OtherDrmBackend(sys_dir, proc, usage=DrmUsageReader(proc), pci_ids=()).poll(1.0)
    (use,) = poll.processes
    assert (use.pid, use.name, use.device, use.shared_bytes) == (
        55,
        "weston",
        "pci:0000:00:02.0",
        64 * 1024**2,
    )


def test_the_monitor_lists_every_card_once(tmp_path: Path) -> None:
    """All Linux backends together (as gputray builds them): the 780M by amdgpu, the others listed too."""
    sys_dir = tmp_path / "sys"
    copy_card(sys_dir, PHOENIX, "card1")
    drm_card(sys_dir, "card0", radeon(sys_dir))
    drm_card(sys_dir, "card2", simpledrm(sys_dir))
    monitor = build_monitor(sysfs_root=sys_dir, proc_root=tmp_path / "proc")
    try:
        snap = monitor.sample_once()
    finally:
        monitor.stop()
    gpus = sorted((r.info.key, r.info.backend) for r in snap.readings if r.info.kind != "cpu")
    assert gpus == [("pci:0000:01:00.0", "drm-sysfs"), ("pci:0000:64:00.0", "amdgpu-sysfs")]


RADEON_TREE = Path(__file__).resolve().parents[2] / "fixtures" / "radeon-sysfs" / "hd7850"


def test_a_radeon_cards_clock_temperature_and_fan_come_from_its_standard_hwmon_files(tmp_path: Path) -> None:
    """The HD 7850 on `radeon` reports its core clock only as hwmon's ``freq1_input`` (Hz). Before, the
    clock was "—" for every card gputray has no backend of its own for."""
    monitor = build_monitor(sysfs_root=RADEON_TREE, proc_root=tmp_path / "proc")
    try:
        snap = monitor.sample_once()
    finally:
        monitor.stop()
    (card,) = [r for r in snap.readings if r.info.kind != "cpu"]
    assert card.info.backend == "drm-sysfs" and card.info.pci_device_id == 0x6819
    assert card.sample.sclk_mhz == 860
    assert card.sample.temp_c == 52.0 and card.sample.fan_percent == 40.0
    assert render(card.sample.reason) == "radeon driver: no load or memory figures"
