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

    def matches(self, process_name: str, cmdline: str) -> bool:
        name = process_name.lower()
        if not any(fnmatch.fnmatchcase(name, pattern.lower()) for pattern in self.processes):
            return False
        line = cmdline.lower()
        return not self.cmdline_any or any(word in line for word in self.cmdline_any)


BUILTIN: tuple[ResidentKind, ...] = (
    ResidentKind("Ollama", "ollama", ("ollama", "ollama.exe"), port=11434),
    ResidentKind("llama-swap", "llama-swap", ("llama-swap", "llama-swap.exe"), port=8080),
    ResidentKind("llama-server", "llama-server", ("llama-server", "llama-server.exe"), port=8080),
    # ComfyUI is `python main.py` in its folder (or the comfy-cli / desktop launcher)
    ResidentKind(
        "ComfyUI",
        "comfyui",
        ("python*", "comfy*", "comfyui*"),
        cmdline_any=("comfyui", "comfy launch"),
        port=8188,
    ),
    ResidentKind("LM Studio", "lmstudio", ("lm studio*", "lm-studio*", "lmstudio*", "llmster*"), port=1234),
)


def kind_named(name: str, kinds: tuple[ResidentKind, ...] = BUILTIN) -> ResidentKind | None:
    wanted = name.strip().lower()
    return next((k for k in kinds if k.name.lower() == wanted), None)
