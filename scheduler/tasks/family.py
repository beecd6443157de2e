"""A job's family: what people would call "the same job", whose past runs predict the next one's.

The task's own ``family`` key when it has one; else its recipe (if a recipe made it) and the script it
runs: a torch task's ``script``, a command's first argument that names a script file (``python3
sub/infer.py …`` → ``sub/infer.py``), else its program. Files, arguments and the task's name do not
count: ``upscale photo1.png`` and ``upscale photo2.png`` are one family.
"""

from __future__ import annotations

import functools
import os

from gputray.scheduler.tasks.records import TaskSpec

_SCRIPT_SUFFIXES = (".py", ".sh", ".ps1", ".bat", ".cmd", ".js", ".lua", ".rb", ".pl")


def family_of(spec: TaskSpec) -> str:
    """The family name of ``spec`` (never empty)."""
    if spec.family:
        return spec.family
    return _family(spec.kind, spec.name, spec.script, spec.argv, spec.cwd, spec.recipe)


@functools.lru_cache(maxsize=16_384)  # each pass asks for every pending task's family
def _family(
    kind: str, name: str, script: str | None, argv: tuple[str, ...], cwd: str | None, recipe: str | None
) -> str:
    what = script
    if what is None:
        scripts = [a for a in argv[1:] if a.lower().endswith(_SCRIPT_SUFFIXES)]
        what = scripts[0] if scripts else None
    if what is not None and cwd and not os.path.isabs(what):  # a script: the file, wherever typed
        what = os.path.normpath(os.path.join(cwd, what))
    if what is None:
        what = argv[0] if argv else name
    return f"{recipe}:{what}" if recipe else f"{kind}:{what}"
