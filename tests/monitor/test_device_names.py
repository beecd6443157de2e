"""Friendly GPU names: what a person calls the card, from PCI ids, CU count and revision."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputray.monitor.device_names import AMD, NVIDIA, amdgpu_ids_name, friendly_name, known_integrated


@pytest.mark.parametrize(
    ("compute_units", "expected"),
    [(12, "Radeon 780M"), (8, "Radeon 760M"), (4, "Radeon 740M")],
)
def test_phoenix1_is_told_apart_by_compute_units(compute_units: int, expected: str) -> None:
    # the CU count wins over a revision that would say otherwise (0xC3 is listed as a 760M)
    assert friendly_name(AMD, 0x15BF, revision=0xC3, compute_units=compute_units, ids_path=None) == expected


@pytest.mark.parametrize(
    ("revision", "expected"),
    [(0xDD, "Radeon 780M"), (0xC3, "Radeon 760M"), (0xC5, "Radeon 740M"), (None, "Radeon 780M")],
)
def test_phoenix1_without_kfd_uses_the_revision(revision: int | None, expected: str) -> None:
    assert friendly_name(AMD, 0x15BF, revision=revision, ids_path=None) == expected


def test_strix_point_890m_and_880m() -> None:
    assert friendly_name(AMD, 0x150E, compute_units=16, ids_path=None) == "Radeon 890M"
    assert friendly_name(AMD, 0x150E, compute_units=12, ids_path=None) == "Radeon 880M"
    assert friendly_name(AMD, 0x150E, revision=0xC1, ids_path=None) == "Radeon 890M"
    assert friendly_name(AMD, 0x150E, revision=0xC4, ids_path=None) == "Radeon 880M"


def test_discrete_radeons_by_revision() -> None:
    assert friendly_name(AMD, 0x73BF, revision=0xC0, ids_path=None) == "Radeon RX 6900 XT"
    assert friendly_name(AMD, 0x73BF, revision=0xC1, ids_path=None) == "Radeon RX 6800 XT"
    assert friendly_name(AMD, 0x73BF, ids_path=None) == "Radeon RX 6800/6900 series"
    assert friendly_name(AMD, 0x744C, revision=0xC8, ids_path=None) == "Radeon RX 7900 XTX"


def test_nvidia_names() -> None:
    assert friendly_name(NVIDIA, 0x2D04) == "GeForce RTX 5060 Ti"
    assert friendly_name(NVIDIA, 0x2D05) == "GeForce RTX 5060"
    assert friendly_name(NVIDIA, 0x2684) == "GeForce RTX 4090"


def test_fallbacks_in_order(tmp_path: Path) -> None:
    ids = tmp_path / "amdgpu.ids"
    ids.write_text(
        "# List of AMDGPU IDs\n#\n1.0.0\n"
        "7480,\tC0,\tAMD Radeon RX 7600 XT\n"
        "1114,\tC3,\tAMD Radeon 860M Graphics\n"
        "broken line\n"
    )
    assert friendly_name(AMD, 0x1114, revision=0xC3, ids_path=ids) == "Radeon 860M"
    assert friendly_name(AMD, 0x7480, revision=0xC0, ids_path=ids) == "Radeon RX 7600 XT"
    # not in the ids file: the driver's own name, then the plain id
    assert (
        friendly_name(AMD, 0x1114, revision=0xD1, fallback=" Radeon Pro X ", ids_path=ids) == "Radeon Pro X"
    )
    assert friendly_name(AMD, 0x1114, revision=0xD1, fallback="", ids_path=ids) == "AMD GPU 0x1114"
    assert friendly_name(NVIDIA, 0x9999, fallback="NVIDIA Mystery") == "NVIDIA Mystery"
    assert friendly_name(NVIDIA, 0x9999) == "NVIDIA GPU 0x9999"
    assert friendly_name(0x1235, 0x0001) == "0x1235 GPU 0x0001"


def test_missing_ids_file_is_not_an_error(tmp_path: Path) -> None:
    assert amdgpu_ids_name(0x1114, 0xC3, tmp_path / "absent.ids") is None
    assert amdgpu_ids_name(0x1114, None, tmp_path / "absent.ids") is None
    assert friendly_name(AMD, 0x1114, revision=0xC3, ids_path=tmp_path / "absent.ids") == "AMD GPU 0x1114"


def test_known_integrated() -> None:
    assert known_integrated(AMD, 0x15BF) is True
    assert known_integrated(AMD, 0x73BF) is False
    assert known_integrated(NVIDIA, 0x2D04) is False
    assert known_integrated(AMD, 0x1234) is None
