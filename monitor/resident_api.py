"""Each resident's own API on loopback: what it holds, whether it serves a request, and the call that
makes it let go of its memory. Standard library HTTP with short timeouts; nothing here raises.

Sources (docs/residents.md has the full citations):
* Ollama: ``GET /api/ps`` → ``{"models": [{"name", "size", "size_vram", "expires_at"}]}``; a model
  unloads on ``POST /api/generate {"model": M, "keep_alive": 0}`` (docs/api.md "Unload a model").
  ``expires_at`` moves on every request, which is how activity is seen (Ollama has no in-flight count).
* ComfyUI: ``GET /queue`` → ``{"queue_running": [...], "queue_pending": [...]}``; ``GET /system_stats``
  → ``{"devices": [{"torch_vram_total", ...}]}``; ``POST /free {"unload_models": true,
  "free_memory": true}`` sets flags the prompt worker acts on between prompts (server.py, main.py).
* llama-server: ``GET /slots`` → ``[{"id", "is_processing"}]``; ``GET /v1/models``; in router mode
  ``GET /models`` (``status.value``: ``loaded``, ``loading``, ``unloaded``), ``GET /slots?model=M`` per
  loaded model and ``POST /models/unload {"model": M}`` (tools/server/README.md; checked against the
  real llama-server b10434 in tests/scheduler/test_real_llama_server.py).
* llama-swap: ``GET /running`` → ``{"running": [{"model", "state"}]}``; ``GET /unload`` (README, #58, #61).
* LM Studio: ``GET /api/v0/models`` → ``{"data": [{"id", "state": "loaded"}]}``; ``lms unload --all``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from gputray.monitor.resident_kinds import ApiName, FreeCall

PROBE_TIMEOUT_S = 0.5
FREE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Probe:
    """What a resident's API said; ``answered`` False when it did not (then the rest is unknown)."""

    answered: bool
    models: tuple[str, ...] = ()
    held_bytes: int | None = None  # GPU memory by its own account; None: it does not say
    busy: bool | None = None  # serving a request now; None: it does not say
    activity: str | None = None  # changes whenever it served something (Ollama's expires_at)
    can_free: bool = True


@dataclass(frozen=True)
class FreeResult:
    ok: bool
    said: str  # what happened, in words ("POST /free: 200")


class _NoAnswer(Exception):
    pass


def _call(
    port: int, method: str, path: str, body: object = None, timeout_s: float = PROBE_TIMEOUT_S
) -> object:
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            raw = reply.read(4 * 1024 * 1024)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise _NoAnswer(f"{method} {path}: {getattr(exc, 'reason', exc)}") from exc
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def _get(port: int, path: str) -> object:
    return _call(port, "GET", path)


