"""Schedule quality: the real placement code (``placement.plan``) on a virtual clock over a workload trace.

The trace: an external LLM session (llama-server, 14 GiB, ~95 %) holds the GeForce RTX 5060 Ti for
the first 30 minutes while a stream of jobs arrives over an hour: Stable-Diffusion-like torch
inference and Vulkan upscales (may run on either GPU, ~2.5-3x slower on the Radeon 780M; policy
``redirect``) and torch fine-tunes (5060 Ti only, 12 GiB; policy ``wait``). Each job's run time
depends on the device. The same trace is scheduled four ways:

* FIFO on the 5060 Ti alone: what users do now (one GPU, one job at a time, after the LLM is gone);
* greedy first-free (task-spooler style): one FIFO line, the head job takes the first free device
  it may use, whatever its speed there; nothing behind it may pass;
* gputray: ``placement.plan`` on every event (arrival, job end, LLM end), as the queue service does;
* a lower bound on the makespan (release times + a fractional two-machine relaxation).

Figures: makespan and mean wait (start - arrival). Goals (issue 5): gputray <= 1.10x the lower
bound, and >= 1.3x better than FIFO on one GPU. Run: ``python bench/schedule_quality.py [--seed N]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import heapq
import random
from collections.abc import Sequence
from dataclasses import dataclass

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.monitor.records import Sample, Verdict
from gputray.scheduler.queue.placement import DeviceState, GiveUp, Placement, plan
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec

GIB = 1024**3
NV, AMD = RTX_5060_TI.key, RADEON_780M.key
LLM_END_S = 1800.0
LLM_VRAM = 14 * GIB


@dataclass(frozen=True)
class Kind:
    name: str
    share: float
    runtime_s: dict[str, float]  # per device key; absent = cannot run there
    vram_bytes: int
    prefs: tuple[str, ...]
    on_busy: str


KINDS = (
    Kind("sd-inference", 0.55, {NV: 45, AMD: 120}, 3 * GIB, ("5060ti", "780m"), "redirect"),
    Kind("upscale", 0.35, {NV: 20, AMD: 60}, 1 * GIB, ("5060ti", "780m"), "redirect"),
    Kind("finetune", 0.1, {NV: 420}, 12 * GIB, ("5060ti",), "wait"),
)


@dataclass(frozen=True)
class Job:
    id: int
    kind: Kind
    arrival_s: float


def trace(seed: int, jobs: int = 48, mean_gap_s: float = 75.0) -> list[Job]:
    rng = random.Random(seed)
    t = 0.0
    out = []
    for i in range(1, jobs + 1):
        t += rng.expovariate(1 / mean_gap_s)
        kind = rng.choices(KINDS, weights=[k.share for k in KINDS])[0]
        out.append(Job(i, kind, round(t, 1)))
    return out


@dataclass
class Result:
    makespan_s: float
    mean_wait_s: float
    placed: dict[str, int]


def _result(starts: dict[int, tuple[float, float, str]], jobs: Sequence[Job]) -> Result:
    waits = [starts[j.id][0] - j.arrival_s for j in jobs]
    placed: dict[str, int] = {}
    for _, _, dev in starts.values():
        placed[dev] = placed.get(dev, 0) + 1
    return Result(max(end for _, end, _ in starts.values()), sum(waits) / len(waits), placed)


def fifo_one_gpu(jobs: Sequence[Job]) -> Result:
    t = 0.0
    starts = {}
    for j in jobs:
        start = max(t, j.arrival_s, LLM_END_S)
        t = start + j.kind.runtime_s[NV]
        starts[j.id] = (start, t, NV)
    return _result(starts, jobs)


def greedy_first_free(jobs: Sequence[Job]) -> Result:
    free_at = {NV: LLM_END_S, AMD: 0.0}  # external-aware: nothing lands on the 5060 Ti under the LLM
    t = 0.0
    starts = {}
    for j in jobs:  # strict FIFO: the head blocks everything behind it
        t = max(t, j.arrival_s)
        allowed = [d for d in (NV, AMD) if d in j.kind.runtime_s]
        dev = min(allowed, key=lambda d: (max(free_at[d], t), allowed.index(d)))
        start = max(free_at[dev], t)
        free_at[dev] = start + j.kind.runtime_s[dev]
        starts[j.id] = (start, free_at[dev], dev)
        t = start
    return _result(starts, jobs)


def _states(now: float, running: dict[str, tuple[int, str, int]]) -> list[DeviceState]:
    out = []
    for info in (RTX_5060_TI, RADEON_780M):
        llm = info.key == NV and now < LLM_END_S
        job = running.get(info.key)
        used = (LLM_VRAM if llm else GIB // 2) + (job[2] if job else 0)
        sample = Sample(
            info.key,
            now,
            util_percent=95 if llm else 2,
            temp_c=60,
            vram_used_bytes=used,
            vram_total_bytes=info.vram_total_bytes,
            shared_used_bytes=GIB if info.key == AMD else None,
            shared_total_bytes=info.shared_total_bytes,
        )
        verdict = Verdict(info.key, llm, ("llama-server uses 14.0 GiB, 95 %",) if llm else ())
        out.append(
            DeviceState(
                info,
                sample,
                verdict,
                running=1 if job else 0,
                running_names=(job[1],) if job else (),
                host_ram_free_bytes=20 * GIB,
                host_ram_total_bytes=32 * GIB,
            )
        )
    return out


def gputray(jobs: Sequence[Job]) -> tuple[Result, list[str]]:
    records = {
        j.id: TaskRecord(
            j.id,
            TaskSpec(
                kind="command",
                name=j.kind.name,
                argv=("x",),
                device_prefs=j.kind.prefs,
                on_busy=j.kind.on_busy,
                vram_bytes=j.kind.vram_bytes,
            ),  # type: ignore[arg-type]
            "queued",
            submitted_at=j.arrival_s,
            queued_at=j.arrival_s,
            position=j.id,
        )
        for j in jobs
    }
    by_id = {j.id: j for j in jobs}
    events: list[tuple[float, int, str, int]] = [(j.arrival_s, 1, "arrive", j.id) for j in jobs]
    events.append((LLM_END_S, 0, "llm-end", 0))
    heapq.heapify(events)
    pending: list[int] = []
    running: dict[str, tuple[int, str, int]] = {}
    starts: dict[int, tuple[float, float, str]] = {}
    reasons: list[str] = []
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, _, what, ident = heapq.heappop(events)
            if what == "arrive":
                pending.append(ident)
            elif what == "end":
                running = {k: v for k, v in running.items() if v[0] != ident}
        result = plan([records[i] for i in pending], _states(now, running), now_s=now)
        for rec, decision in result.decisions:
            if isinstance(decision, Placement):
                run_s = by_id[rec.id].kind.runtime_s[decision.device]
                running[decision.device] = (rec.id, f"{rec.spec.name} (#{rec.id})", rec.spec.vram_bytes or 0)
                starts[rec.id] = (now, now + run_s, decision.device)
                pending.remove(rec.id)
                heapq.heappush(events, (now + run_s, 0, "end", rec.id))
                said = render(decision.reason)
                if said and len(reasons) < 3 and all(said not in r for r in reasons):
                    reasons.append(f"t={now:.0f}s #{rec.id}: {said}")
            elif isinstance(decision, GiveUp):
                raise SystemExit(f"task #{rec.id} gave up: {render(decision.reason)}")
            elif len(reasons) < 4 and all(render(decision.reason) not in r for r in reasons):
                reasons.append(f"t={now:.0f}s #{rec.id}: {render(decision.reason)}")
        for task_id, count in result.overtakes.items():
            records[task_id] = dataclasses.replace(records[task_id], overtakes=count)
    return _result(starts, jobs), reasons


def _fluid_makespan(jobs: Sequence[Job], release_s: float) -> float:
    """Fractional two-machine makespan for jobs all released at ``release_s``."""
    nv_from = max(release_s, LLM_END_S)
    amd_from = release_s
    fixed_nv = sum(j.kind.runtime_s[NV] for j in jobs if AMD not in j.kind.runtime_s)
    flexible = sorted(
        (j for j in jobs if AMD in j.kind.runtime_s),
        key=lambda j: j.kind.runtime_s[AMD] / j.kind.runtime_s[NV],
        reverse=True,
    )
    lo, hi = release_s, release_s + 10 * sum(max(j.kind.runtime_s.values()) for j in jobs) + LLM_END_S
    for _ in range(60):
        mid = (lo + hi) / 2
        nv_cap = mid - nv_from - fixed_nv
        amd_load = 0.0
        if nv_cap < 0:
            lo = mid
            continue
        for j in flexible:  # fill the fast GPU with the jobs it speeds up most, the rest go to the 780M
            p_nv, p_amd = j.kind.runtime_s[NV], j.kind.runtime_s[AMD]
            take = min(1.0, nv_cap / p_nv) if nv_cap > 0 else 0.0
            nv_cap -= take * p_nv
            amd_load += (1 - take) * p_amd
        if amd_from + amd_load <= mid:
            hi = mid
        else:
            lo = mid
    return hi


def lower_bound(jobs: Sequence[Job]) -> float:
    bound = 0.0
    for j in jobs:  # each job after its arrival on its fastest allowed device
        earliest = min(
            max(j.arrival_s, LLM_END_S if d == NV else 0.0) + p for d, p in j.kind.runtime_s.items()
        )
        bound = max(bound, earliest)
    for cut in sorted({j.arrival_s for j in jobs}):  # the work released from each arrival on
        bound = max(bound, _fluid_makespan([j for j in jobs if j.arrival_s >= cut], cut))
    return bound


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=48)
    parser.add_argument("--gap", type=float, default=75.0, help="mean seconds between arrivals")
    parser.add_argument("--summary", type=int, default=10, metavar="N", help="also run seeds 1..N (0: off)")
    args = parser.parse_args(argv)
    jobs = trace(args.seed, args.jobs, args.gap)
    counts = {k.name: sum(1 for j in jobs if j.kind is k) for k in KINDS}
    print(
        f"trace: seed {args.seed}, {len(jobs)} jobs over {jobs[-1].arrival_s / 60:.0f} min "
        f"({', '.join(f'{n} {k}' for k, n in counts.items())}); llama-server holds the 5060 Ti "
        f"for the first {LLM_END_S / 60:.0f} min"
    )
    lb = lower_bound(jobs)
    fifo = fifo_one_gpu(jobs)
    greedy = greedy_first_free(jobs)
    ours, reasons = gputray(jobs)
    print(f"{'strategy':<28}{'makespan':>12}{'mean wait':>12}  placed")
    for name, res in (
        ("FIFO on the 5060 Ti alone", fifo),
        ("greedy first-free (tsp)", greedy),
        ("gputray placement.plan", ours),
    ):
        placed = ", ".join(f"{'5060 Ti' if k == NV else '780M'} {n}" for k, n in sorted(res.placed.items()))
        print(f"{name:<28}{res.makespan_s / 60:>9.1f} min{res.mean_wait_s / 60:>9.1f} min  {placed}")
    print(f"{'lower bound':<28}{lb / 60:>9.1f} min")
    print(f"gputray / lower bound = {ours.makespan_s / lb:.3f}  (goal <= 1.10)")
    print(
        f"FIFO-on-one-GPU / gputray = {fifo.makespan_s / ours.makespan_s:.2f}x makespan, "
        f"{fifo.mean_wait_s / max(ours.mean_wait_s, 1e-9):.1f}x mean wait  (goal >= 1.3x)"
    )
    print(
        f"greedy / gputray = {greedy.makespan_s / ours.makespan_s:.2f}x makespan, "
        f"{greedy.mean_wait_s / max(ours.mean_wait_s, 1e-9):.1f}x mean wait"
    )
    print(
        f"FIFO-on-one-GPU / lower bound = {fifo.makespan_s / lb:.2f}x (the most any schedule could gain here)"
    )
    print("sample reasons:")
    for line in reasons:
        print(f"  {line}")
    if args.summary:
        print(f"\nover seeds 1-{args.summary} (gap {args.gap:g} s):")
        print(
            f"{'seed':>4}{'ours/LB':>9}{'FIFO/ours':>11}{'FIFO/LB':>9}{'greedy/ours':>13}"
            f"{'wait FIFO/ours':>16}"
        )
        rows = []
        for seed in range(1, args.summary + 1):
            js = trace(seed, args.jobs, args.gap)
            bound, f, g, (o, _) = lower_bound(js), fifo_one_gpu(js), greedy_first_free(js), gputray(js)
            rows.append((o.makespan_s / bound, f.makespan_s / o.makespan_s, f.makespan_s / bound))
            print(
                f"{seed:>4}{rows[-1][0]:>9.3f}{rows[-1][1]:>10.2f}x{rows[-1][2]:>8.2f}x"
                f"{g.makespan_s / o.makespan_s:>12.2f}x{f.mean_wait_s / max(o.mean_wait_s, 1e-9):>15.1f}x"
            )
        worst = max(r[0] for r in rows)
        print(
            f"worst ours/LB {worst:.3f} (goal <= 1.10); FIFO/ours from {min(r[1] for r in rows):.2f}x "
            f"to {max(r[1] for r in rows):.2f}x (goal >= 1.3x; FIFO/LB caps it at "
            f"{min(r[2] for r in rows):.2f}x-{max(r[2] for r in rows):.2f}x on these traces)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
