"""Dropped files → jobs. Every drop target (panel, bubble, "Open with", Send To) ends up here.

Several files make several jobs. Files are grouped by type; a quick dialog lets the user pick the recipe
and the device policy per type, and can remember that choice so the next drop of that type goes
straight to the queue. Folders, missing files and types no recipe handles get a clear message, and
never stop the other files of the same drop. The confirm dialog says all of it before anything is
queued: which files no recipe takes, and which recipe needs a program that is not installed (with
where to get it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from gputray.gui import i18n, messages
from gputray.gui.gui_state import GuiState
from gputray.gui.i18n import tr, trn
from gputray.gui.theme import colors
from gputray.gui.widgets import ElidedLabel
from gputray.gui.window_fit import fit_on_screen
from gputray.scheduler.client.tasks import Recipe, TaskPatch


def policies() -> dict[str, tuple[str, TaskPatch]]:
    """Device policy key → (label, what it sets on each task). ``recipe`` keeps what the recipe says."""
    return {
        "recipe": (tr("As the recipe says"), TaskPatch()),
        "redirect": (
            tr("Fastest free GPU (redirect when busy)"),
            TaskPatch(device_prefs=("discrete", "integrated"), on_busy="redirect"),
        ),
        "discrete": (
            tr("Discrete GPU only (wait for it)"),
            TaskPatch(device_prefs=("discrete",), on_busy="wait"),
        ),
        "integrated": (
            tr("Integrated GPU only (wait for it)"),
            TaskPatch(device_prefs=("integrated",), on_busy="wait"),
        ),
        "cpu": (tr("CPU"), TaskPatch(device_prefs=("cpu",), on_busy="wait")),
    }


@dataclass(frozen=True)
class DropGroup:
    file_type: str  # ".png", or the whole name for files without a suffix
    files: tuple[Path, ...]
    recipes: tuple[str, ...]  # recipes that handle this type, best first


@dataclass(frozen=True)
class DropPlan:
    groups: tuple[DropGroup, ...]
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class DropChoice:
    recipe: str
    policy: str = "recipe"
    remember: bool = False
    skip: bool = False  # the dialog showed why these files cannot be queued (a missing program)
    machine: str | None = None  # in a cluster: "any" or a machine's name (the task's `machine`); None: here


@dataclass
class DropOutcome:
    task_ids: list[Any] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    cancelled: bool = False


def local_path(item: str) -> Path:
    """A dropped item: a plain path or a ``file://`` URL (percent-encoded)."""
    if item.startswith("file://"):
        return Path(unquote(urlparse(item).path))
    return Path(item)


def file_type(path: Path) -> str:
    return path.suffix.lower() or path.name


def plan_drop(items: Sequence[str], recipes: Sequence[Recipe]) -> DropPlan:
    groups: dict[str, list[Path]] = {}
    matches: dict[str, tuple[str, ...]] = {}
    problems: list[str] = []
    seen: set[Path] = set()
    for item in items:
        if not item:
            continue
        if "://" in item and not item.startswith("file://"):
            problems.append(tr("{item}: only local files can be queued").format(item=item))
            continue
        path = local_path(item)
        if path in seen:
            continue
        seen.add(path)
        if path.is_dir():
            problems.append(tr("{name} is a folder: drop the files inside it instead").format(name=path.name))
            continue
        if not path.exists():
            problems.append(tr("{path} does not exist").format(path=path))
            continue
        names = tuple(r.name for r in recipes if r.matches(path))
        if not names:
            problems.append(
                tr("{name}: no recipe handles {type} files").format(name=path.name, type=file_type(path))
            )
            continue
        kind = file_type(path)
        groups.setdefault(kind, []).append(path)
        matches[kind] = names
    return DropPlan(
        tuple(DropGroup(k, tuple(v), matches[k]) for k, v in groups.items()),
        tuple(problems),
    )


def remembered_choices(state: GuiState | None) -> dict[str, DropChoice]:
    raw = state.get("drop_choices", {}) if state else {}
    out: dict[str, DropChoice] = {}
    if isinstance(raw, dict):
        for kind, v in raw.items():
            if isinstance(v, dict) and isinstance(v.get("recipe"), str):
                machine = v.get("machine")
                out[kind] = DropChoice(
                    v["recipe"],
                    str(v.get("policy", "recipe")),
                    True,
                    machine=machine if isinstance(machine, str) else None,
                )
    return out


def remember(state: GuiState | None, kind: str, choice: DropChoice) -> None:
    if state is None:
        return
    raw = dict(state.get("drop_choices", {}) or {})
    raw[kind] = {"recipe": choice.recipe, "policy": choice.policy}
    if choice.machine is not None:
        raw[kind]["machine"] = choice.machine
    state.set("drop_choices", raw)


SubmitFn = Callable[[list[str], str | None, TaskPatch], list[Any]]
AskFn = Callable[[DropPlan, Mapping[str, DropChoice]], dict[str, DropChoice] | None]


