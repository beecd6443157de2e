"""gpu_metrics tables: the three real captures, and synthetic tables for the other layouts."""

from __future__ import annotations

import struct

import pytest
from amd_trees import PHOENIX, RX6900XT, STRIX

from gputray.monitor.backends.gpu_metrics import GpuMetrics, parse_gpu_metrics, residency_throttle


def table(fmt: int, content: int, size: int, fields: dict[int, tuple[str, int]]) -> bytes:
    """A table of ``size`` bytes, every byte 0xFF (n/a) except the header and ``fields``."""
    raw = bytearray(b"\xff" * size)
    struct.pack_into("<HBB", raw, 0, size, fmt, content)
    for offset, (kind, value) in fields.items():
        struct.pack_into("<" + kind, raw, offset, value)
    return bytes(raw)


def test_phoenix_v2_1_apu_table() -> None:
    m = parse_gpu_metrics((PHOENIX / "card1" / "device" / "gpu_metrics").read_bytes())
    assert m is not None
    assert (m.structure_size, m.version, m.is_apu) == (120, "2.1", True)
    assert m.temp_c == 25.0  # 2500 centi-°C, same as hwmon's 25000 m°C
    assert m.temp_soc_c == pytest.approx(27.37)
    assert m.gfx_activity_percent == pytest.approx(0.79)  # 79 centi-%
    assert m.socket_power_w == pytest.approx(3.401)  # 3401 mW
    assert m.gfx_power_w == pytest.approx(0.585)
    assert m.gfxclk_mhz == 800  # current_gfxclk is n/a (0xFFFF): the average instead
    assert m.uclk_mhz == 400
    assert m.temp_hotspot_c is None
    assert m.throttle_status == 0 and m.indep_throttle_status is None
    assert m.throttle_reasons() == ()


def test_rx6900xt_v1_3_dgpu_table_is_nul_padded_to_a_page() -> None:
    raw = (RX6900XT / "card0" / "device" / "gpu_metrics").read_bytes()
    assert len(raw) == 4096
    m = parse_gpu_metrics(raw)
    assert m is not None
    assert (m.structure_size, m.version, m.is_apu) == (120, "1.3", False)
    assert (m.temp_c, m.temp_hotspot_c, m.temp_mem_c) == (56.0, 59.0, 54.0)  # °C on a dGPU
    assert m.gfx_activity_percent == 3.0
    assert m.socket_power_w == 36.0  # W on a dGPU
    assert (m.gfxclk_mhz, m.uclk_mhz) == (500, 1000)
    assert m.indep_throttle_status == 0
    assert m.throttle_reasons() == ()


def test_strix_point_v3_0_table() -> None:
    m = parse_gpu_metrics((STRIX / "card1" / "device" / "gpu_metrics").read_bytes())
    assert m is not None
    assert (m.structure_size, m.version, m.is_apu) == (264, "3.0", True)
    assert m.temp_c == pytest.approx(38.12)
    assert m.gfx_activity_percent == 3.0  # format 3 reports whole percent, like gpu_busy_percent
    assert m.socket_power_w == pytest.approx(9.839)  # u32 mW
    assert m.gfx_power_w == pytest.approx(1.536)
    assert (m.gfxclk_mhz, m.uclk_mhz) == (849, 836)
    assert dict(m.residencies)["spl"] == 1868
    assert m.throttle_reasons() is None  # residencies need a previous table


def test_v1_0_unaligned_dgpu_layout() -> None:
    raw = table(
        1, 0, 80,
        {16: ("H", 70), 18: ("H", 85), 28: ("H", 99), 34: ("H", 180), 54: ("H", 2400), 58: ("H", 875),
         68: ("I", 0)},
    )  # fmt: skip
    m = parse_gpu_metrics(raw)
    assert m is not None
    assert (m.temp_c, m.temp_hotspot_c, m.gfx_activity_percent, m.socket_power_w) == (70.0, 85.0, 99.0, 180.0)
    assert (m.gfxclk_mhz, m.uclk_mhz) == (2400, 875)
    assert m.throttle_reasons() == ()


def test_v2_2_indep_throttle_bits_are_decoded() -> None:
    bits = 1 << 35 | 1 << 4 | 1 << 57  # edge temperature, SPL power limit, FIT
    raw = table(2, 2, 128, {4: ("H", 9512), 28: ("H", 10000), 40: ("H", 25000), 120: ("Q", bits)})
    m = parse_gpu_metrics(raw)
    assert m is not None
    assert (m.temp_c, m.gfx_activity_percent, m.socket_power_w) == (95.12, 100.0, 25.0)
    assert m.throttle_reasons() == ("power:spl", "thermal:edge", "other:fit")


def test_v2_0_layout_has_the_timestamp_first() -> None:
    raw = table(2, 0, 120, {16: ("H", 4000), 40: ("H", 5000), 44: ("H", 12000), 112: ("I", 0x4)})
    m = parse_gpu_metrics(raw)
    assert m is not None
    assert (m.temp_c, m.gfx_activity_percent, m.socket_power_w) == (40.0, 50.0, 12.0)
    assert m.throttle_reasons() == ("firmware:0x4",)  # ASIC-dependent bits: raw, but not hidden


def test_not_available_fields_are_none() -> None:
    m = parse_gpu_metrics(table(2, 1, 120, {}))
    assert m is not None
    assert (m.temp_c, m.gfx_activity_percent, m.socket_power_w, m.gfxclk_mhz) == (None,) * 4
    assert m.throttle_reasons() is None


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x78\x00",  # shorter than the header
        table(2, 1, 120, {})[:60],  # structure_size beyond the data
        table(7, 0, 120, {}),  # a format nobody knows
        struct.pack("<HBB", 2, 2, 1) + b"\x00" * 116,  # size smaller than the header
    ],
)
def test_truncated_or_unknown_tables_are_none(raw: bytes) -> None:
    assert parse_gpu_metrics(raw) is None


def test_missing_file_is_none() -> None:
    assert parse_gpu_metrics(None) is None


def test_residency_throttle_reports_counters_that_grew() -> None:
    def v3(**res: int) -> GpuMetrics:
        offsets = {"prochot": 228, "spl": 232, "fppt": 236, "sppt": 240, "thm_core": 244, "thm_gfx": 248}
        m = parse_gpu_metrics(table(3, 0, 264, {offsets[k]: ("I", v) for k, v in res.items()}))
        assert m is not None
        return m

    before = v3(spl=10, thm_gfx=5, fppt=1)
    after = v3(spl=10, thm_gfx=9, fppt=3)
    assert residency_throttle(None, after) is None
    assert residency_throttle(before, after) == ("power:fast-ppt", "thermal:gfx")
    assert residency_throttle(after, after) == ()


def test_versions_read_or_refused() -> None:
    assert parse_gpu_metrics(table(2, 5, 136, {4: ("H", 3000)})) is not None  # 2.x only ever appended
    assert parse_gpu_metrics(table(1, 7, 200, {})) is None  # 1.4 already broke the layout once
    assert parse_gpu_metrics(table(3, 1, 300, {})) is None
