"""The owner's side of the cluster (no Ray): which tasks the local queue leaves alone, submit-time
checks, and what the bridge may write."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import task_steps as steps
import tomli_w

from gputray.cluster.config import ClusterConfigError, load_cluster_config, write_cluster_table
from gputray.cluster.link import ClusterLink
from gputray.scheduler.cluster_records import ClusterReport, DeviceView, ReportedMachine
from gputray.scheduler.paths import Paths
from gputray.scheduler.protocol import BadRequest, Request, request_from
from gputray.scheduler.queue.cluster_side import ClusterSide
from gputray.scheduler.queue.saved_queue import read_saved_tasks
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.render import render
from gputray.scheduler.replies import Paused
from gputray.scheduler.tasks import cluster_steps as remote
from gputray.scheduler.tasks.recipes import SubmitError
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec


def _paths(tmp_path: Path) -> Paths:
    return Paths(tmp_path / "config", tmp_path / "data", tmp_path / "state", tmp_path / "run")


def _link(tmp_path: Path, cluster: dict[str, object] | None) -> tuple[ClusterLink, TaskStore]:
    paths = _paths(tmp_path)
    paths.config_dir.mkdir(parents=True, exist_ok=True)
    if cluster is not None:
        paths.config_file.write_text(tomli_w.dumps({"cluster": cluster}))
    store = TaskStore(paths.queue_db)
    link = ClusterLink(paths)
    link.attach(ClusterSide(FakeQueue(store)))  # the queue's real side, over a stand-in for the service
    return link, store


def spec(**fields: object) -> TaskSpec:
    values: dict[str, object] = {"kind": "command", "name": "job", "argv": ("python3", "-c", "1")}
    values.update(fields)
    return TaskSpec(**values)  # type: ignore[arg-type]


class FakeEdits:
    def task_changed_elsewhere(self) -> None:
        pass


class FakeQueue:
    """Stands in for the QueueService under the queue's real ``ClusterSide``: its store is real; it
    submits, asks for a pass and tells the queue's waiters that a row changed."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self.passes = 0
        self.edits = FakeEdits()
        self.paused_now = Paused()
        self.lock = threading.RLock()

    def paused(self) -> Paused:
        return self.paused_now

    def submit(self, s: TaskSpec) -> TaskRecord:
        return self.store.add(s)

    def request_dispatch(self, *, urgent: bool = False) -> None:
        self.passes += 1

    def devices_for_checks(self) -> None:
        return None  # no reading yet: nothing to check devices against


def test_without_a_cluster_any_machine_is_this_one_and_another_is_refused(tmp_path: Path) -> None:
    link, store = _link(tmp_path, None)
    rec = store.add(spec(machine="any"))
    assert link.runs_here(rec)
    link.check_spec(spec(machine="any"))
    with pytest.raises(SubmitError, match=r"in no cluster.*gputray cluster join"):
        link.check_spec(spec(machine="laptop"))


def test_in_a_cluster_the_bridge_places_any_while_it_talks_to_us(tmp_path: Path) -> None:
    link, store = _link(tmp_path, {"address": "127.0.0.1:6379", "machine": "desk"})
    anywhere = store.add(spec(machine="any"))
    other = store.add(spec(machine="laptop"))
    mine = store.add(spec(machine="desk"))
    plain = store.add(spec())
    assert link.runs_here(anywhere)  # no bridge has synced: "any" is what we can see, this machine
    link.sync(request("cluster_sync", bridge_key=link.bridge_key))
    assert not link.runs_here(anywhere) and not link.runs_here(other)
    assert link.runs_here(mine) and link.runs_here(plain)
    placed_here = store.must_apply(anywhere.id, remote.PlaceHere(machine="desk"))
    assert link.runs_here(placed_here)
    handed = steps.run_there(store, other.id, "laptop", 7)
    assert not link.runs_here(handed)
    ids = {t.id for t in link.sync(request("cluster_sync", bridge_key=link.bridge_key)).tasks}
    # placed here but not started: the bridge keeps an eye on it (to place it again if it cannot start)
    assert ids == {anywhere.id, other.id}  # plain tasks are never the bridge's
    steps.start(store, anywhere.id)
    ids = {t.id for t in link.sync(request("cluster_sync", bridge_key=link.bridge_key)).tasks}
    assert ids == {other.id}  # started here: the local queue has it


