"""The doctor's results as the queue reads them: the cache file and the lookups, no probing.

``gputray doctor`` (``doctor.run_doctor``) and the queue's background checks (``env_choice``) write
``app_paths().cache_dir / "doctor.json"``; one entry per (env, device) pair, kept while the
interpreter (path and mtime), torch (version, its files' mtime), the driver of the device's vendor and
the env's extra variables stay the same. Everything here only reads files and stats them: it never
runs an interpreter, so the queue may call it from its dispatcher.
"""

from __future__ import annotations

import json
import math
import os
import platform
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import msgspec

from gputray.monitor.sysfs import read_str
from gputray.scheduler.config import ConfigError
from gputray.scheduler.paths import app_paths
from gputray.scheduler.pyenvs.registry import EnvError, PythonEnv, load_envs
from gputray.scheduler.pyenvs.selection import SeenDevice, Selection, SelectionStatus, selected_by
from gputray.scheduler.reasons.doctor_codes import Finding, Fix
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.needs import NEEDS

Verdict = Literal["works", "limited", "fails"]
CACHE_FORMAT = 2  # 2: findings and fixes as codes (a cache of 1 held English: probed again)
NEEDS_REFRESH_S = 30.0  # DoctorNeeds reads the cache again at least this often


@dataclass(frozen=True)
class Capability:
    name: str
    ok: bool
    value: float | None
    unit: str
    error: str | None = None
    detail: str | None = None

    def figure(self) -> str:
        if not self.ok:
            return "fails"
        if self.value is None:
            return "ok"
        return f"{self.value:,.1f} {self.unit}"


@dataclass(frozen=True)
class PairResult:
    """One environment on one device."""

    env_name: str
    python: str
    device_key: str
    device_name: str
    vendor: str
    verdict: Verdict
    finding: Finding  # what the doctor found (``reasons/doctor_codes``); ``reason``: its English words
    remedy: Fix | None = None  # the fix, when one is known; ``fix``: its English words
    torch_device: str | None = None
    torch_version: str | None = None
    cuda_version: str | None = None
    hip_version: str | None = None
    arch: str | None = None
    capabilities: tuple[Capability, ...] = ()
    error: str | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict, hash=False)
    probed_at_s: float = 0.0
    probe_seconds: float | None = None
    bench: bool = False
    from_cache: bool = False
    # How a job of this env is pointed at this device, and what torch saw there (``selection_learning``).
    selection: Selection | None = None
    seen_device: SeenDevice | None = None
    selection_status: SelectionStatus | None = None
    selection_reason: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra_env", MappingProxyType(dict(sorted(dict(self.extra_env).items()))))
        object.__setattr__(self, "capabilities", tuple(self.capabilities))

    @property
    def works(self) -> bool:
        return self.verdict != "fails"

    @property
    def reason(self) -> str:
        """What the doctor found, in English (``gputray doctor``, the logs)."""
        return render(self.finding)

    @property
    def fix(self) -> str | None:
        return render(self.remedy) if self.remedy is not None else None

    @property
    def unproven(self) -> bool:
        """Works, but nothing torch said proves the selection lands on this GPU."""
        return self.works and self.selection_status == "unprovable"

    def selected_by(self) -> str:
        """``HIP_VISIBLE_DEVICES=0 ✓ Radeon 780M``: the selection, its verdict, and what torch saw."""
        seen = self.seen_device.name if self.seen_device is not None else None
        return selected_by(self.selection, self.selection_status, seen)

    def capability(self, name: str) -> Capability | None:
        return next((c for c in self.capabilities if c.name == name), None)

    def passes(self, need: str) -> bool:
        """True when the pair works and every bench item behind ``need`` (``fp16``, ``sdpa``...) passed."""
        names = NEEDS.get(need.strip().lower())
        if names is None or not self.works:
            return False
        caps = [self.capability(n) for n in names]
        return all(c is not None and c.ok for c in caps)

    def to_json(self) -> dict[str, Any]:
        """``gputray doctor --json``'s pair: ``reason`` and ``fix`` in words as before, and beside them
        ``reason_code`` / ``fix_code``: the code and its arguments, stable for scripts."""
        data: dict[str, Any] = _builtins(self)
        finding, remedy = data.pop("finding"), data.pop("remedy")
        at = list(data).index("verdict") + 1
        items = list(data.items())
        words = [("reason", self.reason), ("fix", self.fix), ("reason_code", finding), ("fix_code", remedy)]
        return dict(items[:at] + words + items[at:])


