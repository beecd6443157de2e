"""Two real Vulkan devices on a machine without a GPU, built by the test itself: Mesa's lavapipe twice,
through two ICD files in ``VK_ICD_FILENAMES``, the second naming a copy of ``libvulkan_lvp.so`` whose
device-name format string ``llvmpipe (LLVM …, %u bits)`` is overwritten in place with one of the same
length (``lavapipe2 (LVM …, %u bits)``). The loader lists the second first (Mesa 22, loader 1.3): 0
``lavapipe2 …``, 1 ``llvmpipe …``; tests look them up by name. Both report the same ``deviceUUID``;
they differ by name (DESIGN.md, "Programs that hold a GPU")."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from gputray.scheduler.owner import Owner

LVP_ICD = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
OLD, NEW = b"llvmpipe (LLVM ", b"lavapipe2 (LVM "  # same length: the string table keeps its offsets


def lavapipe_library() -> Path | None:
    """The lavapipe driver the system's ICD file names; None without mesa-vulkan-drivers."""
    try:
        return Path(json.loads(LVP_ICD.read_text())["ICD"]["library_path"])
    except (OSError, ValueError, KeyError):
        return None


def two_lavapipes(folder: Path) -> str:
    """``VK_ICD_FILENAMES`` for the two devices (the patched copy and its ICD file go in ``folder``);
    skips the test, saying why, where lavapipe is missing or its name string is not where expected."""
    library = lavapipe_library()
    if library is None or not library.exists():
        pytest.skip("needs mesa-vulkan-drivers (lavapipe): apt-get install mesa-vulkan-drivers")
    data = library.read_bytes()
    if data.count(OLD) != 1:
        pytest.skip(
            f"{library}: its device name string {OLD!r} is not there once; cannot make a second device"
        )
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / "libvulkan_lvp2.so"
    copy.write_bytes(data.replace(OLD, NEW))
    icd = json.loads(LVP_ICD.read_text())
    icd["ICD"]["library_path"] = str(copy)
    second = folder / "lvp2_icd.json"
    second.write_text(json.dumps(icd))
    return f"{LVP_ICD}{os.pathsep}{second}"


# The demo pair backed by the two devices: the GeForce RTX 5060 Ti by the patched copy (Vulkan index 0),
# the Radeon 780M by the system's lavapipe (index 1).
SCENARIO = (
    '[[vulkan]]\ndevice = "5060ti"\nname = "lavapipe2"\n[[vulkan]]\ndevice = "780m"\nname = "llvmpipe"\n'
)


@contextlib.contextmanager
def demo_owner_on_two_lavapipes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Owner]:
    """An in-process demo owner (``GPUTRAY_HOME`` = ``tmp_path/home``) whose GPUs are the two devices
    (``VK_ICD_FILENAMES`` set for the test, so jobs submitted from it inherit it)."""
    from real_owner import home_paths

    from gputray.scheduler.owner import Owner

    monkeypatch.setenv("VK_ICD_FILENAMES", two_lavapipes(tmp_path / "icd"))
    paths = home_paths(tmp_path, monkeypatch)
    scenario = tmp_path / "two_lavapipes.toml"
    scenario.write_text(SCENARIO)
    owner = Owner(paths, demo=True, scenario=scenario)
    owner.start()
    try:
        yield owner
    finally:
        owner.stop()