def _dicts(value: object) -> list[dict[str, object]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def probe(api: ApiName, port: int | None) -> Probe:
    if port is None:
        return Probe(answered=False, can_free=api == "lmstudio")
    try:
        return _PROBES[api](port)
    except _NoAnswer:
        return Probe(answered=False)


def _probe_ollama(port: int) -> Probe:
    reply = _get(port, "/api/ps")
    models = _dicts(reply.get("models") if isinstance(reply, dict) else None)
    return Probe(
        answered=True,
        models=tuple(str(m.get("name") or m.get("model")) for m in models),
        held_bytes=sum(_int(m.get("size_vram")) for m in models),
        activity="|".join(f"{m.get('name')}@{m.get('expires_at')}" for m in models),
        can_free=bool(models),
    )


def _probe_comfyui(port: int) -> Probe:
    queue = _get(port, "/queue")
    stats = _get(port, "/system_stats")
    busy = None
    if isinstance(queue, dict):
        busy = bool(queue.get("queue_running")) or bool(queue.get("queue_pending"))
    devices = _dicts(stats.get("devices") if isinstance(stats, dict) else None)
    held = sum(_int(d.get("torch_vram_total")) for d in devices) if devices else None
    return Probe(answered=True, held_bytes=held, busy=busy)


def _probe_llama_server(port: int) -> Probe:
    models: tuple[str, ...] = ()
    router = loading = False
    try:
        listed = _get(port, "/models")  # router mode lists every model with its status
        entries = _dicts(listed.get("data") if isinstance(listed, dict) else None)
        routed = [e for e in entries if isinstance(e.get("status"), dict)]
        router = bool(routed)
        models = tuple(str(e.get("id")) for e in routed if _status_value(e) == "loaded")
        loading = any(_status_value(e) == "loading" for e in routed)
    except _NoAnswer:
        pass
    if not router:
        listed = _get(port, "/v1/models")
        entries = _dicts(listed.get("data") if isinstance(listed, dict) else None)
        models = tuple(str(e.get("id")) for e in entries)
    busy = True if loading else None
    try:
        # a router answers /slots only for a model named (without: 400 "model name is missing from the
        # request"; tools/server/server-models.cpp), each model being a llama-server of its own
        asks = [f"/slots?model={urllib.parse.quote(m)}" for m in models] if router else ["/slots"]
        slots = [slot for path in asks for slot in _dicts(_get(port, path))]
        if slots and busy is None:
            busy = any(bool(s.get("is_processing")) for s in slots)
    except _NoAnswer:
        pass  # --no-slots: the per-process figures say the rest
    return Probe(answered=True, models=models, busy=busy, can_free=router and bool(models))


def _status_value(entry: dict[str, object]) -> object:
    status = entry.get("status")
    return status.get("value") if isinstance(status, dict) else None


def _probe_llama_swap(port: int) -> Probe:
    reply = _get(port, "/running")
    running = _dicts(reply.get("running") if isinstance(reply, dict) else None)
    models = tuple(str(r.get("model")) for r in running)
    busy = True if any(r.get("state") in ("starting", "stopping") for r in running) else None
    return Probe(answered=True, models=models, busy=busy, can_free=bool(models))


def _probe_lmstudio(port: int) -> Probe:
    reply = _get(port, "/api/v0/models")
    entries = _dicts(reply.get("data") if isinstance(reply, dict) else None)
    models = tuple(str(e.get("id")) for e in entries if e.get("state") == "loaded")
    return Probe(answered=True, models=models, can_free=bool(models) and lms_path() is not None)


def _probe_custom(port: int) -> Probe:
    return Probe(answered=True)  # nothing to ask: the per-process figures say what it holds


_PROBES = {
    "ollama": _probe_ollama,
    "comfyui": _probe_comfyui,
    "llama-server": _probe_llama_server,
    "llama-swap": _probe_llama_swap,
    "lmstudio": _probe_lmstudio,
    "custom": _probe_custom,
}


def free(
    api: ApiName, port: int | None, models: tuple[str, ...], custom: FreeCall | None = None
) -> FreeResult:
    """Ask the resident to let go of its GPU memory, through its own API only (never a signal)."""
    try:
        if api == "lmstudio":
            return _free_lms()
        if port is None:
            return FreeResult(False, "no port to ask")
        if api == "ollama":
            said = []
            for model in models:
                _call(port, "POST", "/api/generate", {"model": model, "keep_alive": 0}, FREE_TIMEOUT_S)
                said.append(f"POST /api/generate {{model: {model}, keep_alive: 0}}")
            return FreeResult(bool(said), "; ".join(said) or "no model loaded")
        if api == "comfyui":
            _call(port, "POST", "/free", {"unload_models": True, "free_memory": True}, FREE_TIMEOUT_S)
            return FreeResult(True, "POST /free {unload_models, free_memory}")
        if api == "llama-swap":
            _call(port, "GET", "/unload", None, FREE_TIMEOUT_S)
            return FreeResult(True, "GET /unload")
        if api == "llama-server":
            for model in models:
                _call(port, "POST", "/models/unload", {"model": model}, FREE_TIMEOUT_S)
            return FreeResult(
                bool(models), f"POST /models/unload ×{len(models)}" if models else "not a router"
            )
        call = custom or FreeCall()
        body = call.body.encode() if call.body else (b"" if call.method == "POST" else None)
        _call(port, call.method, call.path, body, FREE_TIMEOUT_S)
        return FreeResult(True, f"{call.method} {call.path}")
    except _NoAnswer as exc:
        return FreeResult(False, str(exc))


def warm(api: ApiName, port: int | None, models: tuple[str, ...]) -> FreeResult:
    """Load ``models`` again (``reload_after``): Ollama ``POST /api/generate {"model": M}`` (no prompt:
    it only loads), llama-server's router ``POST /models/load {"model": M}``; the others cannot."""
    if port is None or not models or api not in ("ollama", "llama-server"):
        return FreeResult(False, f"{api} cannot be asked to load a model")
    path = "/api/generate" if api == "ollama" else "/models/load"
    try:
        for model in models:
            _call(port, "POST", path, {"model": model}, FREE_TIMEOUT_S)
    except _NoAnswer as exc:
        return FreeResult(False, str(exc))
    return FreeResult(True, f"POST {path} ×{len(models)}")


def lms_path() -> str | None:
    """LM Studio's CLI: on PATH, else where LM Studio puts it (``~/.lmstudio/bin/lms``, ``lms.exe`` on
    Windows; older versions ``~/.cache/lm-studio/bin``), which its installer adds to PATH only for
    shells started after ``lms bootstrap``: the owner may have started before."""
    found = shutil.which("lms")
    if found is not None:
        return found
    name = "lms.exe" if sys.platform == "win32" else "lms"
    for folder in (Path.home() / ".lmstudio" / "bin", Path.home() / ".cache" / "lm-studio" / "bin"):
        if (folder / name).is_file():
            return str(folder / name)
    return None


def _free_lms() -> FreeResult:
    lms = lms_path()
    if lms is None:
        return FreeResult(False, "`lms` is not on PATH nor in ~/.lmstudio/bin")
    try:
        done = subprocess.run(
            [lms, "unload", "--all"], capture_output=True, timeout=FREE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return FreeResult(False, f"lms unload --all: {exc}")
    return FreeResult(done.returncode == 0, f"lms unload --all: exit {done.returncode}")
