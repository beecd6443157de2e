"""The doctor (``pyenvs/doctor.py``): which Python env runs torch on which device, its cached results
and a fresh check."""

from __future__ import annotations

from gputray.scheduler.pyenvs.doctor import NEEDS, cached_results, run_doctor, verdict_mark

__all__ = ["NEEDS", "cached_results", "run_doctor", "verdict_mark"]
