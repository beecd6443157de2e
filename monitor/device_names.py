"""Friendly GPU names from PCI ids: "Radeon 780M", not "Phoenix1" or "0x15bf".

One PCI device id can be several products. AMD's APUs are told apart by the number of compute units
(Phoenix1 1002:15BF is the 780M with 12 CUs, the 760M with 8, the 740M with 4; KFD's ``simd_count`` is
two SIMDs per CU), and, where the CU count is unknown, by the PCI revision as libdrm's ``amdgpu.ids``
lists it. The table here is small on purpose: the GPUs gputray's users have and their close
relatives. Anything else falls back to ``amdgpu.ids`` (AMD), then the kernel's ``product_name``, then
"AMD GPU 0x15bf".

Note on the Strix Point capture: 1002:150E revision 0xC4 with 12 CUs is what current libdrm calls the
Radeon 880M (the 890M has 16 CUs), even though older tables and ROCm 6 label it 890M.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

AMD = 0x1002
NVIDIA = 0x10DE
INTEL = 0x8086

VENDOR_NAMES = {
    AMD: "AMD",
    NVIDIA: "NVIDIA",
    INTEL: "Intel",
    0x1AF4: "Virtio",
    0x1B36: "Red Hat",
    0x15AD: "VMware",
    0x1234: "QEMU",
    0x1A03: "ASPEED",
    0x102B: "Matrox",
}
AMDGPU_IDS = Path("/usr/share/libdrm/amdgpu.ids")
# The PCI ID database (pciutils/hwdata): names for GPUs gputray's table does not know (old Radeons).
PCI_IDS = (Path("/usr/share/misc/pci.ids"), Path("/usr/share/hwdata/pci.ids"), Path("/usr/share/pci.ids"))


@dataclass(frozen=True)
class _Product:
    """A PCI id's default name, refined by compute units first, then by PCI revision."""

    default: str
    integrated: bool = False
    by_cu: dict[int, str] = field(default_factory=dict)
    by_revision: dict[int, str] = field(default_factory=dict)

    def name(self, revision: int | None, compute_units: int | None) -> str:
        if compute_units is not None and compute_units in self.by_cu:
            return self.by_cu[compute_units]
        if revision is not None and revision in self.by_revision:
            return self.by_revision[revision]
        return self.default


def _revs(name: str, *revisions: int) -> dict[int, str]:
    return dict.fromkeys(revisions, name)


_PHOENIX_BY_REV = {
    **_revs("Radeon 760M", 0x01, 0x03, 0x05, 0xC3, 0xC8, 0xCB, 0xCD, 0xD5, 0xD6, 0xDB, 0xDC, 0xDF, 0xF0),
    **_revs("Radeon 740M", 0x07, 0x08, 0xC5, 0xCA, 0xCC, 0xCE, 0xD8, 0xDE),
}
_HAWK_BY_REV = _revs(
    "Radeon 760M",
    *(0x02, 0x04, 0x07, 0xB7, 0xB8, 0xC1, 0xC3, 0xC6, 0xC8, 0xCA, 0xCD, 0xCF, 0xD1, 0xD3, 0xD6, 0xD8),
    *(0xDA, 0xDD, 0xDF),
)

