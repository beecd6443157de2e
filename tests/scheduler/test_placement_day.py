"""A tiny version of ``bench/placement_day.py`` (two hours, every policy) so the bench cannot rot: it runs
through the real placement code and ``fastest`` beats ``free`` where a hopeless iGPU run is avoided."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import placement_day as day_bench


def test_a_short_day_runs_every_policy_and_fastest_keeps_the_diffusion_job_off_the_igpu() -> None:
    day = day_bench.make_day(seed=2, hours=2.0, mean_gap_s=120.0, diffusion_at_s=5400.0)
    figures = {p: day_bench.figures(day, day_bench.simulate(day, p)) for p in day_bench.POLICIES}
    assert len(day.jobs) > 10 and len(day.llm_spells) == 2
    diffusion = next(j.id for j in day.jobs if j.family == "diffusion")
    fastest = day_bench.simulate(day, "fastest")
    assert fastest.starts[diffusion][1] == day_bench.NV  # it ran before: 10x slower on the 780M
    assert figures["fastest"].mean_completion_s < figures["free"].mean_completion_s
    assert figures["fastest"].mean_completion_s <= 1.10 * figures["oracle"].mean_completion_s
    assert figures["greenest"].makespan_s > 0
