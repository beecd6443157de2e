"""Values past their limits are refused at submit, naming the limit, and a stored record that cannot be
planned never stops the owner (issue 10's protocol and task-file limits)."""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from waiting import wait_for

from gputray.scheduler import cli, ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths, app_paths
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskSpec
from gputray.scheduler.tasks.taskfile import TaskFileError, load_task_file, spec_from_table

unix_only = pytest.mark.skipif(sys.platform == "win32", reason="uses the Unix socket transport")
NINES = "9" * 400


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    monkeypatch.setenv("GPUTRAY_HOME", str(tmp_path / "home"))
    return app_paths()


@pytest.fixture
def owner(paths: Paths) -> Iterator[Owner]:
    o = Owner(paths, demo=True)
    o.start()
    yield o
    o.stop()


def run_spec(**keys: object) -> dict[str, object]:
    return {"kind": "command", "argv": [sys.executable, "-c", "pass"], **keys}


@pytest.mark.parametrize(
    ("key", "value", "limit"),
    [
        ("start_at", 1e12, "1970 and 9999"),
        ("start_at", -5.0, "1970 and 9999"),
        ("vram", NINES, "1 PiB"),
        ("vram", f"{NINES}GiB", "1 PiB"),
        ("vram", 2.0**60, "1 PiB"),
        ("timeout", NINES, "10 years"),
        ("max_wait", "99999999d", "10 years"),
        ("backoff", 1e300, "10 years"),
    ],
)
def test_task_values_past_their_limits_are_refused_naming_the_limit(
    key: str, value: object, limit: str
) -> None:
    with pytest.raises(TaskFileError, match=limit) as err:
        spec_from_table(run_spec(**{key: value}), source="t.toml")
    assert f"key '{key}'" in str(err.value)


def test_a_task_file_nested_5000_deep_is_refused_in_words(tmp_path: Path) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("argv = " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(TaskFileError, match="nested too deeply"):
        load_task_file(path)


@unix_only
@pytest.mark.parametrize("start_at", [1e12, math.inf, math.nan])
def test_the_owner_refuses_impossible_start_times_at_submit(
    owner: Owner, paths: Paths, start_at: float
) -> None:
    # inf and nan are not JSON: send them as the JSON extension Python writes, as a careless script would
    payload = json.dumps({"op": "submit", "args": {"spec": run_spec(start_at=start_at)}}).encode()
    with ipc.IpcClient(paths) as client:
        reply = client.send_raw(payload)
        assert reply["ok"] is False, reply
        assert reply["error"]["type"] in ("BadRequest", "TaskFileError"), reply
        assert "InternalError" not in reply["error"]["type"]
        assert client.ask(rq.Queue(all=True)).tasks == ()


@unix_only
@pytest.mark.parametrize(
    ("options", "limit"),
    [
        (["--at", "+99999999d"], "10 years"),
        (["--timeout", NINES], "10 years"),
        (["--vram", f"{NINES}GiB"], "1 PiB"),
    ],
)
def test_the_cli_refuses_values_past_their_limits(
    paths: Paths, capsys: pytest.CaptureFixture[str], options: list[str], limit: str
) -> None:
    code = cli.main(["run", *options, "--", sys.executable, "-c", "pass"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert limit in err and "Traceback" not in err


@unix_only
def test_the_owner_starts_with_a_stored_far_future_task_and_fails_only_that_one(paths: Paths) -> None:
    """`gputray run --at +99999999d` used to store a start time no datetime can hold; the next owner
    then failed to start (Owner.start → _plan_wakeups → timing._aware)."""
    paths.data_dir.mkdir(parents=True, exist_ok=True)
    store = TaskStore(paths.queue_db)
    far = store.add(TaskSpec(kind="command", name="far", argv=("true",), start_at=1e12), now=time.time())
    store.close()
    o = Owner(paths, demo=True)
    o.start()
    try:
        wait_for(lambda: o.queue.get(far.id).state == "failed", 10.0)
        reason = render(o.queue.get(far.id).reason)
        assert reason is not None and "1970 and 9999" in reason
    finally:
        o.stop()
