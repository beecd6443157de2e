"""The queue as a Qt table model over the owner's task views (``replies.TaskView``, times in epoch s).

Updates are incremental: :meth:`QueueModel.apply` diffs the new list against the rows it holds and emits
row inserts, removals, a layout change for reorders, and ``dataChanged`` for only the rows that changed,
so a view over 10,000 tasks keeps its selection and scroll position and stays responsive. The elapsed
column of running tasks is refreshed by :meth:`tick` without touching any other cell.

While the order is held (:meth:`hold_order`: the pointer is over the panel's list, or a row's menu is
open) no row moves, comes or goes: a task that changed is updated where it is, everything else waits
until the hold ends, so the row under the pointer stays the task the user is pointing at.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor

from gputray.gui import messages
from gputray.gui.i18n import tr, tr_noop
from gputray.gui.theme import colors
from gputray.monitor.units import format_energy_j
from gputray.scheduler.client.replies import TaskView
from gputray.scheduler.client.words import says_how_it_ended

log = logging.getLogger("gputray.gui")
Index = QModelIndex | QPersistentModelIndex

COLUMNS = ("name", "state", "device", "reason", "elapsed")
COL_NAME, COL_STATE, COL_DEVICE, COL_REASON, COL_ELAPSED = range(len(COLUMNS))
STATE_NAMES = (
    tr_noop("queued"),
    tr_noop("waiting"),
    tr_noop("starting"),
    tr_noop("running"),
    tr_noop("succeeded"),
    tr_noop("failed"),
    tr_noop("cancelled"),
    tr_noop("interrupted"),
)
ACTIVE_STATES = frozenset({"queued", "waiting", "starting", "running"})
HEADERS = (tr_noop("Task"), tr_noop("State"), tr_noop("Device"), tr_noop("Reason"), tr_noop("Elapsed"))
ID_ROLE = Qt.ItemDataRole.UserRole + 1
RECORD_ROLE = Qt.ItemDataRole.UserRole + 2


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def elapsed_s(task: TaskView, now_epoch_s: float) -> float | None:
    if task.started_at is None:
        return None
    return (task.ended_at if task.ended_at is not None else now_epoch_s) - task.started_at


def energy_text(task: TaskView) -> str:
    """The GPU energy a task's run used, for tooltips ("" where none was measured); where the GPU ran
    other work too, a line saying the figure is the whole device's (``TaskView.energy_shared``)."""
    if task.energy_j is None:
        return ""
    energy = format_energy_j(task.energy_j)
    if task.power_avg_w is None:
        text = tr("GPU energy: {energy}").format(energy=energy)
    else:
        watts = f"{task.power_avg_w:.0f}"
        text = tr("GPU energy: {energy} ({watts} W on average)").format(energy=energy, watts=watts)
    if task.energy_shared:
        text += "\n" + tr("shared: the GPU ran other work too, so this is the whole device's energy")
    if task.energy_estimated_s > 0:
        seconds = f"{task.energy_estimated_s:.0f}"
        text += "\n" + tr("{seconds} s of it counted from power: the GPU's energy counter glitched").format(
            seconds=seconds
        )
    return text


PROGRESS_CELLS = 10  # the bar's width in block characters


def progress_text(task: TaskView) -> str:
    """A running job's progress as the panel and the dashboard show it: a bar, how far, and the time left
    at its pace (``TaskView.progress``/``eta_s``, read from the job's own output); "" when it reports
    none."""
    if task.progress is None or task.state != "running":
        return ""
    filled = min(PROGRESS_CELLS, max(0, round(task.progress * PROGRESS_CELLS)))
    bar = "\u2588" * filled + "\u2591" * (PROGRESS_CELLS - filled)
    percent = math.floor(task.progress * 100)
    if task.eta_s is None:
        return tr("{bar} {percent}%").format(bar=bar, percent=percent)
    left = messages.about(task.eta_s)
    return tr("{bar} {percent}%, {left} left").format(bar=bar, percent=percent, left=left)


