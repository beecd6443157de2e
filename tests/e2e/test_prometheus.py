"""A real Prometheus server (Debian's `prometheus`) scrapes the demo daemon's `/metrics` on 127.0.0.1,
with the token it is configured with, and its own HTTP API then answers for a GPU series and the
queue's series: what a user's Grafana would query.

Bounded: Prometheus scrapes every second, every wait has a deadline, everything listens on 127.0.0.1.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from real_owner import paths_of, start_daemon, stop_daemon
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq

pytestmark = [
    pytest.mark.skipif(
        shutil.which("prometheus") is None, reason="needs Debian's prometheus (.ci/run installs it)"
    ),
    pytest.mark.skipif(sys.platform == "win32", reason="the daemon's Unix socket"),
]
TOKEN = "t0ken-for-the-prometheus-test"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def query(prom_port: int, promql: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            body = json.load(answer)
    except OSError:
        return []  # Prometheus still starting
    assert body["status"] == "success", body
    return list(body["data"]["result"])


@pytest.mark.slow
def test_prometheus_scrapes_the_demo_daemon_and_answers_for_gpus_and_the_queue(tmp_path: Path) -> None:
    home = tmp_path / "home"
    metrics_port, prom_port = free_port(), free_port()
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text(
        f'[metrics]\nlisten = "127.0.0.1:{metrics_port}"\ntoken = "{TOKEN}"\n', encoding="utf-8"
    )
    daemon = start_daemon(home, tmp_path / "daemon-stderr.txt")
    prom: subprocess.Popen[bytes] | None = None
    try:
        paths = paths_of(home)
        later = time.time() + 3600
        ipc.ask(paths, rq.Run(argv=["sleep", "1"], name="later", overrides={"start_at": later}))
        job = ipc.ask(paths, rq.Run(argv=["true"], name="quick", overrides={"device_prefs": ["5060"]}))
        wait_for(lambda: ipc.ask(paths, rq.WaitFor(ids=[job.tasks[0].id], timeout_s=5)).done, 60, "the job")

        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n"
            "  - job_name: gputray\n"
            f"    authorization:\n      credentials: {TOKEN}\n"
            f"    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n",
            encoding="utf-8",
        )
        with (tmp_path / "prometheus-stderr.txt").open("wb") as err:
            prom = subprocess.Popen(
                [
                    "prometheus",
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{prom_port}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=err,
                cwd=tmp_path,
            )

        def up() -> list[dict[str, Any]]:
            assert prom is not None and prom.poll() is None, (tmp_path / "prometheus-stderr.txt").read_text()
            return [r for r in query(prom_port, 'up{job="gputray"}') if r["value"][1] == "1"]

        wait_for(up, 90, "Prometheus to scrape gputray with its token")
        temps = wait_for(lambda: query(prom_port, "gputray_gpu_temperature_celsius"), 30, "a GPU series")
        assert len(temps) == 2 and all(0 < float(r["value"][1]) < 120 for r in temps), temps
        names = query(prom_port, "gputray_gpu_info")
        assert {r["metric"]["name"] for r in names} == {"GeForce RTX 5060 Ti", "Radeon 780M"}
        vram = query(prom_port, 'gputray_gpu_memory_used_bytes{kind="shared"}')
        assert len(vram) == 1 and float(vram[0]["value"][1]) > 0  # only the iGPU has shared memory
        waiting = query(prom_port, 'gputray_queue_tasks{state="waiting"}')
        assert [float(r["value"][1]) for r in waiting] == [1.0]
        succeeded = query(prom_port, 'gputray_jobs_ended_total{state="succeeded"}')
        assert len(succeeded) == 1 and succeeded[0]["metric"]["device"] == "pci:0000:01:00.0", succeeded
        assert query(prom_port, "gputray_job_duration_seconds_count")[0]["value"][1] == "1"
    finally:
        if prom is not None:
            prom.terminate()
            try:
                prom.wait(timeout=30)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait()
        stop_daemon(daemon)


DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "gputray-dashboard.json"


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool (Debian's prometheus)")
def test_the_grafana_dashboard_queries_are_valid_promql_on_series_gputray_serves(tmp_path: Path) -> None:
    """Every query of docs/grafana's dashboard parses (promtool, as recording rules) and names only series
    the exporter declares (its # TYPE lines)."""
    import re

    from gputray.scheduler.metrics.exporter import build_exposition

    class NoQueue:
        def counts(self) -> dict[str, int]:
            return {}

        def waiting_by_device(self) -> dict[str, int]:
            return {}

    declared = set(
        re.findall(r"^# TYPE (\w+) ", build_exposition(lambda: None, NoQueue()).text().decode(), re.M)
    )
    panels = json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
    exprs = [t["expr"].replace("$instance", ".*") for p in panels for t in p["targets"]]
    assert len(exprs) >= 9
    for expr in exprs:
        for name in re.findall(r"\bgputray_\w+", expr):
            base = re.sub(r"_(bucket|sum|count|total)$", "", name)
            assert name in declared or base in declared, f"{name} is not a series gputray serves"
    rules = tmp_path / "rules.yml"
    rules.write_text(
        "groups:\n  - name: dashboard\n    rules:\n"
        + "".join(
            f"      - record: gputray:panel{i}\n        expr: {json.dumps(e)}\n" for i, e in enumerate(exprs)
        ),
        encoding="utf-8",
    )
    checked = subprocess.run(
        ["promtool", "check", "rules", str(rules)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
