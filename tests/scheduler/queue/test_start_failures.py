"""A task is marked running only once its process exists; one that cannot be started fails with its
reason and the rest of the pass goes on (real jobs, a real store)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_queue_service import Harness, command, harness  # noqa: F401  (the fixture)

from gputray.scheduler.queue import job_runs
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskSpec

PY = sys.executable


def test_an_input_named_tilde_user_runs(harness: Callable[..., Harness], tmp_path: Path) -> None:  # noqa: F811
    """`~user.png`: ~ in a file name is a character. It used to leave its task running with no process."""
    image = tmp_path / "~nosuchuser.png"
    image.write_bytes(b"png")
    writes_out = "import sys; open(sys.argv[1], 'w').write('done')"
    h = harness()
    q = h.start()
    rec = q.submit(
        TaskSpec(
            kind="vulkan", name="upscale", argv=(PY, "-c", writes_out, "{out}"), files=(str(image),),
            out="{stem}_x4.png", device_prefs=("cpu",),
        )
    )  # fmt: skip
    h.until(h.state(rec.id, "succeeded", "failed"))
    assert q.get(rec.id).state == "succeeded", render(q.get(rec.id).reason)
    assert (tmp_path / "~nosuchuser_x4.png").read_text() == "done"


def test_a_task_that_cannot_be_prepared_fails_and_the_pass_goes_on(
    harness: Callable[..., Harness],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = job_runs.prepare_launch

    def breaks_for_one(task, *args, **kwargs):  # type: ignore[no-untyped-def]
        if task.spec.name == "broken":
            raise RuntimeError("Could not determine home directory.")
        return real(task, *args, **kwargs)

    monkeypatch.setattr(job_runs, "prepare_launch", breaks_for_one)
    h = harness()
    q = h.start()
    q.pause()
    broken = q.submit(command("broken", device_prefs=("cpu",)))
    fine = q.submit(command("fine", device_prefs=("5060ti",)))
    q.resume()
    h.until(h.state(fine.id, "succeeded"))
    failed = q.get(broken.id)
    assert failed.state == "failed" and failed.pid is None
    assert render(failed.reason) == "could not start: Could not determine home directory."
