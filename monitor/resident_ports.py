"""Which TCP port a resident's API is on.

First choice: the ports its process (else its children: ComfyUI's desktop app and comfy-cli start the
Python server as a child) is *seen* listening on, through psutil. That needs the owner of each listening
socket, which is not always to be had:

* Linux: another user's process (Ollama's installer runs ``ollama serve`` as the ``ollama`` user) has
  sockets whose owner only root can read: psutil lists them with no pid.
* Windows: ``GetExtendedTcpTable`` names the owner of every socket, no privilege needed.
* Wine (8.0): it names none, every listening socket has pid 0 (also the host's own).

So where a resident is seen listening on nothing, its port is the one its command line names
(``--port 8188``, llama-swap's ``--listen :8080``) or its environment (Ollama's ``OLLAMA_HOST``), else
its kind's usual port: taken only when something listens there whose owner cannot be seen (or when
the table cannot be read at all). The resident's API probe then confirms it; ``port_from`` says which
way the port was found (``status --json``, docs/residents.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from gputray.monitor.resident_kinds import ResidentKind

PortFrom = Literal["listening", "command line", "environment", "usual port", "configured"]

_PORT_ARG = re.compile(r"^--port(?:=(\d+))?$")
_LISTEN_ARG = re.compile(r"^--listen(?:=(\S+))?$")
_HOST_PORT = re.compile(r":(\d+)$")


@dataclass(frozen=True)
class PortGuess:
    port: int
    source: PortFrom


def listening_ports(proc: object) -> list[int] | None:
    """The TCP ports ``proc`` (a ``psutil.Process``) listens on; None when they cannot be read."""
    try:
        listing = getattr(proc, "net_connections", None) or proc.connections  # type: ignore[attr-defined]
        conns = listing(kind="tcp")
    except Exception:  # gone, or not ours to read
        return None
    return sorted({c.laddr.port for c in conns if c.status == "LISTEN" and c.laddr})


def ownerless_listening() -> frozenset[int] | None:
    """The TCP ports something listens on whose owning process cannot be seen (module docstring);
    None when the system's table cannot be read at all (macOS without root)."""
    import psutil

    try:
        conns = psutil.net_connections(kind="tcp")
    except Exception:
        return None
    return frozenset(c.laddr.port for c in conns if c.status == "LISTEN" and c.laddr and not c.pid)


def _valid(text: str | None) -> int | None:
    if text is None or not text.isdigit():
        return None
    port = int(text)
    return port if 0 < port < 65536 else None


def named_ports(argv: Iterable[str], environ: Mapping[str, str] | None) -> list[PortGuess]:
    """The ports a resident's command line (``--port N``, ``--port=N``, ``--listen [HOST]:N``) and
    environment (``OLLAMA_HOST=[HOST:]N``) name, in that order."""
    found: list[PortGuess] = []
    args = list(argv)
    for i, arg in enumerate(args):
        following = args[i + 1] if i + 1 < len(args) else None
        if m := _PORT_ARG.match(arg):
            port = _valid(m.group(1) if m.group(1) is not None else following)
        elif m := _LISTEN_ARG.match(arg):
            value = m.group(1) if m.group(1) is not None else following
            hit = _HOST_PORT.search(value or "")
            port = _valid(hit.group(1) if hit else None)
        else:
            continue
        if port is not None:
            found.append(PortGuess(port, "command line"))
    host = (environ or {}).get("OLLAMA_HOST", "").strip().removeprefix("http://").rstrip("/")
    if host:
        hit = _HOST_PORT.search(host)
        port = _valid(hit.group(1) if hit else (host if host.isdigit() else None))
        if port is not None:
            found.append(PortGuess(port, "environment"))
    return found


def choose_port(
    kind: ResidentKind,
    own: list[int] | None,
    family: list[int],
    named: list[PortGuess],
    ownerless: frozenset[int] | None,
) -> PortGuess | None:
    """The resident's port (module docstring): its kind's port among those it is seen listening on, else
    its first; else its children's; else a named or usual port where an unowned socket listens."""
    for seen in (own or [], family):
        if seen:
            return PortGuess(kind.port if kind.port in seen else seen[0], "listening")
    guesses = [*named, *([PortGuess(kind.port, "usual port")] if kind.port is not None else [])]
    for guess in guesses:
        if ownerless is None or guess.port in ownerless:
            return guess
    return None
