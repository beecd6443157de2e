"""A running job's progress in the panel's row and the dashboard's task list: a bar, how far and the
time left, in English and Japanese (the model's words; the live jobs are in
tests/scheduler/queue/test_job_progress.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytestqt.qtbot import QtBot

from gputray.gui.i18n import install_language
from gputray.gui.queue_model import COL_REASON, QueueModel, progress_text
from gputray.scheduler.replies import TaskView


@pytest.fixture
def english(qtbot: QtBot) -> Iterator[None]:
    install_language("en")
    yield
    install_language("en")


def _running(**fields: object) -> TaskView:
    return TaskView(id=7, name="train", state="running", started_at=1000.0, **fields)  # type: ignore[arg-type]


def test_the_row_shows_a_bar_how_far_and_the_time_left(english: None) -> None:
    model = QueueModel(wall_clock=lambda: 1040.0)
    model.apply([_running(progress=0.45, eta_s=25.0)])
    shown = model.data(model.index(0, COL_REASON))
    assert shown == "\u2588\u2588\u2588\u2588\u2591\u2591\u2591\u2591\u2591\u2591 45%, ~25 s left"
    assert progress_text(_running(progress=0.02)) == "\u2591" * 10 + " 2%"  # too early to tell the time
    assert progress_text(_running()) == ""  # reports none
    assert progress_text(TaskView(id=1, state="succeeded", progress=0.5)) == ""  # ended
    install_language("ja")
    assert progress_text(_running(progress=0.45, eta_s=720.0)).endswith(" 45%、残り ~12 分")
