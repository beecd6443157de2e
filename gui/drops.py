"""Dropped files → jobs. Every drop target (panel, bubble, "Open with", Send To) ends up here.

Several files make several jobs. Files are grouped by type; a quick dialog lets the user pick the recipe
and the device policy per type, and can remember that choice so the next drop of that type goes
straight to the queue. Folders, missing files and types no recipe handles get a clear message, and
never stop the other files of the same drop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from gputray.gui.gui_state import GuiState
from gputray.gui.i18n import tr
from gputray.scheduler.recipes import Recipe


def policies() -> dict[str, tuple[str, dict[str, Any]]]:
    """Device policy key → (label, task overrides). ``recipe`` keeps what the recipe says."""
    return {
        "recipe": (tr("As the recipe says"), {}),
        "redirect": (
            tr("Fastest free GPU (redirect when busy)"),
            {"device_prefs": ["discrete", "integrated"], "on_busy": "redirect"},
        ),
        "discrete": (
            tr("Discrete GPU only (wait for it)"),
            {"device_prefs": ["discrete"], "on_busy": "wait"},
        ),
        "integrated": (
            tr("Integrated GPU only (wait for it)"),
            {"device_prefs": ["integrated"], "on_busy": "wait"},
        ),
        "cpu": (tr("CPU"), {"device_prefs": ["cpu"], "on_busy": "wait"}),
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
                out[kind] = DropChoice(v["recipe"], str(v.get("policy", "recipe")), True)
    return out


def remember(state: GuiState | None, kind: str, choice: DropChoice) -> None:
    if state is None:
        return
    raw = dict(state.get("drop_choices", {}) or {})
    raw[kind] = {"recipe": choice.recipe, "policy": choice.policy}
    state.set("drop_choices", raw)


SubmitFn = Callable[[list[str], str | None, dict[str, Any]], list[Any]]
AskFn = Callable[[DropPlan, Mapping[str, DropChoice]], dict[str, DropChoice] | None]


def handle_drop(
    items: Sequence[str],
    *,
    recipes: Sequence[Recipe],
    submit: SubmitFn,
    ask: AskFn | None,
    state: GuiState | None = None,
) -> DropOutcome:
    """Plan, confirm (unless every type has a remembered choice), submit one job per file.

    ``submit(files, recipe, overrides)`` returns the new task ids and raises with a readable message
    (a missing tool, say) when it cannot queue them.
    """
    plan = plan_drop(items, recipes)
    outcome = DropOutcome(messages=list(plan.problems))
    if not plan.groups:
        return outcome
    known = remembered_choices(state)
    choices: dict[str, DropChoice] = {}
    pending = [
        g for g in plan.groups if g.file_type not in known or known[g.file_type].recipe not in g.recipes
    ]
    if pending and ask is not None:
        asked = ask(DropPlan(tuple(pending)), known)
        if asked is None:
            outcome.cancelled = True
            return outcome
        choices.update(asked)
    for g in plan.groups:
        choice = choices.get(g.file_type) or known.get(g.file_type) or DropChoice(g.recipes[0])
        if choice.remember and g.file_type in choices:
            remember(state, g.file_type, choice)
        overrides = dict(policies().get(choice.policy, ("", {}))[1])
        try:
            ids = submit([str(f) for f in g.files], choice.recipe, overrides)
        except Exception as exc:  # the queue's own readable message (missing tool, bad recipe …)
            outcome.messages.append(str(exc))
            continue
        outcome.task_ids.extend(ids)
    return outcome


class DropConfirmDialog(QDialog):
    """One row per file type: recipe, device policy, and "remember for this type"."""

    def __init__(
        self, plan: DropPlan, known: Mapping[str, DropChoice], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(tr("Queue dropped files"))
        self.plan = plan
        layout = QVBoxLayout(self)
        count = sum(len(g.files) for g in plan.groups)
        layout.addWidget(QLabel(tr("{n} file(s) will become {n} job(s).").format(n=count), self))
        grid = QGridLayout()
        for col, text in enumerate((tr("Files"), tr("Recipe"), tr("Device"), "")):
            grid.addWidget(QLabel(f"<b>{text}</b>", self), 0, col)
        self.rows: dict[str, tuple[QComboBox, QComboBox, QCheckBox]] = {}
        for row, g in enumerate(plan.groups, start=1):
            names = ", ".join(f.name for f in g.files[:3]) + (" …" if len(g.files) > 3 else "")
            grid.addWidget(QLabel(names, self), row, 0)
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
            check = QCheckBox(tr("Remember for {type} files").format(type=g.file_type), self)
            grid.addWidget(recipe_box, row, 1)
            grid.addWidget(policy_box, row, 2)
            grid.addWidget(check, row, 3)
            self.rows[g.file_type] = (recipe_box, policy_box, check)
        layout.addLayout(grid)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, parent=self
        )
        ok = buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setText(tr("Queue"))
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def choices(self) -> dict[str, DropChoice]:
        return {
            kind: DropChoice(r.currentText(), str(p.currentData()), c.isChecked())
            for kind, (r, p, c) in self.rows.items()
        }


def ask_with_dialog(parent: QWidget | None) -> AskFn:
    def ask(plan: DropPlan, known: Mapping[str, DropChoice]) -> dict[str, DropChoice] | None:
        dialog = DropConfirmDialog(plan, known, parent)
        dialog.raise_()
        dialog.activateWindow()
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        return dialog.choices()

    return ask
