"""Which Python env a torch job runs in on a device, found with no manual step.

The queue asks ``status(device)`` in each dispatch pass; the answer is one of

- ``EnvReady``: a configured env the doctor's cache (or this owner's own check) proved on that device;
- ``EnvChecking``: no configured env has a result there yet: the candidates are being probed, with the
  doctor's own probe and cache (``doctor.run_doctor``), in the thread ``gputray-env-check`` (never in
  the dispatcher or a socket handler); the task waits with "checking env cu128 on GeForce RTX 5060 Ti…";
- ``EnvMissing``: every configured env was tried there and none works: the doctor's reason and fix.

A stale result (the interpreter, torch or the driver changed: ``doctor_cache``'s rules) does not
count, so that env is probed again. A simulated GPU (the demo) cannot run kernels: a torch job placed
there runs on the CPU, in an env proven on the CPU (``EnvReady.on_cpu``), unless a result exists for
that simulated device itself (tests stand in for two GPUs that way).

``failed_needs(device_key, needs)`` says which of a task's ``needs`` (fp16 …) the doctor saw *fail* on a
device, so that placement avoids it there; a need nobody measured blocks nothing.

``ResolverChooser`` wraps a plain ``(device_key, needs) -> PythonEnv | None`` function (tests, and the
tray's custom lookups); it never probes.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gputray.monitor.records import DeviceInfo
from gputray.scheduler.config import ConfigError
from gputray.scheduler.paths import app_paths
from gputray.scheduler.pyenvs.doctor_cache import (
    DoctorNeeds,
    EnvFingerprint,
    PairResult,
    _mtime_ns,
    cache_file,
    cached_results,
    file_stamp,
)
from gputray.scheduler.pyenvs.registry import EnvError, PythonEnv, load_envs
from gputray.scheduler.reasons import codes as c
from gputray.scheduler.reasons.codes import Reason
from gputray.scheduler.reasons.doctor_codes import CheckRaised

log = logging.getLogger(__name__)

ADD_ENV_COMMAND = "gputray envs add PATH/TO/VENV"
ADD_ENV_HINT = f"{ADD_ENV_COMMAND} (a venv where `pip install torch` ran)"
REFRESH_S = 10.0  # results are re-read at least this often: an upgraded torch changes no file of ours


@dataclass(frozen=True)
class EnvReady:
    """Run in ``env``. ``on_cpu``: the device is a simulated GPU and the job runs on the CPU instead.
    ``pair``: the doctor's result there (its learned selection is what the job gets), when known."""

    env: PythonEnv
    on_cpu: bool = False
    pair: PairResult | None = None


@dataclass(frozen=True)
class EnvChecking:
    """Candidates are being probed on the device; ``reason`` says which."""

    reason: c.EnvChecking


@dataclass(frozen=True)
class EnvMissing:
    """No configured env works on the device; ``reason`` holds the doctor's reasons and fix.
    ``unproven``: one works there, but the device its torch lands on is not proven (a task may allow it)."""

    reason: Reason
    unproven: bool = False


EnvStatus = EnvReady | EnvChecking | EnvMissing


#: A plain lookup: ``(device_key, needs)`` → the env a torch job runs in there, or None.
EnvResolver = Callable[[str, Sequence[str]], PythonEnv | None]
#: ``failed_needs(device_key, needs)`` → the needs among ``needs`` the doctor saw fail on that device.
FailedNeeds = Callable[[str, frozenset[str]], Collection[str]]


class EnvChooser(Protocol):
    def status(
        self, info: DeviceInfo, needs: Collection[str] = (), *, allow_unproven: bool = False
    ) -> EnvStatus: ...

    def failed_needs(self, device_key: str, needs: frozenset[str]) -> Collection[str]: ...

    def check_all(self) -> int: ...

    def close(self) -> None: ...


def _where(info: DeviceInfo) -> str | None:
    """The device a reason names (None: the CPU)."""
    return None if info.kind == "cpu" or info.key == "cpu" else info.name


def no_env_configured(info: DeviceInfo) -> c.NoEnvConfigured:
    """The one line that says how to add an env."""
    return c.NoEnvConfigured(demo=info.simulated, command=ADD_ENV_COMMAND)


