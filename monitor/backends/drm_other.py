"""Every other DRM card: listed with what its files offer, and a reason for what is missing.

An old AMD card on the ``radeon`` driver, an NVIDIA card on ``nouveau``, a virtual GPU (virtio-gpu,
QXL, VMware SVGA), a server's display controller (ASPEED ``ast``): none of them has amdgpu's, i915's
or NVML's figures, but a card that is not listed cannot be chosen or avoided, so each is listed with
its name (the PCI id: gputray's table, else the system's PCI ID database), temperature, fan, power
and core clock where its hwmon has them (``hwmon.find_hwmon``: the standard attributes, whatever the
driver), and a reason (``busy_why.NoFigures``, worded "radeon driver: no load or memory figures").

Framebuffer-only devices (``simpledrm`` on the firmware's framebuffer, ``efidrm``, ``vesadrm``,
``ofdrm``) are not GPUs and are skipped; so are the cards the amdgpu, Intel and NVML backends read.
A virtio-gpu card's DRM device is the virtio device: its PCI identity is its parent's. A card that
is runtime-suspended (nouveau on a laptop) is reported asleep and nothing else of it is read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gputray.monitor import busy_why as why
from gputray.monitor import pcie
from gputray.monitor.backends import hwmon
from gputray.monitor.backends.drm import ASLEEP_REASON as ASLEEP_REASON  # the tests' name for it
from gputray.monitor.backends.drm import DrmBackend, read_uevent
from gputray.monitor.device_names import AMD, INTEL, NVIDIA, PCI_IDS, friendly_name
from gputray.monitor.fdinfo import DrmUsageReader, ProcUsage
from gputray.monitor.records import (
    DeviceInfo,
    DeviceKind,
    ProcessUse,
    Sample,
    Vendor,
)
from gputray.monitor.sysfs import int_of, normalize_bdf, pci_key

BACKEND_NAME = "drm-sysfs"
OWN_BACKENDS = frozenset({"amdgpu", "i915", "xe", "nvidia", "nvidia-drm"})
FRAMEBUFFER_ONLY = frozenset(
    {"simple-framebuffer", "simpledrm", "efi-framebuffer", "efidrm", "vesa-framebuffer", "vesadrm", "ofdrm"}
)
VIRTUAL = frozenset(
    {"virtio_gpu", "virtio-gpu", "qxl", "vmwgfx", "bochs-drm", "bochs", "cirrus", "cirrus-qemu"}
)
DISPLAY_ONLY = frozenset({"ast", "mgag200", "hibmc-drm"})
_VIRTUAL_LABELS = {"virtio_gpu": "virtio-gpu", "qxl": "QXL"}  # the driver as its reason names it
_KNOWN_NAMES = {
    (0x1AF4, 0x1050): "Virtio GPU",
    (0x1B36, 0x0100): "QXL paravirtual GPU",
    (0x15AD, 0x0405): "VMware SVGA II",
    (0x1234, 0x1111): "QEMU standard VGA",
}
_VENDORS: dict[int, Vendor] = {AMD: "amd", NVIDIA: "nvidia", INTEL: "intel"}


@dataclass
class _Card:
    card: str
    device: str  # the DRM device's folder (a virtio device for virtio-gpu)
    pci_dir: str | None  # the PCI function's folder (its parent for virtio-gpu)
    driver: str
    bdf: str | None
    info: DeviceInfo
    hw: hwmon.HwmonFiles | None = None
    link_dir: str | None = None
    link_max: tuple[int | None, int | None] = (None, None)
    complete: bool = False


class OtherDrmBackend(DrmBackend[_Card]):
    """The Backend for DRM cards no other backend reads; see the module docstring.

    ``usage``: the DRM process reader the amdgpu and Intel backends share (they close it); None: no
    process rows."""

    name = BACKEND_NAME

    def __init__(
        self,
        sys_dir: Path = Path("/sys"),
        proc_dir: Path = Path("/proc"),
        *,
        usage: DrmUsageReader | None = None,
        pci_ids: tuple[Path, ...] = PCI_IDS,
    ) -> None:
        super().__init__(sys_dir, proc_dir, usage, owns_usage=False)
        self._pci_ids = pci_ids

    def _power_dir(self, card: _Card) -> str:
        return card.pci_dir or card.device

    def _identify(self, card_dir: str, card_name: str, known: _Card | None) -> _Card | None:
        device = f"{card_dir}/device"
        ident = read_uevent(f"{device}/uevent")
        driver = ident.get("DRIVER")
        if driver is None or driver in OWN_BACKENDS or driver in FRAMEBUFFER_ONLY:
            return None
        pci_dir: str | None = device
        if "PCI_SLOT_NAME" not in ident:  # virtio-gpu: the PCI function is the virtio device's parent
            parent = os.path.dirname(os.path.realpath(device))
            parent_ident = read_uevent(f"{parent}/uevent")
            if "PCI_SLOT_NAME" in parent_ident:
                ident = {**parent_ident, "DRIVER": driver}
                pci_dir = parent
            else:
                pci_dir = None
        bdf = normalize_bdf(ident.get("PCI_SLOT_NAME", ""))
        vendor_text, _, device_text = ident.get("PCI_ID", "").partition(":")
        vendor_id = int_of(f"0x{vendor_text}") if vendor_text else None
        device_id = int_of(f"0x{device_text}") if device_text else None
        key = pci_key(bdf) if bdf is not None else f"platform:{os.path.basename(os.path.realpath(device))}"
        if known is not None and known.info.key == key and known.driver == driver:
            return known
        if vendor_id is not None and device_id is not None:
            name = _KNOWN_NAMES.get((vendor_id, device_id)) or friendly_name(
                vendor_id, device_id, ids_path=None, pci_ids=self._pci_ids
            )
        else:
            name = f"{driver} GPU"
        kind: DeviceKind
        if driver in VIRTUAL or driver in DISPLAY_ONLY or bdf is None:
            kind = "other"
        else:  # integrated GPUs of the radeon/nouveau era sit on the root bus
            kind = "integrated" if bdf.split(":")[1] == "00" else "discrete"
        info = DeviceInfo(
            key=key,
            name=name,
            vendor=_VENDORS.get(vendor_id, "other") if vendor_id is not None else "other",
            kind=kind,
            backend=BACKEND_NAME,
            pci_bdf=bdf,
            drm_card=card_name,
            pci_vendor_id=vendor_id,
            pci_device_id=device_id,
        )
        return _Card(card_name, device, pci_dir, driver, bdf, info)

    def _discover(self, card: _Card) -> None:
        card.hw = hwmon.find_hwmon(card.pci_dir or card.device)
        if card.pci_dir is not None and card.info.kind == "discrete":
            card.link_dir = pcie.link_folder(card.pci_dir, card.info.pci_vendor_id)
            card.link_max = pcie.read_max(card.link_dir)

    def _sample(self, card: _Card, usage: ProcUsage | None, now_s: float) -> Sample:
        hw = card.hw
        temp = hwmon.temp_c(hw)
        power = hwmon.power_w(hw)
        fan_percent, fan_rpm = hwmon.fan(hw)
        link = pcie.link_fields(card.link_dir, card.link_max)
        missing: tuple[why.Metric, ...] = ("load", *(("temperature",) if temp is None else ()), "memory")
        virtual = card.driver in _VIRTUAL_LABELS
        driver = _VIRTUAL_LABELS.get(card.driver, card.driver)
        return Sample(
            key=card.info.key,
            timestamp_s=now_s,
            reason=why.NoFigures(driver=driver, metrics=missing, virtual=virtual),
            temp_c=temp,
            power_w=power,
            sclk_mhz=hwmon.freq_mhz(hw),
            **link,
            fan_percent=fan_percent,
            fan_rpm=fan_rpm,
            power_limit_w=hwmon.power_limit_w(hw),
            energy_counter_j=hwmon.energy_j(hw),
        )

    def _processes(self, usage: ProcUsage) -> tuple[ProcessUse, ...]:
        by_bdf = {c.bdf: c for c in self._cards.values() if c.bdf is not None}
        out: list[ProcessUse] = []
        for use in usage.drm:
            card = by_bdf.get(use.pdev) if use.pdev is not None else None
            if card is None:
                continue
            util = max((p for _, p in use.engine_percent), default=0.0) if use.engine_percent else None
            out.append(
                ProcessUse(use.pid, use.name, card.info.key, "graphics", use.vram_bytes, use.gtt_bytes, util)
            )
        return tuple(out)