def handle_drop(
    items: Sequence[str],
    *,
    recipes: Sequence[Recipe],
    submit: SubmitFn,
    ask: AskFn | None,
    state: GuiState | None = None,
    machines: Sequence[str] | None = None,
) -> DropOutcome:
    """Plan, confirm (unless every type has a remembered choice), submit one job per file.

    ``submit(files, recipe, overrides)`` returns the new task ids and raises with a readable message
    (a missing tool, say) when it cannot queue them. ``machines``: the other machines of the cluster
    online now (None: in no cluster); a remembered "Run on" machine not among them is asked again.
    """
    plan = plan_drop(items, recipes)
    outcome = DropOutcome(messages=list(plan.problems))
    if not plan.groups:
        return outcome
    known = remembered_choices(state)
    choices: dict[str, DropChoice] = {}

    def still_fits(choice: DropChoice, g: DropGroup) -> bool:
        there = choice.machine in (None, "any") or choice.machine in (machines or ())
        return choice.recipe in g.recipes and there

    pending = [g for g in plan.groups if g.file_type not in known or not still_fits(known[g.file_type], g)]
    if pending and ask is not None:
        # The dialog lists the files left out itself: they are not repeated in a message afterwards.
        asked = ask(DropPlan(tuple(pending), plan.problems), known)
        if asked is None:
            outcome.cancelled = True
            outcome.messages = []
            return outcome
        outcome.messages = []
        choices.update(asked)
    for g in plan.groups:
        choice = choices.get(g.file_type) or known.get(g.file_type) or DropChoice(g.recipes[0])
        if choice.skip:
            continue
        if choice.remember and g.file_type in choices:
            remember(state, g.file_type, choice)
        overrides = policies().get(choice.policy, ("", TaskPatch()))[1]
        if choice.machine is not None:  # as `gputray submit --machine` sets it
            overrides = overrides.then(TaskPatch(machine=choice.machine))
        try:
            ids = submit([str(f) for f in g.files], choice.recipe, overrides)
        except Exception as exc:  # the queue's own readable message (missing tool, bad recipe …)
            outcome.messages.append(messages.said(exc))  # in the tray's language where it has a code
            continue
        outcome.task_ids.extend(ids)
    return outcome


ToolCheck = Callable[[str, Path], str | None]


def tool_check(recipes: Sequence[Recipe]) -> ToolCheck:
    """``check(recipe name, file)``: why the recipe's program cannot run (missing, with where to get
    it), or None. The same test the queue makes at submit time, made before anything is queued."""
    from gputray.scheduler.client.tasks import ToolNotFound, check_runnable, spec_for_file

    by_name = {r.name: r for r in recipes}

    def check(recipe_name: str, file: Path) -> str | None:
        recipe = by_name.get(recipe_name)
        if recipe is None:
            return None
        try:
            check_runnable(spec_for_file(recipe, file), hint=recipe.install_hint)
        except ToolNotFound as exc:
            text = tr("{tool} is not installed (or not on PATH), so these files cannot be queued.").format(
                tool=exc.tool
            )
            hint = recipe.hint(i18n.current_language())
            if hint:
                text += " " + tr("Get it: {hint}").format(hint=hint)
            return text
        except Exception:  # other problems (a bad recipe …) are reported when the job is submitted
            return None
        return None

    return check


