"""Parse amdgpu's binary ``gpu_metrics`` sysfs file.

The layouts are the kernel's ``struct gpu_metrics_vX_Y`` (``drivers/gpu/drm/amd/include/kgd_pp_interface.h``),
naturally aligned C structs behind a 4-byte header ``u16 structure_size, u8 format_revision,
u8 content_revision``. Format 1 is the dGPU layout (temperatures in °C, activity in %, power in W),
format 2 the APU layout (temperatures in centi-°C, activity in centi-%, power in mW) and format 3 the
newer APU layout of Strix Point (centi-°C, activity in %, power in mW as u32). A field whose bits are
all ones (0xFFFF, 0xFFFFFFFF) is "not available" and parses as None. The file may be NUL padded past
``structure_size`` (the RX 6900 XT capture is 4096 bytes for a 120-byte struct).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_HEADER = struct.Struct("<HBB")
_FMT = {"u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q"}
_NA = {"u8": 0xFF, "u16": 0xFFFF, "u32": 0xFFFF_FFFF, "u64": 0xFFFF_FFFF_FFFF_FFFF}

# field -> (offset, type); units per format are applied in _build().
_Layout = dict[str, tuple[int, str]]

_V1_0: _Layout = {
    "temp_edge": (16, "u16"),
    "temp_hotspot": (18, "u16"),
    "temp_mem": (20, "u16"),
    "gfx_activity": (28, "u16"),
    "mm_activity": (32, "u16"),
    "socket_power": (34, "u16"),
    "avg_gfxclk": (40, "u16"),
    "avg_uclk": (44, "u16"),
    "cur_gfxclk": (54, "u16"),
    "cur_uclk": (58, "u16"),
    "throttle_status": (68, "u32"),
}
_V1_1: _Layout = {
    "temp_edge": (4, "u16"),
    "temp_hotspot": (6, "u16"),
    "temp_mem": (8, "u16"),
    "gfx_activity": (16, "u16"),
    "mm_activity": (20, "u16"),
    "socket_power": (22, "u16"),
    "avg_gfxclk": (40, "u16"),
    "avg_uclk": (44, "u16"),
    "cur_gfxclk": (54, "u16"),
    "cur_uclk": (58, "u16"),
    "throttle_status": (68, "u32"),
}
_V1_3: _Layout = {**_V1_1, "indep_throttle_status": (112, "u64")}
# v1.4 .. v1.6 are the MI300 layouts: only what a desktop monitor needs.
_V1_4: _Layout = {
    "temp_hotspot": (4, "u16"),
    "temp_mem": (6, "u16"),
    "socket_power": (10, "u16"),
    "gfx_activity": (12, "u16"),
    "throttle_status": (40, "u32"),
}
_V1_5: _Layout = {**_V1_4, "throttle_status": (104, "u32")}
_V1_6: _Layout = {**_V1_4, "throttle_status": (128, "u32")}
_V2_0: _Layout = {
    "temp_gfx": (16, "u16"),
    "temp_soc": (18, "u16"),
    "gfx_activity": (40, "u16"),
    "mm_activity": (42, "u16"),
    "socket_power": (44, "u16"),
    "gfx_power": (50, "u16"),
    "avg_gfxclk": (68, "u16"),
    "avg_uclk": (72, "u16"),
    "cur_gfxclk": (80, "u16"),
    "cur_uclk": (84, "u16"),
    "throttle_status": (112, "u32"),
}
_V2_1: _Layout = {
    "temp_gfx": (4, "u16"),
    "temp_soc": (6, "u16"),
    "gfx_activity": (28, "u16"),
    "mm_activity": (30, "u16"),
    "socket_power": (40, "u16"),
    "gfx_power": (46, "u16"),
    "avg_gfxclk": (64, "u16"),
    "avg_uclk": (68, "u16"),
    "cur_gfxclk": (76, "u16"),
    "cur_uclk": (80, "u16"),
    "throttle_status": (108, "u32"),
}
_V2_2: _Layout = {**_V2_1, "indep_throttle_status": (120, "u64")}
_V3_0: _Layout = {
    "temp_gfx": (4, "u16"),
    "temp_soc": (6, "u16"),
    "gfx_activity": (42, "u16"),
    "mm_activity": (44, "u16"),
    "socket_power": (112, "u32"),
    "gfx_power": (124, "u32"),
    "avg_gfxclk": (174, "u16"),
    "avg_uclk": (186, "u16"),
    "res_prochot": (228, "u32"),
    "res_spl": (232, "u32"),
    "res_fppt": (236, "u32"),
    "res_sppt": (240, "u32"),
    "res_thm_core": (244, "u32"),
    "res_thm_gfx": (248, "u32"),
    "res_thm_soc": (252, "u32"),
}


def _layout(fmt: int, content: int) -> _Layout | None:
    """The layout of a table version; None for one gputray does not know.

    Format 2 grew by appending fields from 2.1 to 2.4, so a later 2.x is read by its 2.2 prefix;
    format 1 changed its layout at 1.4 (MI300) and format 3 is too new to guess, so unknown versions
    of those are not read at all.
    """
    if fmt == 1:
        layouts = {0: _V1_0, 1: _V1_1, 2: _V1_1, 3: _V1_3, 4: _V1_4, 5: _V1_5, 6: _V1_6}
        return layouts.get(content)
    if fmt == 2:
        return {0: _V2_0, 1: _V2_1}.get(content, _V2_2)
    if fmt == 3 and content == 0:
        return _V3_0
    return None


# The ASIC-independent throttler bits (SMU_THROTTLER_*_BIT in amdgpu_smu.h), as "cause:detail".
INDEP_THROTTLE_BITS: dict[int, str] = {
    0: "power:ppt0",
    1: "power:ppt1",
    2: "power:ppt2",
    3: "power:ppt3",
    4: "power:spl",
    5: "power:fast-ppt",
    6: "power:slow-ppt",
    7: "power:slow-ppt-apu",
    16: "current:tdc-gfx",
    17: "current:tdc-soc",
    18: "current:tdc-mem",
    19: "current:tdc-vdd",
    20: "current:tdc-cvip",
    21: "current:edc-cpu",
    22: "current:edc-gfx",
    23: "current:apcc",
    32: "thermal:gpu",
    33: "thermal:core",
    34: "thermal:mem",
    35: "thermal:edge",
    36: "thermal:hotspot",
    37: "thermal:soc",
    38: "thermal:vr-gfx",
    39: "thermal:vr-soc",
    40: "thermal:vr-mem0",
    41: "thermal:vr-mem1",
    42: "thermal:liquid0",
    43: "thermal:liquid1",
    44: "thermal:vrhot0",
    45: "thermal:vrhot1",
    46: "thermal:prochot-cpu",
    47: "thermal:prochot-gfx",
    56: "other:ppm",
    57: "other:fit",
}

# Format 3 reports cumulative throttle residencies instead of a status word.
RESIDENCY_NAMES: dict[str, str] = {
    "prochot": "thermal:prochot",
    "spl": "power:spl",
    "fppt": "power:fast-ppt",
    "sppt": "power:slow-ppt",
    "thm_core": "thermal:core",
    "thm_gfx": "thermal:gfx",
    "thm_soc": "thermal:soc",
}


@dataclass(frozen=True)
class GpuMetrics:
    """The fields of one ``gpu_metrics`` table that gputray uses; None where not available.

    ``temp_c`` is the GPU's own temperature: ``temperature_edge`` on a dGPU, ``temperature_gfx`` on an APU.
    ``residencies`` (format 3 only) maps a RESIDENCY_NAMES key to its cumulative counter.
    """

    structure_size: int
    format_revision: int
    content_revision: int
    temp_c: float | None = None
    temp_hotspot_c: float | None = None
    temp_mem_c: float | None = None
    temp_soc_c: float | None = None
    gfx_activity_percent: float | None = None
    mm_activity_percent: float | None = None
    socket_power_w: float | None = None
    gfx_power_w: float | None = None
    gfxclk_mhz: int | None = None
    uclk_mhz: int | None = None
    throttle_status: int | None = None
    indep_throttle_status: int | None = None
    residencies: tuple[tuple[str, int], ...] = ()

    @property
    def is_apu(self) -> bool:
        """Formats 2 and 3 are only produced by APUs (integrated GPUs)."""
        return self.format_revision in (2, 3)

    @property
    def version(self) -> str:
        return f"{self.format_revision}.{self.content_revision}"

    def throttle_reasons(self) -> tuple[str, ...] | None:
        """Decoded throttle causes (empty when not throttling), or None when this table cannot say.

        The ASIC-independent word is decoded bit by bit; the ASIC-dependent word alone only tells
        throttling or not, so a non-zero value is reported with its raw bits.
        """
        if self.indep_throttle_status is not None:
            word = self.indep_throttle_status
            return tuple(name for bit, name in INDEP_THROTTLE_BITS.items() if word >> bit & 1)
        if self.throttle_status is not None:
            if self.throttle_status == 0:
                return ()
            return (f"firmware:0x{self.throttle_status:x}",)
        return None


def _field(data: bytes, offset: int, kind: str) -> int | None:
    fmt = _FMT[kind]
    end = offset + struct.calcsize(fmt)
    if end > len(data):
        return None
    (value,) = struct.unpack_from(fmt, data, offset)
    return None if value == _NA[kind] else int(value)


def _scaled(value: int | None, divisor: float) -> float | None:
    return None if value is None else value / divisor


def parse_gpu_metrics(raw: bytes | None) -> GpuMetrics | None:
    """Parse a ``gpu_metrics`` file's bytes; None for a missing, truncated or unknown table."""
    if raw is None or len(raw) < _HEADER.size:
        return None
    size, fmt, content = _HEADER.unpack_from(raw, 0)
    layout = _layout(fmt, content)
    if layout is None or size < _HEADER.size or size > len(raw):
        return None
    data = raw[:size]
    values = {name: _field(data, off, kind) for name, (off, kind) in layout.items()}
    return _build(size, fmt, content, values)


