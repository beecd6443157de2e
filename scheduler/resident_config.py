"""``[[resident]]`` and ``[exclusive]`` in the config: how gputray treats the GPU servers a user keeps
running, and the programs (games) that want a GPU to themselves.

```toml
[[resident]]
name = "ComfyUI"              # a built-in resident (Ollama, llama-server, llama-swap, ComfyUI, LM Studio) …
free_when_idle = "always"     # "ask" (the default) | "always" | "never"
idle_after = "10min"
reload_after = false

[[resident]]
name = "my-server"            # … or one of the user's own: a process pattern, a port, the call that frees it
process = "my-server*"
port = 9000
free_method = "POST"
free_path = "/release"
free_body = '{"all": true}'

[exclusive]
apps = ["cs2", "steam_app_*", "blender"]
settle = "30s"
```
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Literal

from gputray.monitor.resident_kinds import BUILTIN, FreeCall, ResidentKind, kind_named
from gputray.scheduler.tasks.taskfile import parse_duration

FreePolicy = Literal["ask", "always", "never"]
POLICIES: tuple[FreePolicy, ...] = ("ask", "always", "never")
DEFAULT_IDLE_AFTER_S = 600.0
DEFAULT_SETTLE_S = 30.0
RESIDENT_KEYS = (
    "name", "process", "cmdline", "port", "free_method", "free_path", "free_body",
    "free_when_idle", "idle_after", "reload_after",
)  # fmt: skip


@dataclass(frozen=True)
class ResidentPolicy:
    kind: ResidentKind
    free_when_idle: FreePolicy = "ask"
    idle_after_s: float = DEFAULT_IDLE_AFTER_S
    reload_after: bool = False


@dataclass(frozen=True)
class ExclusiveSection:
    apps: tuple[str, ...] = ()  # fnmatch patterns over process names
    settle_s: float = DEFAULT_SETTLE_S


@dataclass(frozen=True)
class ResidentsConfig:
    policies: tuple[ResidentPolicy, ...] = tuple(ResidentPolicy(k) for k in BUILTIN)
    exclusive: ExclusiveSection = ExclusiveSection()

    @property
    def kinds(self) -> tuple[ResidentKind, ...]:
        return tuple(p.kind for p in self.policies)

    def policy(self, name: str) -> ResidentPolicy | None:
        return next((p for p in self.policies if p.kind.name.lower() == name.lower()), None)


def parse_residents(
    raw_residents: object, raw_exclusive: object, source: str
) -> tuple[ResidentsConfig, list[str]]:
    """The residents' policies (built-ins first, as configured) and the exclusive apps; each bad entry
    is one problem line (``key: message``) and is left out or at its default."""
    problems: list[str] = []
    by_name = {k.name.lower(): ResidentPolicy(k) for k in BUILTIN}
    entries = raw_residents if isinstance(raw_residents, list) else []
    if raw_residents is not None and not isinstance(raw_residents, list):
        problems.append(f"resident\t{source}: `resident` must be [[resident]] tables; ignored")
    for i, entry in enumerate(entries, start=1):
        where = f"{source}: resident #{i}"
        if not isinstance(entry, dict):
            problems.append(f"resident\t{where} must be a table; ignored")
            continue
        policy = _policy(entry, where, problems)
        if policy is not None:
            by_name[policy.kind.name.lower()] = policy
    return ResidentsConfig(tuple(by_name.values()), _exclusive(raw_exclusive, source, problems)), problems


def _policy(entry: dict[str, object], where: str, problems: list[str]) -> ResidentPolicy | None:
    for key in entry:
        if key not in RESIDENT_KEYS:
            problems.append(
                f"resident.{key}\t{where}: unknown key `{key}` (known: {', '.join(RESIDENT_KEYS)}); ignored"
            )
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append(f"resident.name\t{where}: `name` must name the resident; ignored")
        return None
    kind = kind_named(name)
    process = entry.get("process")
    if kind is None or process is not None:
        if not isinstance(process, str) or not process:
            problems.append(
                f"resident.process\t{where} ({name}): not a built-in resident, so `process` "
                "(a name pattern) is needed; ignored"
            )
            return None
        port = entry.get("port")
        if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
            problems.append(
                f"resident.port\t{where} ({name}): port = {port!r} is not a TCP port (1 to 65535); ignored"
            )
            return None
        cmdline = entry.get("cmdline")
        call = FreeCall(
            method=str(entry.get("free_method", "POST")).upper(),
            path=str(entry.get("free_path", "/free")),
            body=str(entry.get("free_body", "")),
        )
        if call.method not in ("GET", "POST", "DELETE", "PUT") or not call.path.startswith("/"):
            problems.append(
                f"resident.free_path\t{where} ({name}): the free call must be GET/POST/PUT/DELETE "
                f"of a path starting with /, not {call.method} {call.path!r}; ignored"
            )
            return None
        if call.body and (why := _not_json(call.body)):
            problems.append(
                f"resident.free_body\t{where} ({name}): free_body is sent as JSON (application/json) "
                f"but is not JSON: {why}; ignored"
            )
            return None
        kind = ResidentKind(
            name.strip(),
            "custom",
            (process,),
            cmdline_any=(cmdline.lower(),) if isinstance(cmdline, str) and cmdline else (),
            port=port,
            free_call=call,
        )
    policy = entry.get("free_when_idle", "ask")
    if policy not in POLICIES:
        problems.append(
            f"resident.free_when_idle\t{where} ({name}): free_when_idle = {policy!r} "
            f'is not "ask", "always" or "never"{_did_you_mean(policy, POLICIES)}; using "ask"'
        )
        policy = "ask"
    idle_after = DEFAULT_IDLE_AFTER_S
    if "idle_after" in entry:
        try:
            idle_after = parse_duration(entry["idle_after"])
        except ValueError as exc:
            problems.append(f'resident.idle_after\t{where} ({name}): idle_after: {exc}; using "10min"')
    reload_after = entry.get("reload_after", False)
    if not isinstance(reload_after, bool):
        problems.append(
            f"resident.reload_after\t{where} ({name}): reload_after must be true or false; using false"
        )
        reload_after = False
    return ResidentPolicy(kind, policy, idle_after, reload_after)  # type: ignore[arg-type]


def _not_json(text: str) -> str | None:
    """Why ``text`` is not a JSON document (its parser's words and where), or None when it is one."""
    try:
        json.loads(text)
    except ValueError as exc:
        return str(exc)
    return None


def _did_you_mean(value: object, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(value, allowed, n=1) if isinstance(value, str) else []
    return f' (did you mean "{close[0]}"?)' if close else ""


def _exclusive(raw: object, source: str, problems: list[str]) -> ExclusiveSection:
    if raw is None:
        return ExclusiveSection()
    if not isinstance(raw, dict):
        problems.append(f"exclusive\t{source}: [exclusive] must be a table; ignored")
        return ExclusiveSection()
    apps = raw.get("apps", [])
    if not isinstance(apps, list) or not all(isinstance(a, str) and a for a in apps):
        problems.append(
            f"exclusive.apps\t{source}: exclusive.apps must be a list of process names "
            '(like ["cs2", "steam_app_*"]); ignored'
        )
        apps = []
    settle = DEFAULT_SETTLE_S
    if "settle" in raw:
        try:
            settle = parse_duration(raw["settle"])
        except ValueError as exc:
            problems.append(f"exclusive.settle\t{source}: exclusive.settle: {exc}; using 30s")
    for key in raw:
        if key not in ("apps", "settle"):
            problems.append(
                f"exclusive.{key}\t{source}: unknown key `{key}` in [exclusive] "
                "(known: apps, settle); ignored"
            )
    return ExclusiveSection(tuple(apps), settle)