def driver_versions() -> dict[str, str]:
    """Kernel driver versions that decide whether a cached result still holds, per vendor."""
    out: dict[str, str] = {}
    nvidia = read_str(Path("/sys/module/nvidia/version"))
    if nvidia is None:
        first = (read_str(Path("/proc/driver/nvidia/version")) or "").splitlines()
        nvidia = first[0] if first else None
    if nvidia is None and os.name == "nt":
        nvidia = _nvml_driver_version()
    if nvidia:
        out["nvidia"] = nvidia
    amd = read_str(Path("/sys/module/amdgpu/version"))
    if amd is None and Path("/sys/module/amdgpu").exists():
        amd = f"kernel {platform.release()}"
    if amd:
        out["amd"] = amd
    return out


def _nvml_driver_version() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            value = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return value.decode() if isinstance(value, bytes) else str(value)
    except Exception:
        return None


# ---------------------------------------------------------------------------------------------------
# The cache.


def cache_file() -> Path:
    return app_paths().cache_dir / "doctor.json"


def file_stamp(path: Path) -> tuple[int, int] | None:
    """A file's (mtime, size), None when it cannot be read: what tells a reader the file changed."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _mtime_ns(path: Path | str | None) -> int | None:
    if not path:
        return None
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


@dataclass(frozen=True)
class EnvFingerprint:
    """What must stay the same for a cached result to hold (the driver is checked per device)."""

    python: str
    python_mtime_ns: int | None
    torch_version: str | None
    torch_origin: str | None
    torch_mtime_ns: int | None
    extra_env: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra_env", MappingProxyType(dict(sorted(dict(self.extra_env).items()))))

    def still_holds(self) -> bool:
        """Cheap check without running Python: interpreter and torch files unchanged."""
        return self.python_mtime_ns == _mtime_ns(self.python) and self.torch_mtime_ns == _mtime_ns(
            self.torch_origin
        )


@dataclass(frozen=True)
class _CacheEntry:
    fingerprint: EnvFingerprint
    driver: str
    bench_requested: bool
    pair: PairResult


@dataclass(frozen=True)
class _CacheFile:
    """``doctor.json`` as written: entries of another ``format`` are not read."""

    format: int
    entries: list[_CacheEntry] = field(default_factory=list)


def _builtins(record: object) -> Any:
    """A record as JSON-ready values; its read-only mappings as plain dicts."""
    return msgspec.to_builtins(record, enc_hook=dict)


def _load_cache(path: Path) -> list[_CacheEntry]:
    try:
        raw = msgspec.json.decode(path.read_bytes())
        if isinstance(raw, dict) and raw.get("format") == 1:
            raw = _from_format_1(raw)
        doc = msgspec.convert(raw, type=_CacheFile)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return []  # no cache or a damaged one: probe again
    return doc.entries if doc.format == CACHE_FORMAT else []


def _from_format_1(raw: dict[str, Any]) -> dict[str, Any]:
    """A cache an earlier gputray wrote (its findings and fixes in English): each kept as ``Written``."""
    entries = []
    for entry in raw.get("entries") or ():
        pair = dict(entry.get("pair") or {}) if isinstance(entry, dict) else {}
        reason, fix = pair.pop("reason", ""), pair.pop("fix", None)
        pair["finding"] = {"code": "Written", "text": str(reason)}
        pair["remedy"] = {"code": "Written", "text": str(fix)} if fix else None
        entries.append({**entry, "pair": pair})
    return {**raw, "format": CACHE_FORMAT, "entries": entries}


def _save_cache(path: Path, entries: Sequence[_CacheEntry]) -> None:
    doc = _builtins(_CacheFile(CACHE_FORMAT, list(entries)))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def _driver_for(vendor: str, drivers: Mapping[str, str]) -> str:
    return drivers.get(vendor, "") if vendor in ("nvidia", "amd") else ""


def _cached_for(
    entries: Sequence[_CacheEntry],
    fp: EnvFingerprint,
    device_keys: Iterable[str],
    drivers: Mapping[str, str],
    bench: bool,
) -> list[PairResult] | None:
    mine = [e for e in entries if e.fingerprint == fp]
    if not mine:
        return None
    if any(e.driver != _driver_for(e.pair.vendor, drivers) for e in mine):
        return None
    if bench and not all(e.bench_requested for e in mine):
        return None
    if not set(device_keys) <= {e.pair.device_key for e in mine}:
        return None  # a GPU appeared since (an eGPU plugged in)
    if any(_selection_missing(e.pair) for e in mine):
        return None  # written before selections were learned: the doctor learns them once

    return [replace(e.pair, from_cache=True) for e in mine]


def _selection_missing(pair: PairResult) -> bool:
    """A working pair that an earlier gputray cached without its learned selection (the queue still
    reads it, with the vendor's usual variables, until the doctor probes again)."""
    if pair.selection is not None or not pair.works:
        return False
    return (
        pair.vendor == "cpu"
        or (pair.vendor == "nvidia" and pair.cuda_version is not None)
        or (pair.vendor == "amd" and pair.hip_version is not None)
    )


def _same_env(a: EnvFingerprint, b: EnvFingerprint) -> bool:
    return a.python == b.python and a.extra_env == b.extra_env


def record_results(
    path: Path, fp: EnvFingerprint, pairs: Sequence[PairResult], drivers: Mapping[str, str], *, bench: bool
) -> None:
    """Replace what the cache holds for this env (same interpreter and variables) by ``pairs``. The file
    is read again just before: another writer (``gputray doctor`` beside the owner's own checks) may
    have added other envs meanwhile."""
    with _WRITE_LOCK:
        kept = [e for e in _load_cache(path) if not _same_env(e.fingerprint, fp)]
        _save_cache(path, kept + [_CacheEntry(fp, _driver_for(p.vendor, drivers), bench, p) for p in pairs])


_WRITE_LOCK = threading.Lock()


def cached_results(
    envs: Sequence[PythonEnv] | None = None,
    *,
    cache_path: Path | None = None,
) -> list[PairResult]:
    """The cached pairs that still hold for the configured envs (cheap: stats files, runs nothing)."""
    if envs is None:
        try:
            envs = load_envs()
        except (EnvError, ConfigError):
            return []
    drivers = driver_versions()
    by_identity = {(str(e.python), tuple(sorted(e.extra_env.items()))): e for e in envs}
    out: list[PairResult] = []
    for entry in _load_cache(cache_path or cache_file()):
        env = by_identity.get((entry.fingerprint.python, tuple(entry.fingerprint.extra_env.items())))
        if env is None or not entry.fingerprint.still_holds():
            continue
        if entry.driver != _driver_for(entry.pair.vendor, drivers):
            continue
        out.append(replace(entry.pair, env_name=env.name, from_cache=True))
    order = {e.name: i for i, e in enumerate(envs)}
    out.sort(key=lambda p: order.get(p.env_name, len(order)))
    return out


def env_for_device(
    device_key: str, needs: Sequence[str] = (), *, device_kind: str | None = None
) -> PythonEnv | None:
    """The first configured env whose cached result on this device works and passes every need.

    ``needs`` are words like ``fp16``, ``bf16``, ``sdpa`` (see NEEDS); a need the doctor did not
    measure (``--no-bench``) does not pass. For the CPU (``device_key == "cpu"`` or
    ``device_kind == "cpu"``) any env that works on the CPU will do. Never probes: run the doctor first.
    """
    try:
        envs = load_envs()
    except (EnvError, ConfigError):
        return None
    on_cpu = device_key == "cpu" or device_kind == "cpu"
    results = cached_results(envs)
    for env in envs:
        for pair in results:
            if pair.env_name != env.name or not pair.works:
                continue
            if not (pair.device_key == device_key or (on_cpu and pair.vendor == "cpu")):
                continue
            if all(pair.passes(need) for need in needs):
                return env
    return None


class DoctorNeeds:
    """The queue's ``failed_needs``: which of a task's ``needs`` (``fp16``, ``sdpa`` …) the doctor saw fail
    on a device, read from its cache (``gputray doctor`` writes it; this never probes).

    A need fails on a device when some environment measured it there and failed, and none passed.
    A need nobody measured (no doctor run, ``--no-bench``, a device it never saw, a word the doctor
    does not know) blocks nothing. The cache is re-read when ``doctor.json`` changes and at least
    every ``NEEDS_REFRESH_S`` (an upgraded torch or driver voids results without touching the file).
    """

    def __init__(
        self,
        cache_path: Path | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cache_path = cache_path
        self._clock = clock
        self._stamp: tuple[int, int] | None = None
        self._loaded_at = -math.inf
        self._pairs: list[PairResult] = []
        self._lock = threading.Lock()

    def _results(self) -> list[PairResult]:
        path = self._cache_path or cache_file()
        stamp = file_stamp(path)
        now = self._clock()
        with self._lock:
            if stamp != self._stamp or now - self._loaded_at >= NEEDS_REFRESH_S:
                self._pairs = cached_results(cache_path=path) if stamp is not None else []
                self._stamp, self._loaded_at = stamp, now
            return self._pairs

    def __call__(self, device_key: str, needs: Collection[str]) -> frozenset[str]:
        pairs = [
            p
            for p in self._results()
            if p.device_key == device_key or (device_key == "cpu" and p.vendor == "cpu")
        ]
        failed = set()
        for need in needs:
            names = NEEDS.get(need.strip().lower())
            if not names or any(p.passes(need) for p in pairs):
                continue
            if any(
                p.works and any((c := p.capability(n)) is not None and not c.ok for n in names) for p in pairs
            ):
                failed.add(need)
        return frozenset(failed)
