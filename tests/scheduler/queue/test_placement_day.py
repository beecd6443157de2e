"""A tiny version of ``bench/placement_day.py`` (two hours, every policy) so the bench cannot rot: it runs
through the real placement code and ``fastest`` beats ``free`` where a hopeless iGPU run is avoided."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

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


def test_a_short_day_with_teeth_preempts_for_the_urgent_job_and_runs_the_big_ones_elsewhere() -> None:
    """``placement_teeth``: an urgent job waits behind a training run without --preempt, not with it;
    the big upscales that run out of memory on the 5060 Ti fail with on_oom = fail, finish elsewhere."""
    import placement_teeth as teeth

    day = day_bench.make_day(seed=2, hours=2.0, mean_gap_s=120.0, diffusion_at_s=99_999.0)
    quiet = day_bench.Day(day.jobs, ())
    without = teeth.simulate_teeth(quiet, preempt=False, on_oom="fail")
    with_preempt = teeth.simulate_teeth(quiet, preempt=True, on_oom="fail")
    assert without.urgent_waits and min(without.urgent_waits) > 60.0  # behind the training run
    assert max(with_preempt.urgent_waits) <= teeth.TICK_S and with_preempt.paused_s
    moved = teeth.simulate_teeth(quiet, preempt=False, on_oom="elsewhere")  # the 5060 Ti free: tried there
    failed = teeth.simulate_teeth(quiet, preempt=False, on_oom="fail")
    assert moved.big_failed == 0 and moved.big_finished == failed.big_finished + failed.big_failed > 0
    assert failed.big_failed > 0


def test_a_short_cold_day_moves_the_diffusion_job_off_the_igpu_once_its_progress_shows_it_late() -> None:
    """No history: the never-run diffusion job goes to the idle 780M (the 5060 Ti busy); without its
    progress it stays there for hours, with it ``late_move`` runs it again on the 5060 Ti."""
    day = day_bench.make_day(seed=2, hours=2.0, mean_gap_s=120.0, diffusion_at_s=5400.0)
    diffusion = next(j.id for j in day.jobs if j.family == "diffusion")
    blind = day_bench.simulate(day, "fastest", yesterday=False)
    cold = day_bench.simulate(day, "fastest", yesterday=False, progress=True)
    oracle = day_bench.figures(day, day_bench.simulate(day, "oracle"))
    assert blind.starts[diffusion][1] == day_bench.AMD and cold.starts[diffusion][1] == day_bench.NV
    assert any(
        m.startswith(f"diffusion-{diffusion}: moved to GeForce RTX 5060 Ti: on Radeon 780M")
        for m in cold.moves
    )
    assert day_bench.figures(day, blind).mean_completion_s > 1.3 * oracle.mean_completion_s
    assert day_bench.figures(day, cold).mean_completion_s <= 1.3 * oracle.mean_completion_s