class DropConfirmDialog(QDialog):
    """One row per file type: recipe, device policy, and "remember for this type".

    Before anything is queued it says which files will not be: each file no recipe takes (and
    folders, missing files), and each type whose recipe needs a program that is not installed, with
    where to get it. Those rows are left out; Queue is off when nothing would be queued.

    In a cluster (``machines``: the other machines online now) a "Run on" choice applies to every
    file: this machine (the default), any machine, or one by name. Outside a cluster it is not shown.
    """

    def __init__(
        self,
        plan: DropPlan,
        known: Mapping[str, DropChoice],
        parent: QWidget | None = None,
        *,
        check: ToolCheck | None = None,
        machines: Sequence[str] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(tr("Queue dropped files"))
        self.plan = plan
        self.check = check
        layout = QVBoxLayout(self)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        grid = QGridLayout()
        for col, text in enumerate((tr("Files"), tr("Recipe"), tr("Device"), "")):
            header = QLabel(text, self)
            bold = QFont(header.font())
            bold.setBold(True)
            header.setFont(bold)
            grid.addWidget(header, 0, col)
        self.rows: dict[str, tuple[QComboBox, QComboBox, QCheckBox]] = {}
        self.status: dict[str, QLabel] = {}
        self.blocked: dict[str, str] = {}
        for n, g in enumerate(plan.groups):
            row = 1 + 2 * n
            names = ", ".join(f.name for f in g.files[:3]) + (" …" if len(g.files) > 3 else "")
            files_label = ElidedLabel(names, self)
            files_label.set_own_tooltip("\n".join(str(f) for f in g.files))
            files_label.setMinimumWidth(160)
            grid.addWidget(files_label, row, 0)
            recipe_box = QComboBox(self)
            recipe_box.addItems(list(g.recipes))
            policy_box = QComboBox(self)
            for key, (label, _o) in policies().items():
                policy_box.addItem(label, key)
            prev = known.get(g.file_type)
            if prev is not None:
                if prev.recipe in g.recipes:
                    recipe_box.setCurrentText(prev.recipe)
                idx = policy_box.findData(prev.policy)
                if idx >= 0:
                    policy_box.setCurrentIndex(idx)
            check_box = QCheckBox(tr("Remember for {type} files").format(type=g.file_type), self)
            grid.addWidget(recipe_box, row, 1)
            grid.addWidget(policy_box, row, 2)
            grid.addWidget(check_box, row, 3)
            status = QLabel(self)
            status.setWordWrap(True)
            status.setTextFormat(Qt.TextFormat.PlainText)
            status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            status.setStyleSheet(f"color: {colors().hot_text}")
            status.hide()
            grid.addWidget(status, row + 1, 0, 1, 4)
            self.rows[g.file_type] = (recipe_box, policy_box, check_box)
            self.status[g.file_type] = status
            recipe_box.currentTextChanged.connect(lambda _t, kind=g.file_type: self._recheck(kind))
        layout.addLayout(grid)
        self.machine_box: QComboBox | None = None
        if machines is not None:
            run_on = QHBoxLayout()
            run_on.addWidget(QLabel(tr("Run on:"), self))
            self.machine_box = QComboBox(self)
            self.machine_box.addItem(tr("this machine"), None)
            self.machine_box.addItem(tr("any machine"), "any")
            for name in machines:
                self.machine_box.addItem(name, name)
            self.machine_box.setToolTip(
                tr("Any machine: the first free GPU that fits, on any machine of the cluster (this one too)")
            )
            run_on.addWidget(self.machine_box, 1)
            layout.addLayout(run_on)
        self.left_out = QLabel(self)
        self.left_out.setWordWrap(True)
        self.left_out.setTextFormat(Qt.TextFormat.PlainText)
        self.left_out.setStyleSheet(f"color: {colors().hot_text}")
        if plan.problems:
            lines = [tr("Not queued:")] + ["• " + p for p in plan.problems]
            self.left_out.setText("\n".join(lines))
        else:
            self.left_out.hide()
        layout.addWidget(self.left_out)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, parent=self
        )
        self.ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok.setText(tr("Queue"))
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        for g in plan.groups:
            self._recheck(g.file_type)

    def _group(self, kind: str) -> DropGroup:
        return next(g for g in self.plan.groups if g.file_type == kind)

    def _recheck(self, kind: str) -> None:
        recipe_box = self.rows[kind][0]
        problem = self.check(recipe_box.currentText(), self._group(kind).files[0]) if self.check else None
        label = self.status[kind]
        if problem:
            self.blocked[kind] = problem
            label.setText("⚠ " + problem)
        else:
            self.blocked.pop(kind, None)
        label.setVisible(bool(problem))
        self._update_summary()

    def _update_summary(self) -> None:
        jobs = sum(len(g.files) for g in self.plan.groups if g.file_type not in self.blocked)
        dropped = sum(len(g.files) for g in self.plan.groups) + len(self.plan.problems)
        text = trn("%n file(s) will become %n job(s).", jobs)
        left = dropped - jobs
        if left:
            text += " " + trn(
                "{left} of the %n dropped item(s) will not be queued (see below).", dropped
            ).format(left=left)
        self.summary.setText(text)
        self.ok.setEnabled(jobs > 0)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        fit_on_screen(self)

    def machine(self) -> str | None:
        """Where the jobs run: None (this machine), "any", or another machine's name."""
        data = self.machine_box.currentData() if self.machine_box is not None else None
        return data if isinstance(data, str) else None

    def choices(self) -> dict[str, DropChoice]:
        machine = self.machine()
        return {
            kind: DropChoice(
                r.currentText(),
                str(p.currentData()),
                c.isChecked(),
                skip=kind in self.blocked,
                machine=machine,
            )
            for kind, (r, p, c) in self.rows.items()
        }


def ask_with_dialog(
    parent: QWidget | None,
    recipes: Sequence[Recipe] | None = None,
    *,
    machines: Sequence[str] | None = None,
) -> AskFn:
    """``machines``: in a cluster, the other machines online now (the dialog offers "Run on")."""
    check = tool_check(recipes) if recipes is not None else None

    def ask(plan: DropPlan, known: Mapping[str, DropChoice]) -> dict[str, DropChoice] | None:
        dialog = DropConfirmDialog(plan, known, parent, check=check, machines=machines)
        dialog.raise_()
        dialog.activateWindow()
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        return dialog.choices()

    return ask
