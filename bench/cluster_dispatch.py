"""Cluster figures, from one run on a real Ray cluster on this machine (tests/cluster_harness.py):
two "machines" (desk: its 5060 Ti held by an llama-server; laptop: an idle 780M), each with its own
``gputray daemon --demo`` and bridge; a Ray head with the dashboard on, for the anchor.

* remote dispatch latency: a trivial command submitted on desk (the ``run`` request the CLI sends,
  without the CLI's own start-up) → the command's first line running on laptop (it prints
  ``time.time()``), p50 / p99 over N sequential jobs. Beside it the anchor a Ray user would use
  instead: the same command with ``ray job submit`` (the Jobs API, the CLI and the Python client)
  on the same cluster, measured the same way. Goal: p50 ≤ 500 ms.
* throughput: 100 small remote jobs submitted at once on desk, until all have ended there (results
  and logs back).
* RAM: RSS of desk's bridge process and of its agent (a Ray worker), beside the owner's.

Prints; asserts nothing. ``python bench/cluster_dispatch.py [--samples N]``. The anchor needs
``pip install 'ray[default]==2.60.0'`` (the dashboard's job server); without it it is skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from cluster_harness import PY, SCENARIO_DESK, SCENARIO_LAPTOP, RayCluster, machines_on  # noqa: E402

from gputray.scheduler import protocol as rq  # noqa: E402

STAMP = "import time; print('T=%r' % time.time(), flush=True)"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def stamp_of(text: str) -> float | None:
    for line in text.splitlines():
        if line.startswith("T="):
            return float(line[2:])
    return None


def wait(predicate: object, timeout_s: float = 60.0) -> object:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()  # type: ignore[operator]
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError("timed out")
        time.sleep(0.01)


def gputray_latency(desk: object, samples: int) -> list[float]:
    out = []
    for _ in range(samples):
        t0 = time.time()
        got = desk.ask(  # type: ignore[attr-defined]
            "run",
            argv=[PY, "-S", "-c", STAMP],
            cwd=str(desk.work),  # type: ignore[attr-defined]
            overrides={"machine": "laptop", "device_prefs": ["780m"]},
        )
        task_id = int(got.tasks[0].id)
        wait(lambda tid=task_id: desk.task(tid).state in ("succeeded", "failed"))  # type: ignore[attr-defined]
        stamp = stamp_of(desk.ask(rq.Logs(id=task_id)).text)  # type: ignore[attr-defined]
        if stamp is not None:
            out.append(stamp - t0)
    return out


def ray_job_latency(address: str, samples: int, *, cli: bool) -> list[float] | str:
    try:
        from ray.job_submission import JobStatus, JobSubmissionClient
    except ImportError:
        return "skipped: ray[default] (the dashboard's job server) is not installed"
    client = JobSubmissionClient(address)
    out = []
    for _ in range(samples):
        t0 = time.time()
        if cli:
            done = subprocess.run(
                [str(Path(PY).with_name("ray")), "job", "submit", "--address", address, "--no-wait", "--",
                 PY, "-S", "-c", STAMP],
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            job_id = next(
                (
                    w.strip("'\"")
                    for line in done.stdout.splitlines()
                    for w in line.split()
                    if w.startswith("'raysubmit_")
                ),
                None,
            )
            if job_id is None:
                return f"ray job submit failed: {done.stdout[-300:]} {done.stderr[-300:]}"
        else:
            job_id = client.submit_job(entrypoint=f'{PY} -S -c "{STAMP}"')
        wait(lambda j=job_id: client.get_job_status(j) in (JobStatus.SUCCEEDED, JobStatus.FAILED), 120)
        stamp = stamp_of(client.get_job_logs(job_id))
        if stamp is not None:
            out.append(stamp - t0)
    return out


def throughput(desk: object, count: int) -> tuple[float, int]:
    t0 = time.monotonic()
    ids = []
    for _ in range(count):
        got = desk.ask(  # type: ignore[attr-defined]
            "run", argv=[PY, "-S", "-c", "pass"], cwd=str(desk.work),  # type: ignore[attr-defined]
            overrides={"machine": "laptop", "device_prefs": ["780m"]},
        )  # fmt: skip
        ids.append(int(got.tasks[0].id))

    def all_done() -> bool:
        tasks = {t.id: t for t in desk.ask(rq.Queue(all=True)).tasks}  # type: ignore[attr-defined]
        return all(tasks[i].state in ("succeeded", "failed", "cancelled") for i in ids)

    wait(all_done, 600)
    elapsed = time.monotonic() - t0
    tasks = {t.id: t for t in desk.ask(rq.Queue(all=True)).tasks}  # type: ignore[attr-defined]
    return elapsed, sum(1 for i in ids if tasks[i].state == "succeeded")


def rss_mib(pid: int | None) -> float | None:
    if pid is None:
        return None
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).memory_info().rss / 2**20
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=100)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="gputray-bench-cluster-"))
    import ray._private.utils

    # `import ray.dashboard` works with plain `ray` too; Ray's own check says whether the job server's
    # packages (ray[default]) are there.
    dashboard = ray._private.utils.get_dashboard_dependency_error() is None
    cluster = RayCluster(root, ["desk", "laptop"], dashboard=dashboard)
    try:
        with machines_on(cluster, root, desk=SCENARIO_DESK, laptop=SCENARIO_LAPTOP) as m:
            desk, laptop = m["desk"], m["laptop"]
            wait(lambda: desk.sees("laptop") and laptop.sees("desk"), 90)
            gputray_latency(desk, 3)  # warm: the laptop's first job, Python's caches
            ours = gputray_latency(desk, args.samples)
            anchors: dict[str, list[float] | str] = {}
            if dashboard:
                url = f"http://127.0.0.1:{cluster.dashboard_port}"
                ray_job_latency(url, 2, cli=False)  # warm
                anchors["ray job submit (Python JobSubmissionClient)"] = ray_job_latency(
                    url, args.samples, cli=False
                )
                anchors["ray job submit (CLI, incl. its start-up)"] = ray_job_latency(
                    url, max(5, args.samples // 4), cli=True
                )
            else:
                anchors["ray job submit"] = (
                    "skipped: ray[default] (the dashboard's job server) is not installed"
                )
            elapsed, ok = throughput(desk, args.jobs)
            doc = desk.cluster()
            bridge_pid = doc["bridge"]["pid"]
            owner_pid = desk.proc.pid if desk.proc else None
            result = {
                "samples": len(ours),
                "gputray_p50_ms": round(statistics.median(ours) * 1000, 1),
                "gputray_p99_ms": round(percentile(ours, 99) * 1000, 1),
                "anchors": {
                    k: v if isinstance(v, str) else {
                        "samples": len(v),
                        "p50_ms": round(statistics.median(v) * 1000, 1),
                        "p99_ms": round(percentile(v, 99) * 1000, 1),
                    }
                    for k, v in anchors.items()
                },
                "throughput_jobs": args.jobs,
                "throughput_succeeded": ok,
                "throughput_s": round(elapsed, 2),
                "throughput_jobs_per_s": round(args.jobs / elapsed, 1),
                "bridge_rss_mib": rss_mib(bridge_pid),
                "agent_rss_mib": rss_mib(doc["report"].get("agent_pid")),
                "owner_rss_mib": rss_mib(owner_pid),
            }  # fmt: skip
            print(json.dumps(result, indent=2))
            print(
                f"remote dispatch (submit on desk → running on laptop), {len(ours)} jobs: "
                f"p50 {result['gputray_p50_ms']} ms, p99 {result['gputray_p99_ms']} ms (goal p50 ≤ 500 ms)"
            )
            for k, v in result["anchors"].items():
                print(f"  anchor {k}: {v}")
            rate = result["throughput_jobs_per_s"]
            print(f"{args.jobs} small remote jobs: {elapsed:.1f} s = {rate} jobs/s ({ok} ok)")
            bridge, agent, owner = (result[k] for k in ("bridge_rss_mib", "agent_rss_mib", "owner_rss_mib"))
            print(f"RSS: bridge {bridge:.0f} MiB, its agent {agent:.0f} MiB, owner {owner:.0f} MiB")
    finally:
        cluster.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