_TABLE: dict[tuple[int, int], _Product] = {
    # AMD APUs (integrated)
    (AMD, 0x15BF): _Product(
        "Radeon 780M",
        integrated=True,
        by_cu={12: "Radeon 780M", 8: "Radeon 760M", 4: "Radeon 740M"},
        by_revision=_PHOENIX_BY_REV,
    ),
    (AMD, 0x1900): _Product(
        "Radeon 780M",
        integrated=True,
        by_cu={12: "Radeon 780M", 8: "Radeon 760M"},
        by_revision=_HAWK_BY_REV,
    ),
    (AMD, 0x15C8): _Product("Radeon 740M", integrated=True),
    (AMD, 0x1901): _Product("Radeon 740M", integrated=True),
    (AMD, 0x150E): _Product(
        "Radeon 890M",
        integrated=True,
        by_cu={16: "Radeon 890M", 12: "Radeon 880M"},
        by_revision=_revs("Radeon 880M", 0xC4, 0xD2),
    ),
    (AMD, 0x1586): _Product(
        "Radeon 8060S",
        integrated=True,
        by_cu={40: "Radeon 8060S", 32: "Radeon 8050S"},
        by_revision={**_revs("Radeon 8050S", 0xC2, 0xC4, 0xD2, 0xD4), 0xD5: "Radeon 8040S"},
    ),
    (AMD, 0x1681): _Product(
        "Radeon 680M",
        integrated=True,
        by_cu={12: "Radeon 680M", 6: "Radeon 660M"},
        by_revision=_revs("Radeon 660M", 0x07, 0x0B, 0xC9),
    ),
    (AMD, 0x164E): _Product("Radeon 610M", integrated=True),
    (AMD, 0x13C0): _Product("Radeon Graphics", integrated=True),
    # AMD discrete (revision names as in libdrm's amdgpu.ids; an unknown revision gets the family)
    (AMD, 0x73BF): _Product(
        "Radeon RX 6800/6900 series",
        by_revision={0xC0: "Radeon RX 6900 XT", 0xC1: "Radeon RX 6800 XT", 0xC3: "Radeon RX 6800"},
    ),
    (AMD, 0x73AF): _Product("Radeon RX 6900 XT"),
    (AMD, 0x73A5): _Product("Radeon RX 6950 XT"),
    (AMD, 0x744C): _Product(
        "Radeon RX 7900 series",
        by_revision={
            0xC8: "Radeon RX 7900 XTX",
            0xCC: "Radeon RX 7900 XT",
            0xCE: "Radeon RX 7900 GRE",
            0xCF: "Radeon RX 7900M",
        },
    ),
    (AMD, 0x7550): _Product(
        "Radeon RX 9070 series",
        by_revision={0xC0: "Radeon RX 9070 XT", 0xC2: "Radeon RX 9070 GRE", 0xC3: "Radeon RX 9070"},
    ),
    (AMD, 0x7590): _Product(
        "Radeon RX 9060 series",
        by_revision={0xC0: "Radeon RX 9060 XT", 0xC1: "Radeon RX 9060 XT LP", 0xC7: "Radeon RX 9060"},
    ),
    # NVIDIA desktop
    (NVIDIA, 0x2D04): _Product("GeForce RTX 5060 Ti"),
    (NVIDIA, 0x2D05): _Product("GeForce RTX 5060"),
    (NVIDIA, 0x2F06): _Product("GeForce RTX 5060"),
    (NVIDIA, 0x2D83): _Product("GeForce RTX 5050"),
    (NVIDIA, 0x2F04): _Product("GeForce RTX 5070"),
    (NVIDIA, 0x2C05): _Product("GeForce RTX 5070 Ti"),
    (NVIDIA, 0x2C02): _Product("GeForce RTX 5080"),
    (NVIDIA, 0x2B85): _Product("GeForce RTX 5090"),
    (NVIDIA, 0x2882): _Product("GeForce RTX 4060"),
    (NVIDIA, 0x2803): _Product("GeForce RTX 4060 Ti"),
    (NVIDIA, 0x2805): _Product("GeForce RTX 4060 Ti 16GB"),
    (NVIDIA, 0x2786): _Product("GeForce RTX 4070"),
    (NVIDIA, 0x2782): _Product("GeForce RTX 4070 Ti"),
    (NVIDIA, 0x2704): _Product("GeForce RTX 4080"),
    (NVIDIA, 0x2684): _Product("GeForce RTX 4090"),
    (NVIDIA, 0x2503): _Product("GeForce RTX 3060"),
    (NVIDIA, 0x2504): _Product("GeForce RTX 3060"),
    (NVIDIA, 0x2484): _Product("GeForce RTX 3070"),
    (NVIDIA, 0x2206): _Product("GeForce RTX 3080"),
    (NVIDIA, 0x2204): _Product("GeForce RTX 3090"),
    # Intel discrete (Alchemist DG2, Battlemage BMG; DG1)
    (INTEL, 0x56A0): _Product("Intel Arc A770"),
    (INTEL, 0x56A1): _Product("Intel Arc A750"),
    (INTEL, 0x56A2): _Product("Intel Arc A580"),
    (INTEL, 0x56A5): _Product("Intel Arc A380"),
    (INTEL, 0x56A6): _Product("Intel Arc A310"),
    (INTEL, 0x5690): _Product("Intel Arc A770M"),
    (INTEL, 0x5691): _Product("Intel Arc A730M"),
    (INTEL, 0x5692): _Product("Intel Arc A550M"),
    (INTEL, 0x5693): _Product("Intel Arc A370M"),
    (INTEL, 0x5694): _Product("Intel Arc A350M"),
    (INTEL, 0xE20B): _Product("Intel Arc B580"),
    (INTEL, 0xE20C): _Product("Intel Arc B570"),
    (INTEL, 0x4905): _Product("Intel Iris Xe MAX"),
    # Intel integrated
    **{
        (INTEL, device): _Product(name, integrated=True)
        for name, devices in (
            ("Intel Iris Xe Graphics", (0x9A49, 0x9A40, 0x46A6, 0x46A8, 0x46AA, 0xA7A0, 0xA7A1)),
            ("Intel UHD Graphics", (0x9A60, 0x9A68, 0x9A70, 0x9A78, 0x46A3, 0x46B3, 0x46C3, 0xA7A8, 0xA7A9)),
            ("Intel UHD Graphics 770", (0x4680, 0x4690, 0xA780)),
            ("Intel UHD Graphics 730", (0x4692, 0xA782)),
            ("Intel UHD Graphics 710", (0x4693,)),
            ("Intel UHD Graphics 630", (0x3E91, 0x3E92, 0x3E98, 0x9BC5, 0x9BC8)),
            ("Intel UHD Graphics 620", (0x5917, 0x3EA0)),
            ("Intel Arc Graphics", (0x7D55, 0x7D51)),
            ("Intel Graphics", (0x7DD5, 0x7D45, 0x7D67)),
            ("Intel Arc 130V/140V", (0x64A0,)),
        )
        for device in devices
    },
}