def test_a_task_for_another_machine_need_not_find_its_program_here(tmp_path: Path) -> None:
    link, _ = _link(tmp_path, {"address": "127.0.0.1:6379", "machine": "desk"})
    link.check_spec(spec(machine="laptop", argv=("only-on-the-laptop", "x")))
    with pytest.raises(SubmitError, match="input file"):
        link.check_spec(spec(machine="laptop", files=(str(tmp_path / "missing.png"),)))


def test_a_lost_machine_requeues_while_retries_remain_then_fails_with_the_reason(tmp_path: Path) -> None:
    link, store = _link(tmp_path, {"address": "127.0.0.1:6379", "machine": "desk"})
    rec = store.add(spec(machine="any", retries=1, backoff_s=0.0))
    left = {"code": "LeftCluster", "machine": "laptop", "while_running": True}  # a reason, as JSON carries it
    lost = {"step": "lost_there", "why": left, "now": time.time()}
    steps.run_there(store, rec.id, "laptop", 3)
    got = link.update(request("cluster_update", id=rec.id, step=lost, bridge_key=link.bridge_key)).task
    assert got is not None
    assert got.state == "queued" and got.machine is None and got.remote_id is None
    assert "laptop left the cluster while it ran" in render(got.reason)
    steps.run_there(store, rec.id, "laptop", 4)
    got = link.update(request("cluster_update", id=rec.id, step=lost, bridge_key=link.bridge_key)).task
    assert got is not None
    assert got.state == "failed" and got.machine == "laptop" and got.remote_state == "lost"
    assert render(got.reason).startswith("laptop left the cluster while it ran")


def test_an_update_that_lost_a_race_with_a_cancel_changes_nothing(tmp_path: Path) -> None:
    link, store = _link(tmp_path, {"address": "127.0.0.1:6379", "machine": "desk"})
    rec = store.add(spec(machine="any"))
    steps.cancel(store, rec.id)
    place = {"step": "place_here", "machine": "laptop"}
    got = link.update(
        request("cluster_update", id=rec.id, expect_state="queued", step=place, bridge_key=link.bridge_key)
    )
    assert got.task is None and got.now is not None
    assert got.now.state == "cancelled" and got.now.machine is None
    with pytest.raises(BadRequest, match="unknown field `spec`"):  # refused before the link sees it
        request("cluster_update", id=rec.id, step={**place, "spec": {}})
    with pytest.raises(BadRequest, match="step"):  # a bag of fields is no step
        request("cluster_update", id=rec.id, step={"state": "succeeded"})


def test_a_task_sent_twice_is_queued_once(tmp_path: Path) -> None:
    link, store = _link(tmp_path, {"address": "127.0.0.1:6379", "machine": "laptop"})
    wire = spec(base_env={"SECRET": "x"}, env={"GREETING": "hi"}, after=(2, 3), after_any=True).to_dict()
    first = link.submit(request("cluster_submit", origin="desk#4.1", spec=wire))
    again = link.submit(request("cluster_submit", origin="desk#4.1", spec=wire))
    assert first.task is not None and again.task is not None and again.existing
    assert first.task.id == again.task.id
    (rec,) = store.list()
    assert rec.spec.origin == "desk#4.1" and rec.spec.base_env is None  # the sender's env stays there
    assert rec.spec.env == {"GREETING": "hi"}  # the task's own variables come with it
    # its dependencies name the sender's tasks and were met there before it was sent: none here
    assert rec.spec.after == () and not rec.spec.after_any