class ResolverChooser:
    """A chooser over a lookup function (``doctor_cache.env_for_device``, a test's lambda); never probes."""

    def __init__(
        self,
        resolver: EnvResolver,
        *,
        failed_needs: FailedNeeds | None = None,
    ) -> None:
        self._resolver = resolver
        self._failed_needs = failed_needs

    def failed_needs(self, device_key: str, needs: frozenset[str]) -> Collection[str]:
        return self._failed_needs(device_key, needs) if self._failed_needs is not None else ()

    def status(
        self, info: DeviceInfo, needs: Collection[str] = (), *, allow_unproven: bool = False
    ) -> EnvStatus:
        wanted = tuple(needs)
        env = self._resolver(info.key, wanted)
        if env is not None:
            return EnvReady(env)
        if info.simulated:
            env = self._resolver("cpu", wanted)
            if env is not None:
                return EnvReady(env, on_cpu=True)
            return EnvMissing(no_env_configured(info))
        return EnvMissing(c.NoEnvKnown(device=_where(info)))

    def check_all(self) -> int:
        return 0

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class _Checked:
    """What this owner's own check of an env found (kept beside the cache: a broken interpreter's
    results are not cached by the doctor, and a device the probe did not report has no row)."""

    fingerprint: EnvFingerprint | None
    python_mtime_ns: int | None
    device_keys: frozenset[str]
    pairs: tuple[PairResult, ...]

    def still_holds(self, env: PythonEnv) -> bool:
        if self.fingerprint is not None:
            return self.fingerprint.still_holds()
        return _mtime_ns(env.python) == self.python_mtime_ns


def _identity(env: PythonEnv) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    return (env.name, str(env.python), tuple(sorted(env.extra_env.items())))


Prober = Callable[[PythonEnv, Sequence[DeviceInfo]], tuple[EnvFingerprint | None, list[PairResult]]]


def doctor_probe(
    env: PythonEnv, devices: Sequence[DeviceInfo]
) -> tuple[EnvFingerprint | None, list[PairResult]]:
    """The doctor's own run for one env (probe, bench, cache), as ``gputray doctor --env NAME`` does."""
    from gputray.scheduler.pyenvs.doctor import fingerprint, run_doctor

    fp, _ = fingerprint(env)
    return fp, run_doctor([env], devices)


