"""A job's family: what people would call "the same job", whose past runs predict the next one's.

The task's own ``family`` key when it has one; else its recipe (if a recipe made it) and the script it
runs: a torch task's ``script``, a command's first argument that names a script file (``python3
sub/infer.py …`` → ``sub/infer.py``), else its program. Files, arguments and the task's name do not
count: ``upscale photo1.png`` and ``upscale photo2.png`` are one family.
"""

from __future__ import annotations

import os

from gputray.scheduler.tasks.records import TaskSpec

_SCRIPT_SUFFIXES = (".py", ".sh", ".ps1", ".bat", ".cmd", ".js", ".lua", ".rb", ".pl")


def family_of(spec: TaskSpec) -> str:
    """The family name of ``spec`` (never empty)."""
    if spec.family:
        return spec.family
    what = spec.script
    if what is None:
        scripts = [a for a in spec.argv[1:] if a.lower().endswith(_SCRIPT_SUFFIXES)]
        what = scripts[0] if scripts else None
    if what is not None and spec.cwd and not os.path.isabs(what):  # a script: the file, wherever typed
        what = os.path.normpath(os.path.join(spec.cwd, what))
    if what is None:
        what = spec.argv[0] if spec.argv else spec.name
    return f"{spec.recipe}:{what}" if spec.recipe else f"{spec.kind}:{what}"
