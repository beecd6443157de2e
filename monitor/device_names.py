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

VENDOR_NAMES = {AMD: "AMD", NVIDIA: "NVIDIA", INTEL: "Intel"}
AMDGPU_IDS = Path("/usr/share/libdrm/amdgpu.ids")


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
}


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
) -> str:
    """The name a person knows the GPU by.

    ``fallback`` is a name the driver gave (sysfs ``product_name``, NVML's name); used when the table
    and ``amdgpu.ids`` (``ids_path``; None to skip) do not know the id.
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
    vendor = VENDOR_NAMES.get(vendor_id, f"0x{vendor_id:04x}")
    return f"{vendor} GPU 0x{device_id:04x}"
