"""The queue, in-process: submit, cancel, retry, move, pause; dispatch jobs onto free devices.

One QueueService per owner process (tray app or ``gputray daemon``). It reads device states from the
Monitor, decides with ``placement.plan`` and starts jobs with ``launcher.launch``; the TaskStore
holds every state change durably.

**Threads.** Public methods are thread-safe. ``dispatch()`` runs one pass synchronously.
Submits, job exits, cancels, monitor ticks and timers call ``request_dispatch()``, which wakes a
dispatcher thread (started by ``start()``); bursts coalesce into one pass, so 10,000 submits do not
cost 10,000 passes. A job's exit wakes it at once (``urgent``). Events go to ``on_event`` from a
separate thread, in order, never while a lock is held.

**Lifecycle.** ``start()`` recovers tasks a crash left running (interrupted → requeued or failed by
their retry policy; a leftover process is killed first), subscribes to monitor ticks and dispatches.
``close()`` stops dispatching and leaves running jobs alone (they run on in their own sessions; if the
process then exits, the next ``start()`` treats them as interrupted). ``close(kill_running=True)``
stops them instead; they end ``interrupted`` and follow their retry policy.

**Devices.** Each monitor device plus ``cpu``. One job per device by default (``slots`` changes it
per device key; the iGPU should stay at 1). A device lost mid-job (state ``lost`` or gone from the
snapshot) kills the job; it ends interrupted and follows its retry/redirect policy.
Our jobs are announced to the monitor (``job_started``/``job_ended``) so they do not count as
external use, and in demo mode to the simulated backend (``sim_hooks``) so its load follows them.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import json
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gputray.monitor.monitor import Monitor
from gputray.monitor.records import DeviceInfo, Snapshot
from gputray.scheduler.envs import PythonEnv
from gputray.scheduler.launch_env import (
    LaunchError,
    activate_python,
    build_env,
    free_out_path,
    placeholder_values,
    render_argv,
    rocm_index_for,
    uses_placeholder,
)
from gputray.scheduler.launcher import Job, LaunchFailed, launch
from gputray.scheduler.paths import Paths
from gputray.scheduler.pause_file import PAUSE_ALL, read_paused, write_paused
from gputray.scheduler.placement import (
    GENERIC_PREFS,
    DeviceState,
    GiveUp,
    Placement,
    Wait,
    cpu_state,
    plan,
    resolve_pref,
    wait_started_s,
)
from gputray.scheduler.recipes import Recipe, check_runnable, specs_for_files
from gputray.scheduler.store import QUEUE_FILE_VAR, TaskNotFound, TaskStore
from gputray.scheduler.tasks import PENDING_STATES, QueueEvent, TaskRecord, TaskSpec, iso_utc

__all__ = ["QueueError", "QueueEvent", "QueueService", "SimHooks", "TaskNotFound", "TaskStateError"]

log = logging.getLogger(__name__)

EnvResolver = Callable[[str, Sequence[str]], PythonEnv | None]
VkIndexResolver = Callable[[DeviceInfo, Mapping[str, str], Sequence[DeviceInfo]], int | None]
#: ``failed_needs(device_key, needs)`` → the needs among ``needs`` the doctor saw fail on that device.
FailedNeeds = Callable[[str, frozenset[str]], Collection[str]]
TICK_PASS_BUDGET = 20.0  # a monitor tick starts a pass only if the last one ended 20x its duration ago
REQUEST_PASS_BUDGET = 10.0  # a submit/cancel starts a pass only if the last one ended 10x its duration ago
MAX_REQUEST_GAP_S = 1.0  # ... but never later than this
GONE_AFTER_TICKS = 3  # snapshots in a row without a device before its jobs are stopped


class QueueError(Exception):
    """A request the queue cannot honour; the message says why."""


class TaskStateError(QueueError, ValueError):
    """The task is in a state that does not allow this (cancel a finished task, move a running one)."""


class SimHooks(Protocol):
    """What the simulated backend offers so that its load follows our demo jobs."""

    def job_started(
        self, pid: int, name: str, device_key: str, util_percent: float = 90.0, vram_bytes: int | None = None
    ) -> None: ...

    def job_ended(self, pid: int) -> None: ...


@dataclass
class _Running:
    task_id: int
    job: Job
    device: str
    spec: TaskSpec
    pid: int
    out: str | None = None  # the {out} file it writes, kept from other jobs until it ends


@dataclass
class _Gate:
    due_s: float | None = None
    reasons: dict[int, str] = field(default_factory=dict)


def default_vk_index(info: DeviceInfo, env: Mapping[str, str], known: Sequence[DeviceInfo]) -> int | None:
    """The Vulkan index for ``{vk_index}``: the identity map for real GPUs; for simulated GPUs their
    rank among the simulated devices (demo only, there is no real device behind them)."""
    if info.simulated:
        sims = sorted(d.key for d in known if d.simulated and d.kind != "cpu")
        return sims.index(info.key) if info.key in sims else None
    if info.kind == "cpu":
        return None
    try:
        from gputray.monitor.device_map import vulkan_index_for

        return vulkan_index_for(info.key, env, known)
    except Exception:  # optional: a broken Vulkan stack must not stop the queue
        log.exception("Vulkan index lookup failed")
        return None


class QueueService:
    """The queue API used by the IPC owner, the CLI handlers and the tray. See the module docstring."""

    def __init__(
        self,
        store: TaskStore,
        monitor: Monitor,
        *,
        paths: Paths,
        clock: Callable[[], float] = time.time,
        env_resolver: EnvResolver | None = None,
        on_event: Callable[[QueueEvent], None] | None = None,
        sim_hooks: SimHooks | None = None,
        vk_index_of: VkIndexResolver | None = None,
        capabilities: Callable[[str], frozenset[str] | None] | None = None,
        failed_needs: FailedNeeds | None = None,
        slots: Mapping[str, int] | None = None,
        cpu_slots: int = 1,
        overtake_limit: int = 3,
        recipes: Sequence[Recipe] | None = None,
        base_env: Mapping[str, str] | None = None,
        check_programs: bool = True,
        runs_here: Callable[[TaskRecord], bool] | None = None,
        check_spec: Callable[[TaskSpec], None] | None = None,
    ) -> None:
        """``env_resolver(device_key, needs)`` picks the Python env for torch jobs (the doctor's
        ``env_for_device``); None or no env → ``sys.executable``, said in the task's reason.
        ``sim_hooks`` defaults to the monitor's simulated backend when it has one. ``vk_index_of`` maps a
        device to its Vulkan index in the job's environment (default: ``monitor.device_map``).
        ``capabilities(device_key)`` → what the doctor proved there (for ``needs``), None = unknown.
        ``failed_needs(device_key, needs)`` → which of the pending tasks' ``needs`` the doctor saw
        *fail* there (the owner reads the doctor's cache); a need nobody measured does not block.
        ``capabilities`` wins when both are given.
        ``base_env`` replaces ``os.environ`` as the base of every job's environment.
        ``runs_here(task)`` (the cluster link): False for a pending task another machine runs or the
        cluster bridge has still to place; this queue then leaves it alone. ``check_spec`` replaces
        the submit-time ``check_runnable`` (the cluster link checks a task bound for another machine).
        """
        self.store = store
        self.monitor = monitor
        self.paths = paths
        self.clock = clock
        self.env_resolver = env_resolver
        self.on_event = on_event
        if sim_hooks is None:
            backend = monitor.backend("simulated") if hasattr(monitor, "backend") else None
            if backend is not None and hasattr(backend, "job_started") and hasattr(backend, "job_ended"):
                sim_hooks = backend  # type: ignore[assignment]
        self.sim_hooks = sim_hooks
        self.vk_index_of = vk_index_of or default_vk_index
        self.capabilities = capabilities
        self.failed_needs = failed_needs
        self.slots = dict(slots or {})
        self.cpu_slots = cpu_slots
        self.overtake_limit = overtake_limit
        self.recipes = recipes
        self.base_env = base_env
        self.check_programs = check_programs
        self.runs_here = runs_here
        self.check_spec = check_spec

        self._lock = threading.RLock()
        self._jobs: dict[int, _Running] = {}
        self._absent_ticks: dict[str, int] = {}
        self._names_used: dict[str, str] = {}  # device key -> name, kept for messages after it vanished
        self._last_pass_s = 0.0
        self._last_pass_end = 0.0
        self._requested = False
        self._tick_pending = False
        self._paused_all = False
        self._paused_devices: set[str] = set()
        self._load_paused()
        self._closed = False
        self._started = False
        self._wake = threading.Event()
        self._urgent = threading.Event()
        self._due_s: float | None = None
        self._dispatcher: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._events: queue.Queue[QueueEvent | None] = queue.Queue()
        self._event_thread: threading.Thread | None = None
        self.passes = 0  # dispatch passes run (for tests and benches)

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Recover interrupted tasks, subscribe to monitor ticks, start the dispatcher, dispatch."""
        with self._lock:
            if self._started:
                return
            self._started = True
            self._closed = False
        self._event_thread = threading.Thread(
            target=self._event_loop, name="gputray-queue-events", daemon=True
        )
        self._event_thread.start()
        for rec in self.store.recover_after_crash():
            kind = "interrupted"
            self._emit(kind, rec.record, f"{rec.record.name}: {rec.record.reason}")
        if self.monitor.latest is None:
            self.monitor.sample_once()
        self._unsubscribe = self.monitor.subscribe(self._on_snapshot)
        self._dispatcher = threading.Thread(target=self._dispatch_loop, name="gputray-dispatch", daemon=True)
        self._dispatcher.start()
        self.request_dispatch(urgent=True)

    def close(self, *, kill_running: bool = False) -> None:
        """Stop dispatching. Running jobs are left running unless ``kill_running`` (then: interrupted)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            running = list(self._jobs.values())
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._wake.set()
        self._urgent.set()
        if self._dispatcher is not None and self._dispatcher is not threading.current_thread():
            self._dispatcher.join(timeout=10)
        if kill_running:
            for r in running:
                r.job.cancel("shutdown")
            for r in running:
                r.job.wait(timeout=15)
        if self._event_thread is not None:
            self._events.put(None)
            if self._event_thread is not threading.current_thread():
                self._event_thread.join(timeout=10)
        self._started = False

    # -- queries --------------------------------------------------------------------------------
    def list(self, *, include_finished: bool = True) -> builtins.list[TaskRecord]:
        """Tasks: running first, then pending in dispatch order, then finished ones by id."""
        return self.store.list(include_finished=include_finished)

    def get(self, task_id: int) -> TaskRecord:
        """One task; raises TaskNotFound (a KeyError) whose ``str()`` reads 'no task #N in the queue'."""
        return self.store.get(task_id)

    def paused(self) -> dict[str, bool]:
        """``{"queue": whole-queue pause, <device key>: paused, …}`` for every known device and ``cpu``."""
        out = {PAUSE_ALL: self._paused_all}
        for key in self._known_keys():
            out[key] = key in self._paused_devices
        for key in self._paused_devices:
            out[key] = True
        return out

    # -- commands -------------------------------------------------------------------------------
    def submit(self, spec: TaskSpec) -> TaskRecord:
        """Queue one task. Checks that its program / script / files exist (SubmitError otherwise)."""
        if self.check_programs:
            (self.check_spec or check_runnable)(spec)
        rec = self.store.add(spec, now=self.clock())
        self._emit("queued", rec, f"{rec.name} queued as #{rec.id}")
        self.request_dispatch()
        return rec

    def submit_files(
        self, files: Sequence[Path], *, recipe: str | None = None, overrides: Mapping[str, Any] = {}
    ) -> builtins.list[TaskRecord]:
        """One task per file from its recipe (``recipe`` forces one); all are checked before any is queued.

        ``overrides`` are task-file keys (``devices``, ``on_busy``, ``vram``, ``max_wait`` …).
        Raises SubmitError / RecipeError / ToolNotFound with a message naming the file or program.
        """
        specs = specs_for_files(
            [Path(f) for f in files],
            recipe=recipe,
            overrides=overrides,
            recipes=self.recipes,
            check=self.check_programs,
        )
        if self.check_programs and self.check_spec is not None:
            for spec in specs:
                self.check_spec(spec)
        records = self.store.add_many(specs, now=self.clock())
        for rec in records:
            self._emit("queued", rec, f"{rec.name} queued as #{rec.id}")
        self.request_dispatch()
        return records

    def cancel(self, task_id: int) -> TaskRecord:
        """Cancel a pending task, or stop a running one (its whole process tree); waits up to ~10 s for it."""
        with self._lock:
            rec = self.store.get(task_id)
            if rec.state in PENDING_STATES or rec.state == "interrupted":
                new = self.store.compare_and_update(
                    task_id, rec.state, state="cancelled", reason="cancelled", ended_at=self.clock()
                )
                if new is None:  # it just started: cancel the running job below
                    rec = self.store.get(task_id)
                else:
                    self._emit("cancelled", new, f"{new.name} cancelled")
                    self.request_dispatch()
                    return new
            if rec.state in {"succeeded", "failed", "cancelled"}:
                if rec.state == "cancelled":
                    return rec
                raise TaskStateError(f"task #{task_id} already {rec.state}; nothing to cancel")
            running = self._jobs.get(task_id)
        if running is None:  # running in the store but not ours (should not happen after recovery)
            new = self.store.update(task_id, state="cancelled", reason="cancelled", ended_at=self.clock())
            self._emit("cancelled", new, f"{new.name} cancelled")
            return new
        running.job.cancel("cancelled")
        running.job.wait(timeout=10)
        return self.store.get(task_id)

    def retry(self, task_id: int) -> TaskRecord:
        """Queue a finished task again (at the end of the queue, attempts counted afresh)."""
        with self._lock:
            rec = self.store.get(task_id)
            if rec.state in PENDING_STATES or rec.state == "running":
                raise TaskStateError(f"task #{task_id} is {rec.state}; retry is for finished tasks")
            now = self.clock()
            position = self.store.next_position()
            new = self.store.compare_and_update(
                task_id,
                rec.state,
                state="queued",
                reason="queued again by request",
                attempts=0,
                exit_code=None,
                started_at=None,
                ended_at=None,
                device=None,
                env=None,
                pid=None,
                pid_create_time=None,
                not_before=None,
                queued_at=now,
                overtakes=0,
                position=position,
                machine=None,  # placed afresh, on any machine its spec allows
                remote_id=None,
                remote_state=None,
            )
            if new is None:
                raise TaskStateError(f"task #{task_id} changed state meanwhile; try again")
        self._emit("queued", new, f"{new.name} queued again as #{new.id}")
        self.request_dispatch()
        return new

    def move(self, task_id: int, delta: int) -> TaskRecord:
        """Move a pending task up (negative) or down (positive) among pending tasks.

        It takes the priority of the task it lands next to, so moving across a priority boundary works.
        """
        with self._lock:
            rec = self.store.get(task_id)
            if rec.state not in PENDING_STATES:
                raise TaskStateError(f"task #{task_id} is {rec.state}; only queued or waiting tasks move")
            order = self.store.pending()
            index = next(i for i, r in enumerate(order) if r.id == task_id)
            others = [r for r in order if r.id != task_id]
            target = max(0, min(len(others), index + delta))
            if target == index or not others:
                return rec
            before = others[target - 1] if target > 0 else None
            after = others[target] if target < len(others) else None
            if delta < 0:
                assert after is not None
                priority = after.spec.priority
                if before is not None and before.spec.priority == priority:
                    position = (before.position + after.position) / 2
                else:
                    position = after.position - 1
            else:
                assert before is not None
                priority = before.spec.priority
                if after is not None and after.spec.priority == priority:
                    position = (before.position + after.position) / 2
                else:
                    position = before.position + 1
            new = self.store.set_priority_position(task_id, priority, position)
        self.request_dispatch()
        return new

    def pause(self, device_key: str | None = None) -> None:
        """Stop starting jobs on one device (a key or a name like ``5060ti``), or everywhere (None)."""
        with self._lock:
            if device_key is None:
                self._paused_all = True
            else:
                self._paused_devices.add(self._device_key(device_key))
            self._save_paused()
        self.request_dispatch()

    def resume(self, device_key: str | None = None) -> None:
        """Undo ``pause``; ``None`` resumes the whole queue *and* every device."""
        with self._lock:
            if device_key is None:
                self._paused_all = False
                self._paused_devices.clear()
            else:
                self._paused_devices.discard(self._device_key(device_key))
            self._save_paused()
        self.request_dispatch(urgent=True)

    # -- dispatch -------------------------------------------------------------------------------
    def request_dispatch(self, *, urgent: bool = False) -> None:
        """Ask the dispatcher thread for a pass soon (coalesced). Before ``start()`` this does nothing."""
        self._requested = True
        if urgent:
            self._urgent.set()  # before the wake-up, so the woken dispatcher sees it
        self._wake.set()

    def dispatch(self) -> None:
        """One dispatch pass now, in the calling thread: start what can start, record why the rest waits."""
        with self._lock:
            if self._closed:
                return
            self.passes += 1
            now = self.clock()
            pending = self.store.pending()
            if self.runs_here is not None:
                pending = [r for r in pending if self.runs_here(r)]
            if not pending:
                self._due_s = None
                return
            if self._paused_all:
                self._record_waits([(r, Wait("the queue is paused")) for r in pending])
                self._due_s = None
                return
            snapshot = self.monitor.latest
            wanted = frozenset(n for r in pending for n in r.spec.needs)
            devices = self._device_states(snapshot, needs=wanted)
            result = plan(pending, devices, now_s=now, overtake_limit=self.overtake_limit)
            waits: builtins.list[tuple[TaskRecord, Wait]] = []
            due: builtins.list[float] = []
            known = [d.info for d in devices]
            for task, decision in result.decisions:
                if isinstance(decision, Placement):
                    self._start(task, decision, devices, known)
                elif isinstance(decision, GiveUp):
                    new = self.store.compare_and_update(
                        task.id, task.state, state="failed", reason=decision.reason, ended_at=now
                    )
                    if new is not None:
                        self._emit("failed", new, f"{new.name}: {decision.reason}")
                else:
                    waits.append((task, decision))
                    if decision.until_s is not None:
                        due.append(decision.until_s)
                    elif task.spec.max_wait_s is not None:
                        due.append(wait_started_s(task) + task.spec.max_wait_s)
            self._record_waits(waits, result.overtakes)
            self._due_s = min(due) if due else None

    def _record_waits(
        self, waits: Sequence[tuple[TaskRecord, Wait]], overtakes: Mapping[int, int] = {}
    ) -> None:
        updates: builtins.list[tuple[int, dict[str, Any]]] = []
        for task, wait in waits:
            cols: dict[str, Any] = {}
            if task.state != "waiting":
                cols["state"] = "waiting"
            if task.reason != wait.reason:
                cols["reason"] = wait.reason
            if task.id in overtakes and overtakes[task.id] != task.overtakes:
                cols["overtakes"] = overtakes[task.id]
            if cols:
                updates.append((task.id, cols))
        if updates:
            # Only rows still pending: a cancel may have raced this pass.
            self.store.update_many(updates, only_states=PENDING_STATES)
        for task, wait in waits:
            if task.state == "queued":
                self._emit(
                    "waiting",
                    task.replace(state="waiting", reason=wait.reason),
                    f"{task.name}: {wait.reason}",
                )

    def _start(
        self,
        task: TaskRecord,
        decision: Placement,
        devices: Sequence[DeviceState],
        known: Sequence[DeviceInfo],
    ) -> None:
        info = next(d.info for d in devices if d.key == decision.device)
        spec = task.spec
        now = self.clock()
        notes: builtins.list[str] = []
        if decision.reason:
            notes.append(decision.reason)
        python: str | None = None
        env_name: str | None = None
        extra: Mapping[str, str] = {}
        if spec.kind == "torch":
            pyenv = None
            if self.env_resolver is not None:
                try:
                    pyenv = self.env_resolver(info.key, spec.needs)
                except Exception as exc:  # the doctor's lookup must not stop the queue
                    notes.append(f"env lookup failed ({exc})")
            if pyenv is None:
                python = sys.executable
                env_name = None
                where = "CPU" if info.kind == "cpu" else info.name
                notes.append(
                    f"no Python env is known to work on {where}: using gputray's own Python ({python})"
                )
            else:
                python = str(pyenv.python)
                env_name = pyenv.name
                extra = pyenv.extra_env
        log_path = self.paths.logs_dir / f"task-{task.id}.log"
        attempt = task.attempts + 1
        reason = "; ".join(notes)
        started = self.store.compare_and_update(
            task.id,
            task.state,
            state="running",
            device=info.key,
            env=env_name,
            reason=reason,
            attempts=attempt,
            started_at=now,
            ended_at=None,
            exit_code=None,
            log_path=str(log_path),
            pid=None,
            not_before=None,
        )
        if started is None:
            return  # cancelled or changed meanwhile
        if spec.base_env is not None:  # the submitter's environment
            base_env = dict(spec.base_env)
        else:
            base_env = dict(self.base_env) if self.base_env is not None else dict(os.environ)
        out: str | None = None
        out_note = ""
        try:
            rocm = rocm_index_for(info, known) if info.vendor == "amd" and info.kind != "cpu" else None
            values: dict[str, str] | None = None  # None: a command's argv is the user's own, verbatim
            if spec.fills_placeholders:
                vk_index = None
                if uses_placeholder(spec, "vk_index"):
                    probe_env = build_env(base_env, info, task_id=task.id, extra=extra, rocm_index=rocm)
                    vk_index = self.vk_index_of(info, probe_env, known)
                values = placeholder_values(spec, device_key=info.key, vk_index=vk_index)
                if uses_placeholder(spec, "out"):
                    wanted = values["out"]
                    out = values["out"] = free_out_path(wanted, {r.out for r in self._jobs.values() if r.out})
                    if out != wanted:
                        out_note = f"output: {Path(wanted).name} is taken, writing {Path(out).name}\n"
            argv = render_argv(spec, values, python=python)
            env = build_env(
                base_env,
                info,
                task_id=task.id,
                extra=extra,
                task_env=spec.env,
                values=values,
                rocm_index=rocm,
            )
            if python is not None:  # a torch task: run by the env chosen for the device
                activate_python(env, python)
            env[QUEUE_FILE_VAR] = str(self.store.path)  # lets crash recovery find it before its pid is saved
            header = (
                f"=== gputray task #{task.id} {spec.name!r}, attempt {attempt}, on {info.name} ({info.key})"
                f" at {iso_utc(now)} ===\n"
                f"argv: {json.dumps(argv, ensure_ascii=False)}\n"
                + "".join(
                    f"{k}={env.get(k, '(unset)')}\n"
                    for k in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
                )
                + (f"note: {reason}\n" if reason else "")
                + out_note
            )
            job = launch(
                argv,
                env=env,
                log_path=log_path,
                cwd=spec.cwd,
                on_exit=functools.partial(self._on_exit, task.id),
                timeout_s=spec.timeout_s,
                header=header,
            )
        except (LaunchError, LaunchFailed, OSError) as exc:
            failed = self.store.update(
                task.id, state="failed", reason=f"could not start: {exc}", ended_at=self.clock(), pid=None
            )
            self._emit("failed", failed, f"{failed.name} could not start: {exc}")
            return
        self._jobs[task.id] = _Running(task.id, job, info.key, spec, job.pid, out)
        self._names_used[info.key] = info.name
        started = self.store.update(task.id, pid=job.pid, pid_create_time=job.create_time)
        if hasattr(self.monitor, "job_started"):
            self.monitor.job_started(info.key, job.pid)
        if self.sim_hooks is not None:
            try:
                self.sim_hooks.job_started(
                    job.pid, spec.name, info.key, util_percent=spec.util_percent, vram_bytes=spec.vram_bytes
                )
            except Exception:
                log.exception("simulated backend hook failed")
        where = "the CPU" if info.kind == "cpu" else info.name
        if decision.redirected:
            self._emit("redirected", started, f"{spec.name}: {decision.reason}")
        else:
            self._emit("started", started, f"{spec.name} started on {where}")

    def _on_exit(self, task_id: int, job: Job, code: int) -> None:
        """Watcher thread: record how the job ended, apply the retry policy, dispatch the next one."""
        with self._lock:
            running = self._jobs.pop(task_id, None)
            device = running.device if running else None
            if hasattr(self.monitor, "job_ended") and device is not None:
                self.monitor.job_ended(device, job.pid)
            if self.sim_hooks is not None:
                try:
                    self.sim_hooks.job_ended(job.pid)
                except Exception:
                    log.exception("simulated backend hook failed")
            try:
                rec = self.store.get(task_id)
            except TaskNotFound:
                return
            now = self.clock()
            if rec.state != "running":
                self.request_dispatch(urgent=True)
                return
            reason = job.kill_reason
            base = dict(exit_code=code, ended_at=now, pid=None, pid_create_time=None)
            if reason == "cancelled":
                new = self.store.update(task_id, state="cancelled", reason="cancelled while running", **base)
                self._emit("cancelled", new, f"{new.name} cancelled")
            elif reason in ("lost", "shutdown"):
                why = (
                    f"interrupted: {self._device_name(device)} was lost while it ran"
                    if reason == "lost"
                    else "interrupted: gputray stopped while it ran"
                )
                new = self.store.apply_retry_policy(task_id, why, now=now, **base)
                self._emit("interrupted", new, f"{new.name}: {new.reason}")
            elif code == 0 and reason is None:
                new = self.store.update(task_id, state="succeeded", **base)
                self._emit("finished", new, f"{new.name} finished on {self._device_name(device)}")
            else:
                if reason == "timeout":
                    why = f"timed out after {rec.spec.timeout_s:g} s"
                elif code < 0:
                    why = f"killed by signal {_signal_name(-code)}"
                else:
                    why = f"exited with status {code}"
                new = self.store.apply_retry_policy(task_id, why, now=now, **base)
                self._emit("queued" if new.state == "queued" else "failed", new, f"{new.name}: {new.reason}")
        self.request_dispatch(urgent=True)

    # -- monitor ticks ---------------------------------------------------------------------------
    def _on_snapshot(self, snapshot: Snapshot) -> None:
        """Monitor thread: stop jobs whose device is lost or gone, then ask for a pass."""
        with self._lock:
            running = list(self._jobs.values())
        present = {r.info.key: r.sample.state for r in snapshot.readings}
        # Snapshots in a row each device was missing from: counted once per snapshot and per device
        # (not per job), and cleared when it shows again, whether or not a job runs there now.
        watched = set(self._absent_ticks) | {r.device for r in running if r.device != "cpu"}
        for key in watched:
            if key in present:
                self._absent_ticks.pop(key, None)
            else:
                self._absent_ticks[key] = self._absent_ticks.get(key, 0) + 1
        for r in running:
            if r.device == "cpu":
                continue
            state = present.get(r.device)
            # "lost" is the driver's word: act at once. A device missing from one snapshot may be a
            # backend hiccup (skipped for that tick): act only when it stays gone for a few ticks.
            gone = state == "lost" or self._absent_ticks.get(r.device, 0) >= GONE_AFTER_TICKS
            if gone and r.job.kill_reason is None:
                log.warning("device %s lost: stopping task #%d", r.device, r.task_id)
                r.job.cancel("lost")
        # Ticks only catch external changes. With a huge queue a pass is not free: the dispatcher
        # keeps tick-driven passes under ~5 % of the time (small queues still get one every tick).
        self._tick_pending = True
        self._wake.set()

    # -- internals -----------------------------------------------------------------------------
    def _dispatch_loop(self) -> None:
        """Run passes when asked. Urgent requests (a job exited, resume, close) run at once; plain ones
        (submits, cancels) wait until the last pass is ``REQUEST_PASS_BUDGET`` times its duration ago,
        ticks ``TICK_PASS_BUDGET`` times. A pass over a few tasks costs well under a millisecond, so
        this only ever delays anything with a huge queue, where a pass per submit would starve the
        submitters (10,000 submits must not cost 10,000 passes over up to 10,000 tasks)."""
        while True:
            gap_s = min(MAX_REQUEST_GAP_S, REQUEST_PASS_BUDGET * self._last_pass_s)
            request_at = self._last_pass_end + gap_s
            tick_at = self._last_pass_end + TICK_PASS_BUDGET * self._last_pass_s
            now_mono = time.monotonic()
            deadlines = []
            if self._due_s is not None:
                deadlines.append(max(0.0, self._due_s - self.clock()))
            if self._tick_pending:
                deadlines.append(max(0.0, tick_at - now_mono))
            if self._requested:
                deadlines.append(max(0.0, request_at - now_mono))
            if not self._urgent.is_set():
                self._wake.wait(min(min(deadlines), 3600.0) if deadlines else None)
            if self._closed:
                return
            self._wake.clear()
            now_mono = time.monotonic()
            urgent = self._urgent.is_set()
            due = self._due_s is not None and self.clock() >= self._due_s
            tick_ok = self._tick_pending and now_mono >= tick_at
            asked = self._requested and (urgent or now_mono >= request_at)
            if not (asked or urgent or due or tick_ok):
                continue
            self._urgent.clear()
            self._requested = False
            self._tick_pending = False
            started = time.perf_counter()
            try:
                self.dispatch()
            except Exception:
                log.exception("dispatch pass failed")
            self._last_pass_s = time.perf_counter() - started
            self._last_pass_end = time.monotonic()

    def _event_loop(self) -> None:
        while True:
            event = self._events.get()
            if event is None:
                return
            if self.on_event is not None:
                try:
                    self.on_event(event)
                except Exception:
                    log.exception("queue event handler failed")

    def _emit(self, kind: Any, rec: TaskRecord, message: str) -> None:
        self._events.put(QueueEvent(kind, rec, message))

    def _needs_ok(self, key: str, needs: frozenset[str]) -> frozenset[str] | None:
        """What placement checks ``needs`` against: proven capabilities, or (from ``failed_needs``)
        the wanted needs minus those the doctor saw fail here; None = nothing known, nothing blocked."""
        if self.capabilities is not None:
            return self.capabilities(key)
        if self.failed_needs is None or not needs:
            return None
        try:
            failed = frozenset(self.failed_needs(key, needs))
        except Exception:  # the doctor's cache must never stop the queue
            log.exception("reading the doctor's results failed")
            return None
        return needs - failed if failed else None

    def _device_states(
        self, snapshot: Snapshot | None, *, needs: frozenset[str] = frozenset()
    ) -> builtins.list[DeviceState]:
        running = list(self._jobs.values())
        ram_free = ram_total = None
        if snapshot is not None and snapshot.host.ram_total_bytes is not None:
            ram_total = snapshot.host.ram_total_bytes
            if snapshot.host.ram_used_bytes is not None:
                ram_free = ram_total - snapshot.host.ram_used_bytes
        our_pids = {r.pid for r in running}
        states = []
        readings = snapshot.readings if snapshot is not None else ()
        processes = snapshot.processes if snapshot is not None else ()
        for reading in readings:
            key = reading.info.key
            mine = [r for r in running if r.device == key]
            declared = sum(r.spec.vram_bytes or 0 for r in mine)
            seen = 0
            for p in processes:
                if p.device == key and p.pid in our_pids:
                    seen += (p.vram_bytes or 0) + (p.shared_bytes or 0)
            states.append(
                DeviceState(
                    info=reading.info,
                    sample=reading.sample,
                    verdict=snapshot.verdict(key) if snapshot is not None else None,
                    running=len(mine),
                    slots=self.slots.get(key, 1),
                    paused=key in self._paused_devices,
                    running_names=tuple(f"{r.spec.name} (#{r.task_id})" for r in mine),
                    extra_used_bytes=max(0, declared - seen),
                    host_ram_free_bytes=ram_free,
                    host_ram_total_bytes=ram_total,
                    capabilities=self._needs_ok(key, needs),
                )
            )
        mine = [r for r in running if r.device == "cpu"]
        cpu = cpu_state(
            running=len(mine),
            slots=self.cpu_slots,
            paused="cpu" in self._paused_devices,
            running_names=tuple(f"{r.spec.name} (#{r.task_id})" for r in mine),
            host_ram_free_bytes=ram_free,
            host_ram_total_bytes=ram_total,
            extra_used_bytes=sum(r.spec.vram_bytes or 0 for r in mine),
        )
        if self.failed_needs is not None and self.capabilities is None and needs:
            cpu = dataclasses.replace(cpu, capabilities=self._needs_ok("cpu", needs))
        states.append(cpu)
        return states

    def _known_keys(self) -> builtins.list[str]:
        snapshot = self.monitor.latest
        keys = [r.info.key for r in snapshot.readings] if snapshot is not None else []
        return [*keys, "cpu"]

    def unknown_device_names(self, prefs: Sequence[str]) -> builtins.list[str]:
        """Device names in ``prefs`` that match no device present now: a typo like ``5060it`` would
        otherwise be skipped quietly (redirected or waited on). Words such as ``nvidia`` or
        ``integrated`` are never reported; nothing is said before the first sample."""
        snapshot = self.monitor.latest
        if snapshot is None:
            return []
        devices = self._device_states(snapshot)
        return [p for p in prefs if p.strip().lower() not in GENERIC_PREFS and not resolve_pref(p, devices)]

    def _device_key(self, name: str) -> str:
        snapshot = self.monitor.latest
        devices = self._device_states(snapshot)
        matched = resolve_pref(name, devices)
        if len(matched) == 1:
            return matched[0].key
        if name.startswith("pci:"):
            return name.lower()  # a device that is not present now (an unplugged eGPU) may be paused too
        known = ", ".join(f"{d.key} ({d.name})" for d in devices)
        what = "matches several devices" if matched else "matches no device"
        raise QueueError(f"'{name}' {what}; devices: {known}")

    def _device_name(self, key: str | None) -> str:
        if key is None:
            return "its device"
        if key == "cpu":
            return "the CPU"
        snapshot = self.monitor.latest
        reading = snapshot.reading(key) if snapshot is not None else None
        if reading is not None:
            return reading.info.name
        for info in getattr(self.monitor, "known_devices", lambda: [])():
            if info.key == key:
                return str(info.name)
        return self._names_used.get(key, key)

    def _load_paused(self) -> None:
        self._paused_all, self._paused_devices = read_paused(self.paths.data_dir)

    def _save_paused(self) -> None:
        try:
            write_paused(self.paths.data_dir, self._paused_all, self._paused_devices)
        except OSError:
            log.exception("could not save the pause state")


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