class ProbingChooser:
    """The owner's chooser: the doctor's cache, plus background checks of envs without a result."""

    def __init__(
        self,
        *,
        devices: Callable[[], Sequence[DeviceInfo]],
        on_change: Callable[[], None],
        cache_path: Path | None = None,
        probe: Prober = doctor_probe,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._devices = devices
        self._on_change = on_change
        self._cache_path = cache_path
        self._probe = probe
        self._clock = clock
        self._lock = threading.Lock()
        self._stamp: tuple[object, ...] | None = None
        self._loaded_at = -math.inf
        self._envs: list[PythonEnv] = []
        self._config_error: str | None = None
        self._pairs: list[PairResult] = []
        self._checked: dict[tuple[str, str, tuple[tuple[str, str], ...]], _Checked] = {}
        self._wanted: list[PythonEnv] = []  # waiting to be checked, in order
        self._current: PythonEnv | None = None
        self._jobs: queue.Queue[PythonEnv | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.checks = 0  # envs checked (for tests and the log)
        self._doctor_needs = DoctorNeeds(cache_path=cache_path)

    def failed_needs(self, device_key: str, needs: frozenset[str]) -> Collection[str]:
        return self._doctor_needs(device_key, needs)

    # -- reading ------------------------------------------------------------------------------
    def _refresh(self) -> None:
        config = app_paths().config_file
        cache = self._cache_path or cache_file()
        stamp = (file_stamp(config), file_stamp(cache))
        now = self._clock()
        if stamp == self._stamp and now - self._loaded_at < REFRESH_S:
            return
        try:
            self._envs, self._config_error = load_envs(config), None
        except (EnvError, ConfigError) as exc:
            self._envs, self._config_error = [], str(exc)
        self._pairs = cached_results(self._envs, cache_path=cache) if self._envs else []
        self._stamp, self._loaded_at = stamp, now

    def _pairs_on(self, env: PythonEnv, target: str) -> tuple[list[PairResult], bool]:
        """This env's results on ``target`` (a device key or ``cpu``), and whether it was checked there."""

        def on_target(p: PairResult) -> bool:
            return p.device_key == target or (target == "cpu" and p.vendor == "cpu")

        cached = [p for p in self._pairs if p.env_name == env.name and on_target(p)]
        if cached:
            return cached, True
        checked = self._checked.get(_identity(env))
        if checked is None or not checked.still_holds(env):
            return [], False
        mine = [p for p in checked.pairs if on_target(p)]
        return mine, bool(mine) or target in checked.device_keys

    def status(
        self, info: DeviceInfo, needs: Collection[str] = (), *, allow_unproven: bool = False
    ) -> EnvStatus:
        """``allow_unproven``: an env whose selection on this GPU could not be proven counts as working
        (a task's ``allow_unproven``); a wrong-device pair never does (the doctor marked it failed)."""
        with self._lock:
            self._refresh()
            if self._config_error is not None:
                return EnvMissing(c.EnvListUnreadable(error=str(self._config_error)))
            if not self._envs:
                return EnvMissing(no_env_configured(info))
            on_cpu = False
            target = "cpu" if info.kind == "cpu" else info.key
            if info.simulated and not any(p.device_key == info.key for p in self._pairs):
                target, on_cpu = "cpu", True
            working: list[tuple[PythonEnv, PairResult]] = []
            unchecked: list[PythonEnv] = []
            failures: list[PairResult] = []
            unproven: list[PairResult] = []
            for env in self._envs:
                pairs, checked = self._pairs_on(env, target)
                usable = [p for p in pairs if p.works and (allow_unproven or not p.unproven)]
                if usable:
                    if all(any(p.passes(n) for p in usable) for n in needs):
                        return EnvReady(env, on_cpu, usable[0])
                    working.append((env, usable[0]))
                elif any(p.unproven for p in pairs):
                    unproven += [p for p in pairs if p.unproven]
                elif not checked:
                    unchecked.append(env)
                else:
                    failures += pairs
            if working:  # none passed every need: the first that works (placement checks the needs)
                return EnvReady(working[0][0], on_cpu, working[0][1])
            where = None if target == "cpu" else info.name
            demo = info.name if on_cpu else None
            if unchecked:
                self._want(unchecked)
                current = self._current if self._current in unchecked else unchecked[0]
                assert current is not None
                return EnvChecking(c.EnvChecking(env=current.name, device=where, demo_for=demo))
            if unproven:
                first = unproven[0]
                return EnvMissing(
                    c.EnvUnproven(env=first.env_name, device=where, why=str(first.selection_reason)),
                    unproven=True,
                )
            return EnvMissing(self._missing_reason(failures, where, demo))

    @staticmethod
    def _missing_reason(failures: Sequence[PairResult], where: str | None, demo: str | None) -> c.NoEnvWorks:
        return c.NoEnvWorks(
            device=where,
            demo_for=demo,
            failures=tuple(c.EnvFailure(p.env_name, p.finding) for p in failures),
            fix=next((p.remedy for p in failures if p.remedy is not None), None),
        )

    def check_all(self) -> int:
        """Check in the background every env that has no current result on some device (``envs add``);
        the number of envs queued."""
        keys = ["cpu", *(d.key for d in self._devices() if d.kind != "cpu" and not d.simulated)]
        with self._lock:
            self._stamp = None  # the env list may have just changed
            self._refresh()
            todo = [e for e in self._envs if not all(self._pairs_on(e, k)[1] for k in keys)]
            self._want(todo)
            return len(todo)

    # -- checking -----------------------------------------------------------------------------
    def _want(self, envs: Sequence[PythonEnv]) -> None:
        """Queue envs for a check (lock held); each at most once while it waits or runs."""
        if self._closed:
            return
        for env in envs:
            if env in self._wanted or env == self._current:
                continue
            self._wanted.append(env)
            self._jobs.put(env)
        if self._thread is None and self._wanted:
            self._thread = threading.Thread(target=self._loop, name="gputray-env-check", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            env = self._jobs.get()
            if env is None:
                return
            with self._lock:
                if self._closed:
                    return
                if env in self._wanted:
                    self._wanted.remove(env)
                self._current = env
            devices = [d for d in self._devices() if d.kind != "cpu"]
            started = time.perf_counter()
            try:
                fp, pairs = self._probe(env, devices)
            except Exception as exc:  # a broken env must not end the checks
                log.exception("checking env %s failed", env.name)
                fp, pairs = None, _failed_check(env, devices, exc)
            log.info(
                "checked env %s in %.1f s: %s",
                env.name,
                time.perf_counter() - started,
                ", ".join(f"{p.device_name} {p.verdict}" for p in pairs) or "no result",
            )
            keys = frozenset({"cpu", *(d.key for d in devices if not d.simulated)})
            with self._lock:
                self._checked[_identity(env)] = _Checked(fp, _mtime_ns(env.python), keys, tuple(pairs))
                self._current = None
                self._stamp = None  # read the cache again
                self.checks += 1
            try:
                self._on_change()
            except Exception:
                log.exception("env check callback failed")

    def busy(self) -> bool:
        """Whether a check runs or waits (for tests)."""
        with self._lock:
            return self._current is not None or bool(self._wanted)

    def close(self) -> None:
        """Stop after the check that runs (a probe has its own timeout and process group)."""
        with self._lock:
            self._closed = True
            self._wanted.clear()
        self._jobs.put(None)


def _failed_check(env: PythonEnv, devices: Sequence[DeviceInfo], exc: Exception) -> list[PairResult]:
    """A "fails" row per device for a check that raised (it is logged too)."""
    where = [("cpu", "CPU", "cpu"), *((d.key, d.name, str(d.vendor)) for d in devices if not d.simulated)]
    return [
        PairResult(
            env_name=env.name,
            python=str(env.python),
            device_key=key,
            device_name=name,
            vendor=vendor,
            verdict="fails",
            finding=CheckRaised(error=f"{type(exc).__name__}: {exc}"),
            extra_env=dict(env.extra_env),
        )
        for key, name, vendor in where
    ]
