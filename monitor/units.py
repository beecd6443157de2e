"""Humane units for people: bytes in binary units, energy in J/kJ/MJ, missing values as an em dash."""

from __future__ import annotations

GIB = 1024**3
TIB = 1024**4
MIB = 1024**2
DASH = "—"


def format_bytes(n: float | None) -> str:
    if n is None:
        return DASH
    for unit, size in (("PiB", 1024 * TIB), ("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def format_pair(used: float | None, total: float | None) -> str:
    """``1.2/4.0 GiB``: both in the unit of the total so the two read together."""
    if used is None and total is None:
        return DASH
    if total is None:
        return format_bytes(used)
    unit, size = next(((u, s) for u, s in (("GiB", GIB), ("MiB", MIB)) if total >= s), ("KiB", 1024))
    used_text = DASH if used is None else f"{used / size:.1f}"
    return f"{used_text}/{total / size:.1f} {unit}"


def format_number(value: float | None, unit: str, digits: int = 0) -> str:
    return DASH if value is None else f"{value:.{digits}f}{unit}"


def format_energy_j(joules: float | None) -> str:
    """Joules below 10 kJ (``850 J``, ``4.2 J``), kJ below 10 MJ (``12.3 kJ``), then MJ (``14.4 MJ`` is
    4 kWh): at most four figures, and a unit change only where the number would grow past them."""
    if joules is None:
        return DASH
    if joules < 10:
        return f"{joules:.1f} J"
    if joules < 10_000:
        return f"{joules:.0f} J"
    if joules < 10_000_000:
        return f"{joules / 1000:.1f} kJ" if joules < 1_000_000 else f"{joules / 1000:.0f} kJ"
    return f"{joules / 1e6:.1f} MJ"