def test_join_writes_the_cluster_table_and_leave_removes_it_keeping_the_rest(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("# 私の設定\n[thresholds]\nbusy_util_percent = 50.0\n", encoding="utf-8")
    write_cluster_table(config, {"address": "10.0.0.5:6379", "machine": "desk"})
    assert (
        config.with_name("config.toml.bak").read_text("utf-8").startswith("# 私の設定\n")
    )  # the comment kept
    cfg = load_cluster_config(config)
    assert cfg.address == "10.0.0.5:6379" and cfg.machine == "desk" and not cfg.insecure
    assert cfg.max_transfer_bytes == 2 << 30
    write_cluster_table(config, None)
    assert "cluster" not in config.read_text() and "busy_util_percent = 50.0" in config.read_text()


def test_bad_cluster_values_are_refused_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    for table, match in (
        ({"machine": "no spaces"}, "machine"),
        ({"machine": "any"}, "machine"),
        ({"lost_after": "5s", "fence_after": "10s"}, "fence_after"),
        ({"max_transfer": "lots"}, r"config\.toml: \[cluster\] max_transfer: expected a size"),
        ({"insecure": "yes"}, r'config\.toml: cluster\.insecure = "yes" is not true or false'),
        ({"shared": 5}, r"cluster\.shared = 5 is not text or a list of text"),
    ):
        config.write_text(tomli_w.dumps({"cluster": {"address": "h:1", **table}}))
        with pytest.raises(ClusterConfigError, match=match):
            load_cluster_config(config)


def request(op: str, **args: object) -> Any:
    """The typed request the owner hands the link, checked as the socket checks it."""
    req: Request = request_from(op, dict(args))
    return req


@pytest.mark.parametrize("schema", [1, 2])
def test_a_queue_file_from_before_the_cluster_columns_still_reads_and_upgrades(
    tmp_path: Path, schema: int
) -> None:
    import sqlite3

    from gputray.scheduler.queue.store_schema import MIGRATIONS, SCHEMA_VERSION

    path = tmp_path / "queue.sqlite3"
    db = sqlite3.connect(path)
    for step in MIGRATIONS[:schema]:  # a file an older gputray wrote: schema 1, or 2 (attempts_before)
        step(db)
    db.execute(f"PRAGMA user_version={schema}")
    db.execute(
        "INSERT INTO tasks (spec, name, kind, state, submitted_at, position, queued_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            '{"kind":"command","name":"old","argv":["true"]}',
            "old",
            "command",
            "queued",
            time.time(),
            1.0,
            0.0,
        ),
    )
    db.commit()
    db.close()
    (old,) = read_saved_tasks(path)  # read-only, as the CLI does with no owner
    assert old.name == "old" and old.machine is None
    store = TaskStore(path)
    assert store.schema_version == SCHEMA_VERSION
    upgraded = store.get(old.id)
    assert upgraded.remote_id is None and upgraded.machine is None and upgraded.remote_state is None
    steps.run_there(store, old.id, "laptop", 7)
    assert store.get(old.id).remote_id == 7
    store.close()


def test_only_the_bridge_process_imports_ray() -> None:
    """The tray, the daemon and the CLI stay light: no module but the bridge's ``main`` imports Ray."""
    import subprocess
    import sys

    code = (
        "import sys, pkgutil, importlib\n"
        "import gputray.monitor, gputray.scheduler, gputray.scheduler.cli.commands, gputray.cluster\n"
        "for pkg in (gputray.monitor, gputray.scheduler, gputray.scheduler.cli.commands, gputray.cluster):\n"
        "    for m in pkgutil.iter_modules(pkg.__path__):\n"
        "        importlib.import_module(pkg.__name__ + '.' + m.name)\n"
        "print(','.join(sorted(n for n in sys.modules if n == 'ray' or n.startswith('ray.'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_a_remote_copy_is_an_orphan_only_when_our_row_went_another_way() -> None:
    from gputray.cluster.bridge_faults import _is_that_copy

    assert _is_that_copy("laptop", 7, 1, "laptop", 7, "1")  # ours, handed over
    assert _is_that_copy("laptop", None, 1, "laptop", 7, "1")  # ours, being sent right now
    assert not _is_that_copy("laptop", 9, 2, "laptop", 7, "1")  # a later attempt went there again
    assert not _is_that_copy("desk", None, 2, "laptop", 7, "1")  # placed here instead
    assert not _is_that_copy("any", None, 1, "laptop", 7, "1")  # queued again after laptop left
    assert not _is_that_copy("laptop", None, 1, "laptop", 7, "1", row_finished=True)  # cancelled mid-send


def test_join_on_windows_says_ray_is_single_node_there(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import argparse

    from gputray.cluster import commands

    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path))
    monkeypatch.setattr(commands, "is_windows", lambda: True)
    args = argparse.Namespace(address="10.0.0.5:6379", machine="pc", insecure=False, json=False)
    assert commands._join(args) == 1
    err = capsys.readouterr().err
    assert "Ray supports Windows as a single node only" in err and "cannot join 10.0.0.5:6379" in err
    assert not (tmp_path / "config" / "config.toml").exists()  # nothing written