@lru_cache(maxsize=8)
def _pci_ids_vendor(path: Path, vendor_id: int) -> dict[int, str]:
    """One vendor's device names from a ``pci.ids`` file (``\tDDDD  Name`` lines under ``VVVV  Vendor``)."""
    names: dict[int, str] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return names
    header = f"\n{vendor_id:04x}  "
    start = text.find(header)
    if start < 0:
        return names
    for line in text[start + len(header) :].splitlines()[1:]:
        if not line.startswith("\t"):
            if line and not line.startswith("#"):
                break  # the next vendor
            continue
        if line.startswith("\t\t"):
            continue  # a subsystem
        device, _, name = line[1:].partition("  ")
        try:
            names[int(device, 16)] = name.strip()
        except ValueError:
            continue
    return names


def pci_ids_name(vendor_id: int, device_id: int, paths: tuple[Path, ...] = PCI_IDS) -> str | None:
    """The PCI ID database's name, tidied to the marketing name where it has one:
    ``Caicos [Radeon HD 6450/7450/8450 / R5 230 OEM]`` → ``Radeon HD 6450/7450/8450 / R5 230 OEM``,
    ``DG2 [Arc A380]`` → ``Intel Arc A380``."""
    for path in paths:
        name = _pci_ids_vendor(path, vendor_id).get(device_id)
        if name is None:
            continue
        if "[" in name and name.endswith("]"):
            name = name[name.index("[") + 1 : -1].strip() or name
        if vendor_id == INTEL and not name.startswith("Intel"):
            name = f"Intel {name}"
        return name
    return None


def known_integrated(vendor_id: int, device_id: int) -> bool | None:
    """True/False where the table knows whether this id is an integrated GPU, None where it does not."""
    product = _TABLE.get((vendor_id, device_id))
    return None if product is None else product.integrated


@lru_cache(maxsize=4)
def _amdgpu_ids(path: Path) -> dict[tuple[int, int], str]:
    table: dict[tuple[int, int], str] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return table
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) != 3:
            continue
        try:
            table.setdefault((int(parts[0], 16), int(parts[1], 16)), parts[2])
        except ValueError:
            continue
    return table


def amdgpu_ids_name(device_id: int, revision: int | None, ids_path: Path = AMDGPU_IDS) -> str | None:
    """libdrm's ``amdgpu.ids`` marketing name, tidied: "AMD Radeon 780M Graphics" → "Radeon 780M"."""
    if revision is None:
        return None
    name = _amdgpu_ids(ids_path).get((device_id, revision))
    if name is None:
        return None
    name = name.removeprefix("AMD ").removesuffix(" Graphics").strip()
    return name or None


def friendly_name(
    vendor_id: int,
    device_id: int,
    *,
    revision: int | None = None,
    compute_units: int | None = None,
    fallback: str | None = None,
    ids_path: Path | None = AMDGPU_IDS,
    pci_ids: tuple[Path, ...] = (),
) -> str:
    """The name a person knows the GPU by.

    ``fallback`` is a name the driver gave (sysfs ``product_name``, NVML's name); used when the table
    and ``amdgpu.ids`` (``ids_path``; None to skip) do not know the id. ``pci_ids``: PCI ID database
    files to try after that (``PCI_IDS`` for the system's; empty to skip).
    """
    product = _TABLE.get((vendor_id, device_id))
    if product is not None:
        return product.name(revision, compute_units)
    if vendor_id == AMD and ids_path is not None:
        name = amdgpu_ids_name(device_id, revision, ids_path)
        if name is not None:
            return name
    if fallback is not None and fallback.strip():
        return fallback.strip()
    if pci_ids:
        name = pci_ids_name(vendor_id, device_id, pci_ids)
        if name is not None:
            return name
    vendor = VENDOR_NAMES.get(vendor_id, f"0x{vendor_id:04x}")
    return f"{vendor} GPU 0x{device_id:04x}"