class QueueModel(QAbstractTableModel):
    def __init__(self, parent: Any = None, *, wall_clock: Any = time.time) -> None:
        super().__init__(parent)
        self._rows: list[TaskView] = []
        self._row_of: dict[int, int] = {}
        self._device_names: dict[str, str] = {}
        self._device_full_names: dict[str, str] = {}
        self._wall_clock = wall_clock
        self._now = wall_clock()
        self._held = False
        self._pending: dict[int, TaskView] | None = None  # the newest list, in order, while held
        self._headers = tuple(tr(h) for h in HEADERS)
        self._state_colors = {k: QColor(v) for k, v in colors().states.items()}

    def retranslate(self) -> None:
        """After a language switch: new header words, and every shown state and reason again."""
        self._headers = tuple(tr(h) for h in HEADERS)
        self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, len(COLUMNS) - 1)
        if self._rows:
            self._emit_rows_changed(0, len(self._rows) - 1)

    def restyle(self) -> None:
        """After the colour scheme changed: state colours readable on the new background."""
        self._state_colors = {k: QColor(v) for k, v in colors().states.items()}
        if self._rows:
            last = len(self._rows) - 1
            self.dataChanged.emit(
                self.index(0, COL_STATE), self.index(last, COL_STATE), [Qt.ItemDataRole.ForegroundRole]
            )

    # -- Qt model API ---------------------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's default argument
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self._headers[section] if 0 <= section < len(self._headers) else None
        return None

    def data(self, index: Index, role: int = 0) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        task = self._rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self.display(task, col)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self.tooltip(task, col) or None
        if role == Qt.ItemDataRole.ForegroundRole and col == COL_STATE:
            return self._state_colors.get(task.shown_state, self._state_colors.get(task.state))
        if role == ID_ROLE:
            return task.id
        if role == RECORD_ROLE:
            return task
        return None

    def display(self, task: TaskView, col: int) -> str:
        if col == COL_NAME:
            return task.name or str(task.id)
        if col == COL_STATE:
            return messages.state_word(task.shown_state)  # "paused": a running task whose job is paused
        if col == COL_DEVICE:
            device = task.device
            shown = self._device_names.get(str(device), str(device)) if device else "–"
            env = task.env
            return f"{shown} · {env}" if env else shown  # the Python env a torch task runs in
        if col == COL_REASON:
            reason = messages.reason(task.reason, task.state)
            if (progress := progress_text(task)) and task.paused_at is None:
                return f"{progress} \u00b7 {reason}" if reason else progress  # the job's own progress first
            offer = task.offer if task.state in ("queued", "waiting") else None
            if offer is None:
                return reason
            # a standing offer comes first: the answer is one click away in the bar above the list
            can = tr("can start now on {device}").format(device=offer.device_name)
            return messages.in_a_row(can, reason)
        if col == COL_ELAPSED:
            took = elapsed_s(task, self._now)
            return "" if took is None else format_duration(took)
        return ""

    def tooltip(self, task: TaskView, col: int) -> str:
        """The whole of what a cell shows (cells elide), and a little more: every cell has one."""
        exit_code = task.exit_code
        said = says_how_it_ended(task.reason)  # the reason says it: not twice
        failed = exit_code not in (None, 0) and not said
        exit_text = tr("exit status {code}").format(code=exit_code) if failed else ""
        if col == COL_NAME:
            lines = [f"#{task.id} {task.name or ''}".strip()]
            if task.log_path:
                lines.append(tr("log: {path}").format(path=task.log_path))
            return "\n".join(filter(None, [*lines, energy_text(task)]))
        if col in (COL_STATE, COL_REASON):
            parts = [self.display(task, COL_STATE)] if col == COL_STATE else []
            reason = self.display(task, COL_REASON)
            parts += [p for p in (reason, exit_text) if p]
            return "\n".join(parts)
        if col == COL_DEVICE:
            device = task.device
            if not device:
                return ""
            full = self._device_full_names.get(device)
            env = task.env
            if full is None:
                return self.display(task, col)
            return f"{full} · {env}" if env else full
        if col == COL_ELAPSED:
            return "\n".join(filter(None, [self.display(task, col), energy_text(task)]))
        return ""

    # -- our API --------------------------------------------------------------------------------------
    def task(self, row: int) -> TaskView | None:
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def row_of(self, task_id: int) -> int | None:
        return self._row_of.get(task_id)

    def tasks(self) -> list[TaskView]:
        """The newest list (while the order is held, what the rows will show when it ends)."""
        return list(self._pending.values()) if self._pending is not None else list(self._rows)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tasks():
            out[t.state] = out.get(t.state, 0) + 1
        return out

    def shown_counts(self) -> tuple[int, int, int]:
        """(running, paused, waiting) as the panel's queue line and the tray's tooltip say them: a job
        paused (by you, for a higher priority, for a game) is not counted as running."""
        shown = [t.shown_state for t in self.tasks()]
        return shown.count("running"), shown.count("paused"), shown.count("queued") + shown.count("waiting")

    def device_names(self) -> list[str]:
        return list(self._device_names.values())

    def set_device_names(self, names: Mapping[str, str], full_names: Mapping[str, str] | None = None) -> bool:
        """Short names for the Device column; the full ones for its tooltip. True when they changed."""
        full = dict(full_names) if full_names is not None else dict(names)
        if dict(names) == self._device_names and full == self._device_full_names:
            return False
        self._device_names = dict(names)
        self._device_full_names = full
        if self._rows:
            self.dataChanged.emit(self.index(0, COL_DEVICE), self.index(len(self._rows) - 1, COL_DEVICE))
        return True

    def _reindex(self, start: int = 0) -> None:
        for i in range(start, len(self._rows)):
            self._row_of[self._rows[i].id] = i

    # -- holding the order ----------------------------------------------------------------------------
    def hold_order(self, hold: bool) -> None:
        """Hold the rows in place (True), or apply what came meanwhile (False)."""
        if hold == self._held:
            return
        self._held = hold
        if not hold and self._pending is not None:
            pending, self._pending = self._pending, None
            self.apply(pending.values())

    def order_held(self) -> bool:
        return self._held

    def _update_in_place(self, record: TaskView) -> None:
        row = self._row_of.get(record.id)
        if row is not None and self._rows[row] != record:
            self._rows[row] = record
            self._emit_rows_changed(row, row)

    def apply(self, records: Iterable[TaskView]) -> None:
        """Make the rows equal to ``records`` (in that order) with the fewest signals."""
        if self._held:
            before = list(self._pending) if self._pending is not None else [t.id for t in self._rows]
            self._pending = {r.id: r for r in records}
            for r in self._pending.values():
                self._update_in_place(r)
            if list(self._pending) != before:
                log.info(
                    "queue news held back: %d rows shown, %d to come", len(self._rows), len(self._pending)
                )
            return
        new = list(records)
        new_ids = [r.id for r in new]
        new_set = set(new_ids)
        # 1. removals, as contiguous runs from the bottom up
        gone = [i for i, t in enumerate(self._rows) if t.id not in new_set]
        if gone:
            runs: list[tuple[int, int]] = []
            for i in gone:
                if runs and runs[-1][1] == i - 1:
                    runs[-1] = (runs[-1][0], i)
                else:
                    runs.append((i, i))
            for first, last in reversed(runs):
                self.beginRemoveRows(QModelIndex(), first, last)
                del self._rows[first : last + 1]
                self.endRemoveRows()
            self._row_of = {}
            self._reindex()
        # 2. reorder of the rows that stay
        old_set = set(self._row_of)
        wanted_order = [i for i in new_ids if i in old_set]
        if wanted_order != [t.id for t in self._rows]:
            self.layoutAboutToBeChanged.emit()
            old_ids = [t.id for t in self._rows]
            by_id = {t.id: t for t in self._rows}
            self._rows = [by_id[i] for i in wanted_order]
            self._row_of = {}
            self._reindex()
            persistent = self.persistentIndexList()
            moved = [self.index(self._row_of[old_ids[p.row()]], p.column()) for p in persistent]
            self.changePersistentIndexList(persistent, moved)
            self.layoutChanged.emit()
        # 3. inserts, grouped into runs
        i = 0
        while i < len(new):
            if i < len(self._rows) and self._rows[i].id == new_ids[i]:
                i += 1
                continue
            j = i
            while j < len(new) and new_ids[j] not in old_set:
                j += 1
            self.beginInsertRows(QModelIndex(), i, j - 1)
            self._rows[i:i] = new[i:j]
            self.endInsertRows()
            self._reindex(i)
            i = j
        # 4. changed rows, as contiguous runs
        run_start: int | None = None
        for n, rec in enumerate(new):
            changed = n < len(self._rows) and self._rows[n] != rec and new_ids[n] in old_set
            if changed:
                self._rows[n] = rec
                if run_start is None:
                    run_start = n
            elif run_start is not None:
                self._emit_rows_changed(run_start, n - 1)
                run_start = None
        if run_start is not None:
            self._emit_rows_changed(run_start, len(new) - 1)

    def upsert(self, record: TaskView) -> None:
        """One task changed (an event from the queue): update its row, or append it."""
        rec = record
        if self._held:
            if self._pending is None:
                self._pending = {t.id: t for t in self._rows}
            self._pending[rec.id] = rec  # a new task is appended when the hold ends
            self._update_in_place(rec)
            return
        row = self._row_of.get(rec.id)
        if row is None:
            n = len(self._rows)
            self.beginInsertRows(QModelIndex(), n, n)
            self._rows.append(rec)
            self._row_of[rec.id] = n
            self.endInsertRows()
        elif self._rows[row] != rec:
            self._rows[row] = rec
            self._emit_rows_changed(row, row)

    def _emit_rows_changed(self, first: int, last: int) -> None:
        self.dataChanged.emit(self.index(first, 0), self.index(last, len(COLUMNS) - 1))

    def tick(self, now_epoch_s: float | None = None) -> int:
        """Refresh the elapsed cells of running tasks; returns how many rows it touched."""
        self._now = self._wall_clock() if now_epoch_s is None else now_epoch_s
        touched = 0
        for n, t in enumerate(self._rows):
            if t.state == "running":
                idx = self.index(n, COL_ELAPSED)
                self.dataChanged.emit(idx, idx, [Qt.ItemDataRole.DisplayRole])
                touched += 1
        return touched
