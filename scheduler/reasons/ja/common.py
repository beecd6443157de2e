"""What every area of the Japanese catalogue shares: the catalogue itself (``JA``) and the small helpers its
wordings use."""

from __future__ import annotations

from gputray.monitor import busy_why as b
from gputray.scheduler.reasons.say import Catalogue

JA = Catalogue(
    "ja", joiner="、", sentences="。", unit_s="{n} 秒", unit_min="{m} 分", unit_h_min="{h} 時間 {m:02d} 分"
)


def _where(device: str | None) -> str:
    return "CPU" if device is None else device


def _demo(demo_for: str | None) -> str:
    return f"（デモ：{demo_for} の代わり）" if demo_for else ""


def _pct(value: float) -> str:
    return f"{value:.0f} %"


def _who(who: b.Who) -> str:
    return f"{who.name} ほか {who.others} 件" if who.others else who.name


def _flat(text: str) -> str:
    """An inner reason put in brackets: its own brackets become "、" so that none nest."""
    return text.replace("（", "、").replace("）", "")


#: A task's state in words (a dependency's, a refused task's).
_STATES = {
    "queued": "キュー内",
    "waiting": "待機中",
    "starting": "起動中",
    "running": "実行中",
    "succeeded": "成功",
    "failed": "失敗",
    "cancelled": "キャンセル済み",
    "interrupted": "中断",
}
