"""The GPU servers a user keeps running ("residents") that gputray recognises, and how.

A resident is found by its process (the name, and for a Python program its command line) and the
port it listens on; then its own API on loopback says what it holds and whether it is serving
(``resident_api``). docs/residents.md cites each resident's request and reply.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Literal

ApiName = Literal["ollama", "comfyui", "llama-server", "llama-swap", "lmstudio", "custom"]


@dataclass(frozen=True)
class FreeCall:
    """A user-defined resident's HTTP call that makes it let go of its memory."""

    method: str = "POST"
    path: str = "/free"
    body: str = ""  # sent as application/json when not empty


@dataclass(frozen=True)
class ResidentKind:
    name: str  # as shown: "ComfyUI"
    api: ApiName
    processes: tuple[str, ...]  # fnmatch patterns over the process name, lower case
    cmdline_any: tuple[str, ...] = ()  # and one of these in its command line (lower case), when given
    port: int | None = None  # its usual port: preferred when it listens on several
    free_call: FreeCall | None = None  # "custom" only
    # or, when its command line names none of cmdline_any: a script it runs (``python.exe main.py`` in
    # the folder) has these folders beside it (ComfyUI's ``comfy`` and ``comfy_extras``)
    script_beside: tuple[str, ...] = ()

    def matches(self, process_name: str, cmdline: str) -> bool:
        """Case-insensitive, as Windows names are (``Ollama.exe`` is ``ollama.exe``)."""
        if not self.name_matches(process_name):
            return False
        line = cmdline.lower()
        return not self.cmdline_any or any(word in line for word in self.cmdline_any)

    def name_matches(self, process_name: str) -> bool:
        name = process_name.lower()
        return any(fnmatch.fnmatchcase(name, pattern.lower()) for pattern in self.processes)

    def may_match_by_script(self, process_name: str, cmdline: str) -> bool:
        """Whether the scripts ``cmdline`` runs must be looked at (``script_beside``) to tell."""
        return bool(self.script_beside) and ".py" in cmdline.lower() and self.name_matches(process_name)


# Windows names carry ".exe". Not matched on purpose: "ollama app.exe" (Ollama's tray launcher, whose
# child "ollama.exe serve" is the server) and "lms.exe" (LM Studio's CLI, used to free it).
BUILTIN: tuple[ResidentKind, ...] = (
    ResidentKind("Ollama", "ollama", ("ollama", "ollama.exe"), port=11434),
    ResidentKind("llama-swap", "llama-swap", ("llama-swap", "llama-swap.exe"), port=8080),
    ResidentKind("llama-server", "llama-server", ("llama-server", "llama-server.exe"), port=8080),
    # ComfyUI is `python main.py` in its folder (the portable build: `python_embeded\python.exe -s
    # ComfyUI\main.py`), or comfy-cli's `comfy launch`, or the desktop app (ComfyUI.exe, whose child
    # python.exe runs its server; on port 8000 by default, found listening)
    ResidentKind(
        "ComfyUI",
        "comfyui",
        ("python*", "comfy*", "comfyui*"),
        cmdline_any=("comfyui", "comfy launch"),
        port=8188,
        script_beside=("comfy", "comfy_extras"),
    ),
    ResidentKind("LM Studio", "lmstudio", ("lm studio*", "lm-studio*", "lmstudio*", "llmster*"), port=1234),
)


def kind_named(name: str, kinds: tuple[ResidentKind, ...] = BUILTIN) -> ResidentKind | None:
    wanted = name.strip().lower()
    return next((k for k in kinds if k.name.lower() == wanted), None)
