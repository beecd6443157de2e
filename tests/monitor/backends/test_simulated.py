from __future__ import annotations

from pathlib import Path

import pytest

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI, SimulatedBackend
from gputray.monitor.scenario import Load, Scenario, ScenarioError, load_scenario

GIB = 1024**3


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def poll(backend: SimulatedBackend, clock: Clock):
    return backend.poll(clock.t)


def test_demo_pair_has_the_real_totals_and_is_labelled_simulated() -> None:
    clock = Clock()
    result = poll(SimulatedBackend(Scenario(), clock), clock)
    by_key = {r.info.key: r for r in result.readings}
    gpu, apu = by_key[RTX_5060_TI.key], by_key[RADEON_780M.key]
    assert gpu.info.name == "GeForce RTX 5060 Ti" and gpu.info.kind == "discrete"
    assert apu.info.name == "Radeon 780M" and apu.info.kind == "integrated"
    assert apu.sample.vram_total_bytes == 4294967296 and apu.sample.shared_total_bytes == 31433977856
    assert gpu.sample.shared_used_bytes is None and apu.sample.shared_used_bytes is not None
    assert all(r.info.simulated for r in result.readings)
    assert all(r.sample.util_percent is not None and r.sample.util_percent < 10 for r in result.readings)


def test_scenario_window_loads_the_gpu_and_shows_the_external_process() -> None:
    clock = Clock()
    scenario = Scenario((Load("5060ti", 10, 20, 95, vram_bytes=14 * GIB, process="llama-server", pid=4242),))
    sim = SimulatedBackend(scenario, clock)
    before = poll(sim, clock)
    clock.t += 12
    during = poll(sim, clock)
    clock.t += 20
    after = poll(sim, clock)

    def gpu(res):
        return next(r.sample for r in res.readings if r.info.key == RTX_5060_TI.key)

    assert gpu(before).util_percent < 10
    assert gpu(during).util_percent >= 95 and gpu(during).vram_used_bytes > 14 * GIB
    assert [p.name for p in during.processes] == ["llama-server"]
    assert gpu(after).util_percent < 10 and after.processes == ()
    assert gpu(during).temp_c > gpu(before).temp_c  # heats up under load


def test_jobs_started_by_the_scheduler_show_as_load_and_processes() -> None:
    clock = Clock()
    sim = SimulatedBackend(Scenario(), clock)
    sim.job_started(555, "upscale.py", "780m", util_percent=80, vram_bytes=2 * GIB)
    res = poll(sim, clock)
    apu = next(r.sample for r in res.readings if r.info.key == RADEON_780M.key)
    assert apu.util_percent >= 80
    assert apu.shared_used_bytes >= 2 * GIB  # on the APU a job's memory lands in GTT
    assert [(p.pid, p.device) for p in res.processes] == [(555, RADEON_780M.key)]
    sim.job_ended(555)
    assert poll(sim, clock).processes == ()


def test_lost_and_gone_windows() -> None:
    clock = Clock()
    scenario = Scenario((Load("5060ti", 0, 5, 0, state="lost"), Load("5060ti", 5, 10, 0, state="gone")))
    sim = SimulatedBackend(scenario, clock)
    first = {r.info.key: r.sample.state for r in poll(sim, clock).readings}
    assert first[RTX_5060_TI.key] == "lost"
    clock.t += 6
    assert RTX_5060_TI.key not in {r.info.key for r in poll(sim, clock).readings}


def test_scenario_file_and_its_errors(tmp_path: Path) -> None:
    good = tmp_path / "llm.toml"
    good.write_text(
        'loop_s = 100\n[[load]]\ndevice = "5060ti"\nstart_s = 0\nend_s = 60\nutil_percent = 95\n'
        'vram_gib = 14\nprocess = "llama-server"\n',
        encoding="utf-8",
    )
    scenario = load_scenario(good)
    assert scenario.loads[0].vram_bytes == 14 * GIB and scenario.loop_s == 100
    assert scenario.active(70) == [] and scenario.active(130)[0].process == "llama-server"

    cases = {
        "[[load]]\nstart_s = 0\n": "`device`",
        '[[load]]\ndevice = "780m"\nstart_s = 10\nend_s = 5\n': "`end_s`",
        '[[load]]\ndevice = "780m"\nutil_percent = 150\n': "at most 100",
        '[[load]]\ndevice = "780m"\ndecoder_percent = 101\n': "`decoder_percent` must be at most 100",
        '[[load]]\ndevice = "780m"\nencoder_percent = "lots"\n': "`encoder_percent` must be a number",
        '[[load]]\ndevice = "780m"\nstate = "melted"\n': "`state`",
        "[[load]\n": "bad.toml",
    }
    for text, expected in cases.items():
        bad = tmp_path / "bad.toml"
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(ScenarioError, match=expected):
            load_scenario(bad)
    with pytest.raises(ScenarioError, match="cannot read scenario"):
        load_scenario(tmp_path / "missing.toml")


def test_the_egpu_link_downclocks_at_idle_and_video_loads_show() -> None:
    """The simulated 5060 Ti is an eGPU on OCuLink: PCIe 4.0 x4 of 5.0 x8 busy, 1.0 x4 idle."""
    clock = Clock()
    scenario = Scenario(
        (Load("5060ti", 10, 200, 90, encoder_percent=40), Load("780m", 10, 200, 30, decoder_percent=22))
    )
    sim = SimulatedBackend(scenario, clock)
    idle = {r.info.key: r.sample for r in poll(sim, clock).readings}
    egpu = idle[RTX_5060_TI.key]
    assert (egpu.pcie_gen, egpu.pcie_width, egpu.pcie_max_gen, egpu.pcie_max_width) == (1, 4, 5, 8)
    assert (egpu.fan_percent, egpu.fan_rpm, egpu.power_limit_w) == (0.0, 0, 180.0)  # zero-RPM when cool
    apu = idle[RADEON_780M.key]
    assert (apu.pcie_gen, apu.fan_rpm, apu.power_limit_w, apu.decoder_percent) == (None, None, None, 0.0)
    for _ in range(60):  # a minute of load: it heats up, the fan spins
        clock.t += 1
        busy = {r.info.key: r.sample for r in poll(sim, clock).readings}
    egpu = busy[RTX_5060_TI.key]
    assert (egpu.pcie_gen, egpu.pcie_width) == (4, 4)
    assert (
        egpu.fan_percent is not None
        and egpu.fan_percent > 30
        and egpu.fan_rpm is not None
        and egpu.fan_rpm > 900
    )
    assert (egpu.encoder_percent, busy[RADEON_780M.key].decoder_percent) == (40.0, 22.0)


def test_the_simulated_gpus_count_their_power_into_an_energy_counter() -> None:
    """As NVML's total energy: each poll adds the power shown times the time since the last one."""
    clock = Clock()
    backend = SimulatedBackend(Scenario(), clock)
    first = {r.info.key: r.sample for r in poll(backend, clock).readings}
    clock.t += 2.0
    backend.job_started(4321, "train", RTX_5060_TI.key, util_percent=100.0)
    second = {r.info.key: r.sample for r in poll(backend, clock).readings}
    gpu = second[RTX_5060_TI.key]
    assert gpu.power_w is not None and gpu.power_w > 170  # under the job's full load
    grown = (gpu.energy_counter_j or 0) - (first[RTX_5060_TI.key].energy_counter_j or 0)
    assert grown == pytest.approx(gpu.power_w * 2.0, abs=0.01)