def _build(size: int, fmt: int, content: int, v: dict[str, int | None]) -> GpuMetrics:
    if fmt == 1:
        temp_div, act_div, power_div = 1.0, 1.0, 1.0
    elif fmt == 2:
        temp_div, act_div, power_div = 100.0, 100.0, 1000.0
    else:
        temp_div, act_div, power_div = 100.0, 1.0, 1000.0
    cur_gfx, cur_uclk = v.get("cur_gfxclk"), v.get("cur_uclk")
    residencies = tuple((key, value) for key in RESIDENCY_NAMES if (value := v.get(f"res_{key}")) is not None)
    return GpuMetrics(
        structure_size=size,
        format_revision=fmt,
        content_revision=content,
        temp_c=_scaled(v.get("temp_edge", v.get("temp_gfx")), temp_div),
        temp_hotspot_c=_scaled(v.get("temp_hotspot"), temp_div),
        temp_mem_c=_scaled(v.get("temp_mem"), temp_div),
        temp_soc_c=_scaled(v.get("temp_soc"), temp_div),
        gfx_activity_percent=_scaled(v.get("gfx_activity"), act_div),
        mm_activity_percent=_scaled(v.get("mm_activity"), act_div),
        socket_power_w=_scaled(v.get("socket_power"), power_div),
        gfx_power_w=_scaled(v.get("gfx_power"), power_div),
        gfxclk_mhz=cur_gfx if cur_gfx is not None else v.get("avg_gfxclk"),
        uclk_mhz=cur_uclk if cur_uclk is not None else v.get("avg_uclk"),
        throttle_status=v.get("throttle_status"),
        indep_throttle_status=v.get("indep_throttle_status"),
        residencies=residencies,
    )


def residency_throttle(previous: GpuMetrics | None, current: GpuMetrics) -> tuple[str, ...] | None:
    """Format 3: the causes whose residency counter grew since the previous table; None without one."""
    if previous is None or not current.residencies or not previous.residencies:
        return None
    before = dict(previous.residencies)
    return tuple(
        RESIDENCY_NAMES[key] for key, value in current.residencies if key in before and value > before[key]
    )
