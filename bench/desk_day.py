"""A simulated day on the 5060 Ti + 780M desk, with and without making room (issue 27).

The day (seed 1, 08:00-23:00, a fake clock; nothing sleeps): an LLM server (llama-server) keeps
10 GiB loaded on the GeForce RTX 5060 Ti all day and answers a few chats (bursts of 1-4 min, about
one an hour); ComfyUI loads 6 GiB there for two sessions (10:00 and 14:00, prompts for 40 min) and
keeps it loaded afterwards; a game takes the 5060 Ti from 19:00 to 21:00. The torch jobs of the
placement bench arrive all day (Poisson, mean gap 20 min), each needing 5-8 GiB (``--vram``), 10 min on
the 5060 Ti and 40 min on the Radeon 780M (±15 %), ``devices = ["5060ti", "780m"]``, ``on_busy =
"redirect"``: without making room a job the 5060 Ti has no memory for goes to the slower 780M (or waits
for it while the 780M is busy).

Each decision is the real code: ``placement.busy_reason`` on ``DeviceState``s built from the day's
memory, ``make_room.choose`` over ``ResidentView``s (``[[resident]] free_when_idle = "always"``,
``idle_after = "10min"``) and ``exclusive_apps.apps_on_devices`` for the game (``[exclusive] apps =
["cs2"]``). A freed resident loads its model again at its next request (if the memory is there).
"without" is gputray before this issue: residents are external memory, the game is external load.

Figures: mean completion (end - arrival), jobs sent to the slower 780M, and jobs run on the 5060 Ti
while the game was up. Goals: making room >= 30 % better mean completion; 0 jobs while the game is up.
Run: ``python bench/desk_day.py [--seed N]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
from dataclasses import dataclass, field

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.monitor.records import DeviceReading, HostSample, ProcessUse, Sample, Snapshot
from gputray.monitor.residents import ResidentView
from gputray.monitor.units import GIB
from gputray.scheduler.queue.exclusive_apps import apps_on_devices
from gputray.scheduler.queue.make_room import choose
from gputray.scheduler.queue.placement import DeviceState, busy_reason
from gputray.scheduler.resident_config import ResidentsConfig, parse_residents
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec

NV, AMD = RTX_5060_TI.key, RADEON_780M.key
DAY_START = 1_764_576_000.0  # 2025-12-01 08:00 UTC
DAY_S = 15 * 3600.0
STEP_S = 30.0  # a look every 30 s (the monitor's tick, the timers' looks, a dispatch pass)
RUN_S = {NV: 600.0, AMD: 2400.0}
NV_TOTAL, NV_BASE = 16311 * 2**20, 412 * 2**20
GAME = (11 * 3600.0, 13 * 3600.0)  # 19:00-21:00


@dataclass
class Resident:
    name: str
    loaded_bytes: int
    busy: list[tuple[float, float]]  # its serving spells
    present: tuple[float, float] = (0.0, DAY_S)  # when it runs
    held: int = 0  # what it holds now
    idle_since: float = 0.0

    def serving(self, t: float) -> bool:
        return any(a <= t < b for a, b in self.busy)


@dataclass
class Job:
    id: int
    arrival_s: float
    need: int
    factor: float
    device: str | None = None
    start_s: float | None = None
    end_s: float | None = None


@dataclass
class Result:
    completion_s: list[float] = field(default_factory=list)
    on_slow: int = 0
    during_game: set[int] = field(default_factory=set)  # jobs that ran on the 5060 Ti while the game did
    freed: int = 0


def make_day(seed: int) -> tuple[list[Resident], list[Job]]:
    rnd = random.Random(seed)
    chats = []
    t = rnd.uniform(600, 3600)
    while t < DAY_S:
        chats.append((t, t + rnd.uniform(60, 240)))
        t += rnd.expovariate(1 / 3600)
    comfy = [(s + k * 300.0, s + k * 300.0 + 120.0) for s in (2 * 3600.0, 6 * 3600.0) for k in range(8)]
    residents = [
        Resident("llama-server", 10 * GIB, chats),
        Resident("ComfyUI", 6 * GIB, comfy, present=(2 * 3600.0, DAY_S)),
    ]
    jobs, t, n = [], 0.0, 0
    while True:
        t += rnd.expovariate(1 / 1200)
        if t >= DAY_S - 3600:
            break
        n += 1
        jobs.append(Job(n, t, rnd.randint(5, 8) * GIB, rnd.uniform(0.85, 1.15)))
    return residents, jobs


def _record(job: Job) -> TaskRecord:
    spec = TaskSpec(
        kind="command", name=f"train-{job.id}", argv=("x",), device_prefs=("5060ti", "780m"),
        on_busy="redirect", vram_bytes=job.need,
    )  # fmt: skip
    at = DAY_START + job.arrival_s
    return TaskRecord(job.id, spec, "waiting", submitted_at=at, queued_at=at, position=job.id)


def simulate(residents: list[Resident], jobs: list[Job], make_room: bool) -> Result:
    config = _config()
    result = Result()
    running: list[Job] = []
    waiting: list[Job] = []
    pending = sorted(jobs, key=lambda j: j.arrival_s)
    for r in residents:
        r.held, r.idle_since = 0, 0.0
    t = 0.0
    while t < DAY_S + 24 * 3600 and (pending or waiting or running):
        now = DAY_START + t
        for job in [j for j in running if j.end_s is not None and j.end_s <= t]:
            running.remove(job)
            result.completion_s.append(job.end_s - job.arrival_s)  # type: ignore[operator]
        while pending and pending[0].arrival_s <= t:
            waiting.append(pending.pop(0))
        game_up = GAME[0] <= t < GAME[1]
        ours_nv = sum(j.need for j in running if j.device == NV)
        for r in residents:  # a resident present loads its model at its first request (if it fits)
            present = r.present[0] <= t < r.present[1]
            if not present:
                r.held = 0
                continue
            if r.serving(t):
                r.idle_since = t
                if r.held == 0 and _nv_used(residents, ours_nv, game_up) + r.loaded_bytes <= NV_TOTAL:
                    r.held = r.loaded_bytes
            elif r.held == 0 and t == r.present[0]:
                r.held = r.loaded_bytes
        snapshot = _snapshot(now, residents, game_up)
        taken = apps_on_devices(snapshot, config.exclusive.apps, frozenset()) if make_room else {}
        for job in running:
            if job.device in taken:  # exclusive_apps: paused while the game runs, on after it
                job.end_s = (job.end_s or t) + STEP_S
            elif job.device == NV and game_up:
                result.during_game.add(job.id)  # before: it shares the GPU with the game
        for job in list(waiting):
            devices = _devices(snapshot, residents, running, taken)
            task = _record(job)
            if make_room:
                views = [_view(r, now) for r in residents if r.held]
                plan = choose(task, devices, views, config, now)
                if plan is not None:
                    r = next(r for r in residents if r.name == plan.resident.name)
                    r.held = 0  # its own API: the memory comes back (make_room checks the device)
                    result.freed += 1
                    snapshot = _snapshot(now, residents, game_up)
                    devices = _devices(snapshot, residents, running, taken)
            free = [d for d in devices if busy_reason(task, d) is None]
            if not free:
                continue
            device = free[0].key  # the first of its devices with room (5060 Ti first)
            job.device, job.start_s = device, t
            job.end_s = t + RUN_S[device] * job.factor
            waiting.remove(job)
            running.append(job)
            result.on_slow += device == AMD
        t += STEP_S
    return result


def _config() -> ResidentsConfig:
    entries = [
        {"name": n, "free_when_idle": "always", "idle_after": "10min"} for n in ("llama-server", "ComfyUI")
    ]
    config, problems = parse_residents(entries, {"apps": ["cs2"], "settle": "30s"}, "desk_day")
    assert not problems, problems
    return config


def _nv_used(residents: list[Resident], ours: int, game_up: bool) -> int:
    return NV_BASE + sum(r.held for r in residents) + ours + (4 * GIB if game_up else 0)


def _snapshot(now: float, residents: list[Resident], game_up: bool) -> Snapshot:
    processes = [
        ProcessUse(1000 + i, r.name, NV, "compute", r.held) for i, r in enumerate(residents) if r.held
    ]
    if game_up:
        processes.append(ProcessUse(4242, "cs2", NV, "graphics", 4 * GIB, util_percent=95.0))
    used = NV_BASE + sum(p.vram_bytes or 0 for p in processes)
    nv = Sample(
        NV, now, vram_used_bytes=used, vram_total_bytes=NV_TOTAL, util_percent=95.0 if game_up else 2.0
    )
    amd = Sample(AMD, now, vram_used_bytes=1 * GIB, vram_total_bytes=4 * GIB, shared_used_bytes=4 * GIB,
                 shared_total_bytes=29 * GIB)  # fmt: skip
    readings = (DeviceReading(RTX_5060_TI, nv), DeviceReading(RADEON_780M, amd))
    return Snapshot(now, readings, HostSample(None, None, None), tuple(processes))


def _devices(
    snapshot: Snapshot, residents: list[Resident], running: list[Job], taken: dict[str, str]
) -> list[DeviceState]:
    out = []
    for reading in snapshot.readings:
        key = reading.info.key
        mine = [j for j in running if j.device == key]
        out.append(
            DeviceState(
                reading.info, reading.sample, running=len(mine), paused=key in taken,
                running_names=tuple(f"train-{j.id}" for j in mine),
                extra_used_bytes=sum(j.need for j in mine),
            )
        )  # fmt: skip
    return out


def _view(r: Resident, now: float) -> ResidentView:
    busy = r.serving(now - DAY_START)
    return ResidentView(
        name=r.name, pid=0, port=None, device=NV, held_bytes=r.held, models=(), busy=busy,
        idle_since_s=None if busy else DAY_START + r.idle_since, answered=True, can_free=True,
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    residents, jobs = make_day(args.seed)
    before = simulate(residents, [Job(j.id, j.arrival_s, j.need, j.factor) for j in jobs], make_room=False)
    after = simulate(residents, [Job(j.id, j.arrival_s, j.need, j.factor) for j in jobs], make_room=True)
    mean_before = statistics.fmean(before.completion_s) / 60
    mean_after = statistics.fmean(after.completion_s) / 60
    better = 1 - mean_after / mean_before
    print(
        f"desk_day (seed {args.seed}): {len(jobs)} jobs, an LLM server and ComfyUI resident, "
        "a game 19:00-21:00"
    )
    for label, r, mean in (("without making room", before, mean_before), ("making room", after, mean_after)):
        print(
            f"  {label:20}: mean completion {mean:5.1f} min, {r.on_slow:2d} sent to the 780M, "
            f"{len(r.during_game)} ran on the 5060 Ti while the game was up, residents freed {r.freed}"
        )
    ok = better >= 0.30 and not after.during_game
    print(
        f"  making room: mean completion {better:.0%} better (goal >= 30 %), "
        f"{len(after.during_game)} jobs while the game was up (goal 0): {'met' if ok else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
