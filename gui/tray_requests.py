"""What the tray asks of its owner, in-process (``Owner.handle``: the same handler the socket uses):
the queue listing, cancel (asked first), retry, pause and resume, priority and order, and the files
dropped or opened with gputray. ``TrayApp`` takes these from ``OwnerRequests``; the attributes below are
the app's own."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING, Any, TypeVar

from gputray.gui import messages
from gputray.gui.drops import DropOutcome, ask_with_dialog, handle_drop
from gputray.gui.i18n import tr
from gputray.scheduler.client import requests as rq
from gputray.scheduler.client.replies import Paused, Reply
from gputray.scheduler.client.tasks import TaskPatch

if TYPE_CHECKING:
    from gputray.gui.gui_state import GuiState
    from gputray.gui.menu import TrayMenu
    from gputray.gui.panel import Panel
    from gputray.gui.queue_model import QueueModel
    from gputray.scheduler.client.host import Owner

log = logging.getLogger("gputray.gui")
R = TypeVar("R", bound=Reply)


class OwnerRequests:
    """The tray's requests to its owner; see the module docstring."""

    args: argparse.Namespace
    owner: Owner | None
    model: QueueModel
    panel: Panel
    menu: TrayMenu
    paused: Paused
    state: GuiState

    def _warn(self, text: str) -> None:
        raise NotImplementedError  # TrayApp's: a message box, or the tray's balloon

    def _run_on_machines(self) -> list[str] | None:
        raise NotImplementedError  # TrayApp's: the cluster's machines a drop may choose

    def request(self, req: rq.Request[R]) -> R | None:
        if self.owner is None:
            self._warn(tr("gputray is still starting; try again in a moment."))
            return None
        try:
            return self.owner.handle(req)
        except Exception as exc:
            log.warning("%s failed: %s", req.op, exc)
            self._warn(messages.said(exc))
            return None

    def reload_queue(self) -> None:
        if self.owner is None:
            return
        try:
            result = self.owner.handle(rq.Queue(all=True))
        except Exception as exc:
            log.warning("queue listing failed: %s", exc)
            return
        self.model.apply(result.tasks)
        self._apply_paused(result.paused)
        self.panel.set_jobs(result.devices)
        self.panel.update_queue_label()

    def _apply_paused(self, paused: Paused) -> None:
        self.paused = paused
        self.panel.set_paused(paused.all, paused.devices)
        self.menu.set_paused(paused.all)

    def cancel(self, ids: list[Any]) -> None:
        from gputray.gui.cancel_confirm import confirm_cancel

        tasks = [t for t in self.model.tasks() if t.id in set(ids)]
        pinned = self.panel.pinned
        self.panel.pinned = True  # the question takes the focus: keep the panel open meanwhile
        try:
            if not confirm_cancel(self.panel if self.panel.isVisible() else None, tasks, self.state):
                return
        finally:
            self.panel.pinned = pinned
        result = self.request(rq.Cancel(ids=list(ids)))
        if result and result.errors:
            self._warn(messages.refused(result.errors, result.refused))
        self.reload_queue()

    def retry(self, task_id: Any) -> None:
        self.request(rq.Retry(id=task_id))
        self.reload_queue()

    def pause_job(self, task_id: int, pause: bool) -> None:
        """The row menu's Pause job / Resume job (``gputray pause-job`` / ``resume-job``)."""
        self.request(rq.PauseJob(id=task_id) if pause else rq.ResumeJob(id=task_id))
        self.reload_queue()

    def set_priority(self, task_id: Any, priority: int) -> None:
        self.request(rq.Edit(id=task_id, changes=TaskPatch(priority=priority)))
        self.reload_queue()

    def move(self, task_id: Any, delta: int) -> None:
        self.request(rq.Move(id=task_id, delta=delta))
        self.reload_queue()
        row = self.model.row_of(task_id)
        if row is not None:
            self.panel.table.selectRow(row)

    def pause(self, device: str | None) -> None:
        result = self.request(rq.Pause(device=device))
        if result is not None:
            self._apply_paused(result.paused)

    def resume(self, device: str | None) -> None:
        result = self.request(rq.Resume(device=device))
        if result is not None:
            self._apply_paused(result.paused)

    def submit_files(self, files: list[str], recipe: str | None, overrides: TaskPatch) -> list[Any]:
        """Raises the owner's readable error (missing tool …) so the drop handler can report it."""
        if self.owner is None:
            raise RuntimeError(tr("gputray is still starting; try again in a moment."))
        result = self.owner.handle(rq.SubmitFiles(files=[*files], recipe=recipe, overrides=overrides))
        for t in result.tasks:
            self.model.upsert(t)
        self.panel.update_queue_label()
        log.info("queued %d job(s) from %d file(s)", len(result.tasks), len(files))
        return [t.id for t in result.tasks]

    def _on_files_opened(self, files: list[str]) -> None:
        if self.owner is None:  # handed over while the owner was still being announced
            self.args.files = [*(self.args.files or []), *files]
            return
        self.drop_files(files)

    def drop_files(self, items: list[str]) -> DropOutcome:
        from gputray.scheduler.client.tasks import load_recipes

        try:
            recipes = load_recipes()
        except Exception as exc:
            self._warn(messages.said(exc))
            return DropOutcome(messages=[messages.said(exc)])
        parent = self.panel if self.panel.isVisible() else None
        pinned = self.panel.pinned
        self.panel.pinned = True  # the dialog takes focus: keep the panel open meanwhile
        machines = self._run_on_machines()
        try:
            outcome = handle_drop(
                items,
                recipes=recipes,
                submit=self.submit_files,
                ask=ask_with_dialog(parent, recipes, machines=machines),
                state=self.state,
                machines=machines,
            )
        finally:
            self.panel.pinned = pinned
        log.info(
            "drop of %d item(s): %d job(s), %d message(s)",
            len(items),
            len(outcome.task_ids),
            len(outcome.messages),
        )
        if outcome.messages:
            self._warn("\n".join(outcome.messages))
        return outcome
