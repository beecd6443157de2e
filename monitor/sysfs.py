"""Robust readers for sysfs/procfs files and PCI helpers shared by the Linux backends.

sysfs values may carry trailing whitespace or NUL padding, and a file may be missing, empty, garbage
or unreadable: every reader returns None then, so one bad file costs one metric, never the device.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_BDF_RE = re.compile(r"^(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$")


def text_of(raw: bytes | None) -> str | None:
    """A sysfs value's bytes as text: NUL padding and surrounding whitespace dropped; None if empty."""
    if raw is None:
        return None
    text = raw.replace(b"\x00", b"").decode("utf-8", errors="replace").strip()
    return text or None


def int_of(text: str | None) -> int | None:
    """Decimal or ``0x`` hex text as an int; None if it is neither."""
    if text is None:
        return None
    try:
        return int(text, 0) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return None


def read_str(path: Path) -> str | None:
    return text_of(read_bytes(path))


def read_int(path: Path) -> int | None:
    return int_of(read_str(path))


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def normalize_bdf(text: str) -> str | None:
    """``00000000:01:00.0`` (NVML), ``0000:01:00.0`` or ``01:00.0`` → ``0000:01:00.0``; None if not a BDF."""
    m = _BDF_RE.match(text.strip())
    if m is None:
        return None
    domain = int(m.group(1) or "0", 16)
    return f"{domain:04x}:{m.group(2).lower()}:{m.group(3).lower()}.{m.group(4)}"


def pci_key(bdf: str) -> str:
    """The canonical device key for a PCI address."""
    norm = normalize_bdf(bdf)
    return f"pci:{norm if norm is not None else bdf.lower()}"


def runtime_status(sysfs_root: Path, bdf: str) -> str | None:
    """``active``, ``suspended``, ``suspending``, ``resuming`` or None when runtime PM is not exposed.

    Reading this file never wakes the device, unlike opening it through NVML or reading hwmon.
    """
    norm = normalize_bdf(bdf) or bdf
    return read_str(sysfs_root / "bus" / "pci" / "devices" / norm / "power" / "runtime_status")


def is_asleep(sysfs_root: Path, bdf: str) -> bool:
    return runtime_status(sysfs_root, bdf) in {"suspended", "suspending"}


_CARD_NAME = re.compile(r"^card(\d+)$")


def drm_class_dir(sys_dir: Path) -> str:
    """``<sys>/class/drm``, or ``sys_dir`` itself when it is a captured ``/sys/class/drm`` (LACT layout)."""
    root = str(sys_dir)
    drm = f"{root}/class/drm"
    return drm if os.path.isdir(drm) else root


def drm_cards(drm_dir: str) -> list[str]:
    """The ``cardN`` entries of a DRM class folder in number order (no connectors like ``card0-DP-1``)."""
    try:
        names = os.listdir(drm_dir)
    except OSError:
        return []
    numbered = [(int(m.group(1)), n) for n in names if (m := _CARD_NAME.match(n)) is not None]
    return [n for _, n in sorted(numbered)]
