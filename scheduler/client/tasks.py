"""The task records a client reads or sends (``tasks/records.py``) and the recipes that turn a dropped
or opened file into a task (``tasks/recipes.py``)."""

from __future__ import annotations

from gputray.scheduler.tasks.recipes import (
    Recipe,
    ToolNotFound,
    check_runnable,
    load_recipes,
    read_recipes_file,
    spec_for_file,
)
from gputray.scheduler.tasks.records import MAX_PRIORITY, QueueEvent, TaskPatch

__all__ = [
    "MAX_PRIORITY",
    "QueueEvent",
    "Recipe",
    "TaskPatch",
    "ToolNotFound",
    "check_runnable",
    "load_recipes",
    "read_recipes_file",
    "spec_for_file",
]
