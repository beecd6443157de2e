"""Bounded per-device history of samples (≥ 1 h at 1 Hz), queried per metric for sparklines and plots."""

from __future__ import annotations

from collections import deque
from dataclasses import fields

from gputray.monitor.records import Sample

NUMERIC_METRICS = tuple(
    f.name for f in fields(Sample) if f.name not in {"key", "timestamp_s", "state", "reason", "throttle"}
)


class History:
    def __init__(self, max_samples: int) -> None:
        self.max_samples = max(1, max_samples)
        self._by_key: dict[str, deque[Sample]] = {}

    def add(self, sample: Sample) -> None:
        ring = self._by_key.get(sample.key)
        if ring is None:
            ring = self._by_key[sample.key] = deque(maxlen=self.max_samples)
        ring.append(sample)

    def samples(self, key: str, since_s: float | None = None) -> list[Sample]:
        ring = self._by_key.get(key)
        if not ring:
            return []
        if since_s is None:
            return list(ring)
        return [s for s in ring if s.timestamp_s >= since_s]

    def series(self, key: str, metric: str, since_s: float | None = None) -> list[tuple[float, float | None]]:
        """``(timestamp_s, value)`` pairs; value None where the metric was unknown at that instant."""
        if metric not in NUMERIC_METRICS:
            raise ValueError(f"unknown metric {metric!r}; one of: {', '.join(NUMERIC_METRICS)}")
        out: list[tuple[float, float | None]] = []
        for s in self.samples(key, since_s):
            value = getattr(s, metric)
            out.append((s.timestamp_s, None if value is None else float(value)))
        return out

    def keys(self) -> list[str]:
        return list(self._by_key)