def test_a_cluster_request_with_garbage_is_refused_before_the_link_sees_it() -> None:
    from gputray.scheduler.protocol import BadRequest

    report = {"state": "connected", "note": "", "address": None, "ray_version": None, "auth": "token"}
    report |= {"node_id": None, "agent_pid": None, "machine": "desk", "at": 1.0}
    device = {"key": "pci:1", "name": "GPU", "vendor": "amd", "kind": "integrated"}
    machine = {"name": "desk", "alive": True, "local": True, "devices": [device]}
    assert request_from("cluster_sync", {"report": {**report, "machines": [machine]}}).report is not None
    with pytest.raises(BadRequest, match=r"report\.machines\[0\]\.devices\[0\]\.key"):
        many = {**machine, "devices": [{**device, "key": "x" * 40_000}]}
        request_from("cluster_sync", {"report": {**report, "machines": [many]}})
    with pytest.raises(BadRequest, match=r"report\.machines"):  # more machines than a cluster has
        request_from("cluster_sync", {"report": {**report, "machines": [machine] * 1_001}})
    with pytest.raises(BadRequest, match=r"report\.state"):
        request_from("cluster_sync", {"report": {**report, "state": "fine", "machines": []}})
    with pytest.raises(BadRequest, match=r"argument 'spec\.util_percent'"):
        request_from("cluster_submit", {"origin": "desk#1.1", "spec": {"util_percent": float("nan")}})
    with pytest.raises(BadRequest, match="needs the argument 'id'"):
        request_from("cluster_update", {"step": {"step": "note", "reason": {"code": "Said", "text": "x"}}})
    with pytest.raises(BadRequest, match=r"argument 'step\.reason"):  # a step's fields keep their limits
        long = {"code": "Said", "text": "x" * 40_000}
        request_from("cluster_update", {"id": 1, "step": {"step": "note", "reason": long}})
    r = {"code": "Said", "text": "r"}
    ended = {"step": "remote_run", "into": "succeeded", "remote_state": "fetched", "reason": r}
    with pytest.raises(BadRequest, match=r"argument 'step\.ended_at'"):
        request_from("cluster_update", {"id": 1, "step": {**ended, "ended_at": float("nan")}})
    with pytest.raises(BadRequest, match=r"argument 'step\.into'"):  # a run there never "interrupted" here
        request_from("cluster_update", {"id": 1, "step": {**ended, "into": "interrupted"}})


def test_a_misspelt_cluster_key_is_named_but_does_not_stop_the_cluster(tmp_path: Path) -> None:
    from gputray.scheduler.config import read_config

    config = tmp_path / "config.toml"
    config.write_text(tomli_w.dumps({"cluster": {"address": "h:1", "machine": "desk", "lost_afer": "9s"}}))
    cfg = load_cluster_config(config)
    assert cfg.address == "h:1" and cfg.machine == "desk" and cfg.lost_after_s == 20.0
    (problem,) = read_config(config).problems
    expected = f"{config}: unknown key cluster.lost_afer (did you mean cluster.lost_after?); ignored"
    assert str(problem) == expected


def test_a_pause_answers_the_bridges_long_poll_with_the_pause_and_shows_in_the_report_at_once(
    tmp_path: Path,
) -> None:
    import threading

    from gputray.scheduler import protocol as rq
    from gputray.scheduler.replies import ClusterSynced

    link, store = _link(tmp_path, {"address": "127.0.0.1:6379", "machine": "desk"})
    queue = FakeQueue(store)
    link.attach(ClusterSide(queue))
    link.sync(
        rq.ClusterSync(wait_ms=0, bridge_key=link.bridge_key)
    )  # the first sync answers at once (nothing seen yet)
    gpu = DeviceView(key="pci:1", name="GPU", vendor="amd", kind="integrated")
    other = DeviceView(key="pci:2", name="GPU", vendor="amd", kind="integrated")
    machines = (
        ReportedMachine(name="desk", alive=True, local=True, devices=(gpu,)),
        ReportedMachine(name="laptop", alive=True, local=False, devices=(other,)),
    )
    report = ClusterReport(
        state="connected", note="", address=None, ray_version=None, auth="token", node_id=None,
        agent_pid=None, machine="desk", machines=machines, at=1.0,
    )  # fmt: skip
    replies: list[ClusterSynced] = []
    poll = threading.Thread(
        target=lambda: replies.append(
            link.sync(rq.ClusterSync(report=report, wait_ms=2000, bridge_key=link.bridge_key))
        )
    )
    poll.start()  # the bridge's long-poll; the pause answers it (before or during its wait)
    queue.paused_now = Paused(all=True)
    link.on_paused()
    poll.join(5)
    assert replies and replies[0].paused == Paused(all=True)
    shown = _devices(link)
    assert shown[0].paused and tuple(map(render, shown[0].reasons)) == ("the queue is paused on desk",)
    assert not shown[1].paused  # another machine's pause is its own bridge's to tell
    queue.paused_now = Paused()
    assert not _devices(link)[0].paused


def _devices(link: ClusterLink) -> list[DeviceView]:
    report = link.report_doc().report
    assert report is not None
    return [d for m in report.machines for d in m.devices]
