"""Data files shipped with gputray: icons, default config, recipes, probe scripts, translations."""

from __future__ import annotations

from pathlib import Path

RESOURCES_DIR = Path(__file__).resolve().parent


def resource_path(name: str) -> Path:
    return RESOURCES_DIR / name
