"""What travels with a task and where its results come back (files only, no Ray)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputray.cluster.config import ClusterConfig
from gputray.cluster.staging import (
    TransferRefused,
    check_size,
    list_outputs,
    plan_inputs,
    staged_spec,
    write_manifest,
)
from gputray.scheduler.tasks.records import TaskSpec


def test_inputs_are_staged_at_their_place_relative_to_the_task_and_arguments_rewritten(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "job.py").write_text("print(1)")
    (work / "data" / "in.csv").write_text("a,b\n")
    elsewhere = tmp_path / "other" / "weights.bin"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(b"\0" * 10)
    spec = TaskSpec(
        kind="command",
        name="job",
        argv=("python3", "job.py", "--data", "data/in.csv", "--weights", str(elsewhere), "--flag"),
        cwd=str(work),
    )
    plan = plan_inputs(spec, ClusterConfig(address="h:1"))
    assert plan.base == str(work)
    assert {f.rel for f in plan.files} == {"job.py", "data/in.csv", "_inputs/1/weights.bin"}
    assert plan.total_bytes == 8 + 4 + 10

    staged = staged_spec(spec, plan, "/stage/desk_1.1")
    assert staged.cwd == "/stage/desk_1.1"
    weights = "/stage/desk_1.1/_inputs/1/weights.bin"
    assert staged.argv == ("python3", "job.py", "--data", "data/in.csv", "--weights", weights, "--flag")


def test_over_the_limit_is_refused_with_the_way_out(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as f:
        f.truncate(3 << 30)
    spec = TaskSpec(kind="command", name="x", argv=("tool", str(big)), cwd=str(tmp_path))
    config = ClusterConfig(address="h:1")
    with pytest.raises(
        TransferRefused, match=r"big.bin is 3.0 GiB.*max_transfer \(2.0 GiB\).*laptop.*shared"
    ):
        check_size(plan_inputs(spec, config), config, "laptop")
    shared = ClusterConfig(address="h:1", shared=(tmp_path,))
    plan = plan_inputs(spec, shared)
    assert plan.shared_in_place and plan.files == ()
    assert staged_spec(spec, plan, "/stage/x") == spec  # used in place


def test_new_and_changed_files_are_the_outputs(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text("x")
    (tmp_path / "data.txt").write_text("old")
    write_manifest(tmp_path, ["job.py", "data.txt"])
    (tmp_path / "data.txt").write_text("new and longer")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "result.png").write_bytes(b"png")
    assert list_outputs(tmp_path) == [("data.txt", 14), ("out/result.png", 3)]
