"""The one process that owns the queue: monitor + task store + queue service + timing + the IPC server.

``gputray daemon`` runs an Owner headless; the tray app creates one in-process. Everything else (the
CLI, a second tray launch, "Send To") talks to it through ``gputray.scheduler.ipc``.

Start order matters: the IPC socket is claimed first, so a second owner is refused before it opens
the store (opening it would run crash recovery and mark the first owner's running tasks as
interrupted). Requests that arrive while the rest starts wait for it (``_ready``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

from gputray.monitor.monitor import Monitor
from gputray.monitor.serialize import snapshot_to_json
from gputray.monitor.verdict import BusyThresholds, thresholds_from_mapping
from gputray.scheduler import ipc
from gputray.scheduler.paths import Paths
from gputray.scheduler.tasks import PENDING_STATES, QueueEvent, TaskRecord, TaskSpec
from gputray.scheduler.timing import Schedule, Timing

log = logging.getLogger("gputray.owner")


def monitor_settings(config: dict[str, Any] | None = None) -> tuple[BusyThresholds, float]:
    """The config's ``[thresholds]`` and ``[monitor] interval_s`` as the Monitor takes them.

    Shared by ``gputray daemon`` and the tray, so both judge busy/hot GPUs by the user's limits. A bad
    config is logged and the defaults are used: the owner must still start and keep the queue.
    """
    from gputray.scheduler.config import ConfigError, load_config

    try:
        config = load_config() if config is None else config
        thresholds = thresholds_from_mapping(config.get("thresholds", {}))
        interval_s = float(config.get("monitor", {}).get("interval_s", 1.0))
    except (ConfigError, ValueError, TypeError, AttributeError):
        log.exception("bad [thresholds] or [monitor] in the config: using the defaults")
        return BusyThresholds(), 1.0
    return thresholds, interval_s


_T = TypeVar("_T")

LOG_CHUNK_MAX_BYTES = 128 * 1024  # JSON escaping can grow text ×6; stays under ipc.MAX_FRAME_BYTES
IN_FLIGHT_GRACE_S = 15.0  # how long stop() lets requests being answered finish (a cancel waits up to 10 s)


class OwnerRequestError(ValueError):
    """A request the owner understood but cannot do; the message is for the person who asked."""

    user_error = True


class OwnerStopping(OwnerRequestError):
    """The owner is shutting down; clients that keep watching treat this as the owner going away."""


def _task_id(value: int | str, what: str = "task", listing: str = "gputray queue") -> int:
    if isinstance(value, int):
        return value
    text = value.strip().lstrip("#")
    if not text.isdigit():
        raise OwnerRequestError(f"{what} ids are whole numbers from 1, not {value!r}; see `{listing}`")
    return int(text)


def _abs_path(path: str, cwd: str | None) -> Path:
    p = Path(path).expanduser()
    if not p.is_absolute():
        if not cwd:
            raise OwnerRequestError(f"{path}: a relative path needs the caller's working folder")
        p = Path(cwd) / p
    return p


def _with_caller_env(args: dict[str, Any]) -> dict[str, Any]:
    """A request's task overrides, plus the environment the CLI sent (``caller_env``) as ``base_env``."""
    overrides = dict(args.get("overrides") or {})
    if args.get("caller_env") is not None:
        overrides["base_env"] = args["caller_env"]
    return overrides


def _decode_utf8_prefix(data: bytes) -> tuple[str, int]:
    """Decode, leaving a UTF-8 sequence cut at the end of the chunk for the next read."""
    for cut in range(4):
        end = len(data) - cut
        if end < 0:
            break
        try:
            return data[:end].decode("utf-8"), end
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="replace"), len(data)


def _is_refusal(exc: Exception) -> bool:
    """The queue's and the task files' own errors are answers for the user, not owner bugs."""
    from gputray.scheduler.queue_service import QueueError
    from gputray.scheduler.taskfile import TaskFileError
    from gputray.scheduler.timing import TimingError

    return isinstance(exc, QueueError | TaskFileError | TimingError | ValueError | LookupError | OSError)


class DoctorNeeds:
    """The queue's ``failed_needs``: which of a task's ``needs`` (``fp16``, ``sdpa`` …) the doctor saw fail
    on a device, read from its cache (``gputray doctor`` writes it; this never probes).

    A need fails on a device when some environment measured it there and failed, and none passed.
    A need nobody measured (no doctor run, ``--no-bench``, a device it never saw, a word the doctor
    does not know) blocks nothing. The cache is re-read when ``doctor.json`` changes and at least
    every ``refresh_s`` (an upgraded torch or driver voids results without touching the file).
    """

    def __init__(
        self,
        cache_path: Path | None = None,
        *,
        refresh_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cache_path = cache_path
        self._refresh_s = refresh_s
        self._clock = clock
        self._stamp: tuple[int, int] | None = None
        self._loaded_at = -math.inf
        self._pairs: list[Any] = []
        self._lock = threading.Lock()

    def _results(self) -> list[Any]:
        from gputray.scheduler import doctor

        path = self._cache_path or doctor.cache_file()
        try:
            st = path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        now = self._clock()
        with self._lock:
            if stamp != self._stamp or now - self._loaded_at >= self._refresh_s:
                self._pairs = doctor.cached_results(cache_path=path) if stamp is not None else []
                self._stamp, self._loaded_at = stamp, now
            return self._pairs

    def __call__(self, device_key: str, needs: Collection[str]) -> frozenset[str]:
        from gputray.scheduler.doctor import NEEDS

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


class Owner:
    def __init__(
        self,
        paths: Paths,
        *,
        demo: bool = False,
        scenario: Path | None = None,
        sysfs_root: Path = Path("/sys"),
        proc_root: Path = Path("/proc"),
        monitor: Monitor | None = None,
        clock: Callable[[], float] = time.time,
        env_resolver: Any = None,
        on_event: Callable[[QueueEvent], None] | None = None,
        serve_ipc: bool = True,
    ) -> None:
        self.paths = paths
        self.demo = demo
        self.scenario = scenario
        self.sysfs_root = sysfs_root
        self.proc_root = proc_root
        self.clock = clock
        self.env_resolver = env_resolver
        self._on_event = on_event
        self._serve_ipc = serve_ipc
        self._monitor: Monitor | None = monitor
        self._own_monitor = monitor is None
        self._queue: Any = None
        self._store: Any = None
        self.timing: Timing | None = None
        self.server: ipc.IpcServer | None = None
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self._in_flight = 0  # requests being answered; stop() lets them finish before closing the store
        self._in_flight_changed = threading.Condition()
        self.shutdown_requested = threading.Event()
        self.started_at: float | None = None
        self._json_cache: dict[int, tuple[TaskRecord, str]] = {}
        self.cluster: Any = None  # gputray.cluster.link.ClusterLink: the bridge to other machines
        # Set by the tray app: files opened with gputray go through its drop confirm instead of
        # straight into the queue. Called from the IPC thread with absolute paths; must not block.
        self.files_opener: Callable[[list[str]], None] | None = None
        self._handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "ping": self._op_ping,
            "status": self._op_status,
            "submit": self._op_submit,
            "submit_files": self._op_submit_files,
            "open_files": self._op_open_files,
            "run": self._op_run,
            "queue": self._op_queue,
            "get": self._op_get,
            "cancel": self._op_cancel,
            "retry": self._op_retry,
            "move": self._op_move,
            "pause": self._op_pause,
            "resume": self._op_resume,
            "logs": self._op_logs,
            "schedule_add": self._op_schedule_add,
            "schedule_list": self._op_schedule_list,
            "schedule_remove": self._op_schedule_remove,
            "shutdown": self._op_shutdown,
            "cluster_sync": lambda args: self.cluster.sync(args),
            "cluster_update": lambda args: self.cluster.update(args),
            "cluster_submit": lambda args: self.cluster.submit(args),
        }
        missing = set(ipc.OPS) ^ set(self._handlers)
        assert not missing, f"ops without handlers (or handlers without ops): {missing}"

    # --- public ----------------------------------------------------------------------------------

    @property
    def queue(self) -> Any:
        if self._queue is None:
            raise RuntimeError("the owner is not started")
        return self._queue

    @property
    def monitor(self) -> Monitor:
        if self._monitor is None:
            raise RuntimeError("the owner is not started")
        return self._monitor

    def start(self) -> None:
        """Claim the socket, then start monitor, queue and timing. Raises ipc.OwnerAlreadyRunning."""
        from gputray.cluster.link import ClusterLink
        from gputray.monitor.factory import build_monitor
        from gputray.scheduler.queue_service import QueueService
        from gputray.scheduler.store import TaskStore

        for folder in (self.paths.data_dir, self.paths.logs_dir, self.paths.state_dir):
            folder.mkdir(parents=True, exist_ok=True)
        if self._serve_ipc:
            self.server = ipc.IpcServer(self.paths, self._handle_ipc)
            self.server.start()
        try:
            if self._monitor is None:
                thresholds, interval_s = monitor_settings()
                self._monitor = build_monitor(
                    demo=self.demo,
                    scenario=self.scenario,
                    sysfs_root=self.sysfs_root,
                    proc_root=self.proc_root,
                    thresholds=thresholds,
                    interval_s=interval_s,
                )
            self._monitor.start()
            self._store = TaskStore(self.paths.queue_db, clock=self.clock)
            # Ray-free: reads [cluster] from the config, runs the bridge process when it names a cluster.
            self.cluster = ClusterLink(self.paths, self._store, clock=self.clock, emit=self._event)
            env_resolver = self.env_resolver
            if env_resolver is None:
                from gputray.scheduler.doctor import env_for_device

                env_resolver = env_for_device  # the doctor's cached results; never probes
            self._queue = QueueService(
                self._store,
                self._monitor,
                paths=self.paths,
                clock=self.clock,
                env_resolver=env_resolver,
                failed_needs=DoctorNeeds(),  # `needs` (fp16 …) avoid devices where the doctor saw them fail
                on_event=self._event,
                runs_here=self.cluster.runs_here,
                check_spec=self.cluster.check_spec,
            )
            self.cluster.attach(self._queue)
            self._queue.start()
            self.timing = Timing(
                self.paths.data_dir / "schedules.sqlite3",
                submit=self._submit_schedule,
                wake=self._queue.dispatch,
                clock=self.clock,
            )
            self.timing.start()
            for rec in self._queue.list(include_finished=False):
                self._plan_wakeups(rec)
        except BaseException:
            self._teardown()
            raise
        self.started_at = self.clock()
        self._ready.set()
        self.cluster.start()
        log.info("gputray owner started (pid %d, demo=%s)", os.getpid(), self.demo)

    def stop(self, *, kill_running: bool = True) -> None:
        """Stop serving and dispatching. Running jobs are stopped too (they end ``interrupted`` and follow
        their retry policy) unless ``kill_running=False``: then they run on unobserved, and the next
        owner's crash recovery stops and requeues them."""
        with self._in_flight_changed:
            if self._stopped.is_set():
                return
            self._stopped.set()  # new requests are refused from here on
            if not self._in_flight_changed.wait_for(lambda: self._in_flight == 0, timeout=IN_FLIGHT_GRACE_S):
                log.warning("stopping with %d request(s) still being answered", self._in_flight)
        self._teardown(kill_running=kill_running)
        log.info("gputray owner stopped")

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until a ``shutdown`` request (or ``request_shutdown()``); True if it came."""
        return self.shutdown_requested.wait(timeout_s)

    def request_shutdown(self) -> None:
        self.shutdown_requested.set()

    def _teardown(self, *, kill_running: bool = False) -> None:
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()  # the bridge goes first: it talks to the queue
        if self.server is not None:
            with contextlib.suppress(Exception):
                self.server.stop()
        if self.timing is not None:
            with contextlib.suppress(Exception):
                self.timing.stop()
        if self._queue is not None:
            try:
                self._queue.close(kill_running=kill_running)
            except Exception:
                log.exception("closing the queue failed")
        if self._monitor is not None and self._own_monitor:
            with contextlib.suppress(Exception):
                self._monitor.stop()
        if self._store is not None:
            with contextlib.suppress(Exception):
                self._store.close()

    # --- events and wake-ups ---------------------------------------------------------------------

    def _event(self, event: QueueEvent) -> None:
        log.info("task %s %s: %s", event.task.id, event.kind, event.message)
        if self.cluster is not None:
            self.cluster.on_event(event)
        with contextlib.suppress(Exception):
            self._plan_wakeups(event.task)
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception:
                log.exception("on_event callback failed")

    def _plan_wakeups(self, rec: TaskRecord) -> None:
        if self.timing is None or rec.state not in PENDING_STATES:
            return
        for when in (rec.spec.start_at, rec.not_before):
            if when is not None:
                self.timing.wake_at(when)
        if rec.spec.window:
            self.timing.wake_for_window(rec.spec.window)

    def _submit_schedule(self, entry: Schedule) -> object:
        from gputray.scheduler.taskfile import load_task_file

        spec = self._with_overrides(load_task_file(Path(entry.task_file)), entry.overrides, entry.task_file)
        return self.queue.submit(spec)

    # --- the IPC entry ---------------------------------------------------------------------------

    def handle(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """Answer one validated request (also callable in-process, e.g. from the tray)."""
        return self._answer(op, self._handlers[op], args)

    def _handle_ipc(self, op: str, args: dict[str, Any]) -> dict[str, Any] | ipc.RawJson:
        """Requests from the socket: as ``handle``, but ``queue`` answers with ready-made JSON text."""
        if op == "queue":
            return self._answer(op, self._op_queue_json, args)
        return self.handle(op, args)

    def _answer(self, op: str, handler: Callable[[dict[str, Any]], _T], args: dict[str, Any]) -> _T:
        if op != "ping" and not self._ready.wait(60.0):
            raise OwnerRequestError("the gputray owner is still starting; try again")
        with self._in_flight_changed:
            if self._stopped.is_set() and op != "ping":
                raise OwnerStopping("the gputray owner is stopping")
            self._in_flight += 1
        try:
            return handler(args)
        except Exception as exc:
            if _is_refusal(exc):
                exc.user_error = True  # type: ignore[attr-defined]  # ipc replies with its message
            raise
        finally:
            with self._in_flight_changed:
                self._in_flight -= 1
                self._in_flight_changed.notify_all()

    def _task_json(self, records: list[TaskRecord]) -> str:
        """``[rec.to_json(), …]`` as JSON text, each task's text kept until its record changes
        (the store hands out a new record object on every change)."""
        cache = self._json_cache
        parts = []
        for rec in records:
            hit = cache.get(rec.id)
            if hit is None or hit[0] is not rec:
                hit = (rec, json.dumps(rec.to_json(), ensure_ascii=False, separators=(",", ":")))
                cache[rec.id] = hit
            parts.append(hit[1])
        return "[" + ",".join(parts) + "]"

    # --- ops -------------------------------------------------------------------------------------

    def _op_ping(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "protocol": ipc.PROTOCOL_VERSION,
            "demo": self.demo,
            "ready": self._ready.is_set(),
            "started_at": self.started_at,
            "address": self.server.address if self.server else None,
        }

    def _op_status(self, args: dict[str, Any]) -> dict[str, Any]:
        snap = self.monitor.latest
        devices = []
        if snap is not None:
            for reading in snap.readings:
                info, sample = reading.info, reading.sample
                verdict = snap.verdict(info.key)
                devices.append(
                    {
                        "key": info.key,
                        "name": info.name,
                        "vendor": info.vendor,
                        "kind": info.kind,
                        "state": sample.state,
                        "busy": verdict.busy if verdict else None,
                        "reasons": list(verdict.reasons) if verdict else [],
                        "util_percent": sample.util_percent,
                        "vram_used_bytes": sample.vram_used_bytes,
                        "vram_total_bytes": sample.vram_total_bytes,
                        "temp_c": sample.temp_c,
                        "simulated": info.simulated,
                    }
                )
        return {
            "pid": os.getpid(),
            "demo": self.demo,
            # The `gputray status --json` document, so the CLI shows the owner's readings instead of polling.
            "snapshot": snapshot_to_json(snap) if snap is not None else None,
            "devices": devices,
            "paused": self.queue.paused(),
            "counts": self._store.counts() if self._store is not None else {},
            **({"cluster": self.cluster.report_doc()} if args.get("cluster") else {}),
        }

    def _with_overrides(self, spec: TaskSpec, overrides: dict[str, Any] | None, source: str) -> TaskSpec:
        if not overrides:
            return spec
        from gputray.scheduler.taskfile import spec_from_record_dict

        return spec_from_record_dict({**spec.to_dict(), **overrides}, source=source)

    # QueueService.submit checks that the program, script and files exist (ToolNotFound, SubmitError).
    def _submitted(self, records: list[TaskRecord]) -> dict[str, Any]:
        notes: list[str] = []
        for r in records:
            if r.spec.machine is not None:
                continue  # its devices may be another machine's: the cluster bridge places it
            for name in self.queue.unknown_device_names(r.spec.device_prefs):
                notes.append(f"#{r.id}: no device here matches {name!r} (see `gputray devices`)")
        return {"tasks": [r.to_json() for r in records], "notes": notes}

    def _op_submit(self, args: dict[str, Any]) -> dict[str, Any]:
        from gputray.scheduler.taskfile import load_task_file

        overrides = _with_caller_env(args)
        if args.get("task_file") is not None:
            path = _abs_path(args["task_file"], args.get("cwd"))
            spec = self._with_overrides(load_task_file(path), overrides, str(path))
        elif args.get("spec") is not None:
            spec = TaskSpec.from_dict({**args["spec"], **overrides}, source="submitted task")
        else:
            raise OwnerRequestError("submit needs a task file or a task spec")
        return self._submitted([self.queue.submit(spec)])

    def _op_submit_files(self, args: dict[str, Any]) -> dict[str, Any]:
        files = [_abs_path(f, args.get("cwd")) for f in args["files"]]
        records = self.queue.submit_files(files, recipe=args.get("recipe"), overrides=_with_caller_env(args))
        return self._submitted(list(records))

    def _op_open_files(self, args: dict[str, Any]) -> dict[str, Any]:
        """Files opened with gputray: to the tray's drop confirm when a tray owns the queue, else queued
        as ``submit_files`` would (recipe defaults). Missing files are refused before anything happens."""
        files = [_abs_path(f, args.get("cwd")) for f in args["files"]]
        opener = self.files_opener
        if opener is None:
            return {**self._op_submit_files({"files": [str(f) for f in files]}), "handed_to": None}
        missing = [str(f) for f in files if not f.exists()]
        if missing:
            raise OwnerRequestError(f"no such file: {', '.join(missing)}")
        opener([str(f) for f in files])
        return {"tasks": [], "handed_to": "tray", "files": len(files)}

    def _op_run(self, args: dict[str, Any]) -> dict[str, Any]:
        from gputray.scheduler.taskfile import spec_from_mapping

        argv = args["argv"]
        data: dict[str, Any] = {"kind": "command", "argv": argv}
        if args.get("cwd"):
            data["cwd"] = args["cwd"]
        if args.get("name"):
            data["name"] = args["name"]
        data.update(_with_caller_env(args))
        spec = spec_from_mapping(data, source="gputray run")
        return self._submitted([self.queue.submit(spec)])

    def _device_names(self) -> dict[str, str]:
        """Device key → the name people know it by, for listings (the JSON keeps the key)."""
        names = {"cpu": "CPU"}
        names.update({info.key: info.name for info in self.monitor.known_devices()})
        return names

    def _op_queue(self, args: dict[str, Any]) -> dict[str, Any]:
        records = self.queue.list(include_finished=bool(args.get("all")))
        return {
            "tasks": [r.to_json() for r in records],
            "paused": self.queue.paused(),
            "device_names": self._device_names(),
        }

    def _op_queue_json(self, args: dict[str, Any]) -> ipc.RawJson:
        """``_op_queue``'s document as JSON text, for the socket (see ``_task_json``)."""
        records = self.queue.list(include_finished=bool(args.get("all")))
        paused = json.dumps(self.queue.paused(), ensure_ascii=False)
        names = json.dumps(self._device_names(), ensure_ascii=False)
        return ipc.RawJson(
            '{"tasks":' + self._task_json(records) + ',"paused":' + paused + ',"device_names":' + names + "}"
        )

    def _op_get(self, args: dict[str, Any]) -> dict[str, Any]:
        rec = self.queue.get(_task_id(args["id"]))
        return {"task": rec.to_json(), "spec": rec.spec.to_dict(), "pid": rec.pid}

    def _op_cancel(self, args: dict[str, Any]) -> dict[str, Any]:
        done: list[dict[str, Any]] = []
        errors: list[str] = []
        for raw in args["ids"]:
            try:
                rec = self.queue.cancel(_task_id(raw))
            except (LookupError, ValueError) as exc:
                errors.append(str(exc))
                continue
            done.append(
                rec.to_json() if isinstance(rec, TaskRecord) else self.queue.get(_task_id(raw)).to_json()
            )
        return {"tasks": done, "errors": errors}

    def _op_retry(self, args: dict[str, Any]) -> dict[str, Any]:
        rec = self.queue.retry(_task_id(args["id"]))
        if not isinstance(rec, TaskRecord):
            rec = self.queue.get(_task_id(args["id"]))
        return {"task": rec.to_json()}

    def _op_move(self, args: dict[str, Any]) -> dict[str, Any]:
        rec = self.queue.move(_task_id(args["id"]), args["delta"])
        if not isinstance(rec, TaskRecord):
            rec = self.queue.get(_task_id(args["id"]))
        return {"task": rec.to_json()}

    def resolve_device(self, text: str | None) -> str | None:
        """A device key from a key, a name fragment (``5060ti``, ``780m``) or ``cpu``; None for all."""
        if text is None or text.strip().lower() in ("", "all"):
            return None
        wanted = text.strip().lower()
        if wanted == "cpu":
            return "cpu"
        snap = self.monitor.latest
        infos = [r.info for r in snap.readings] if snap else []
        for info in infos:
            if info.key.lower() == wanted:
                return info.key
        squashed = wanted.replace(" ", "")
        matches = [i for i in infos if squashed in i.name.lower().replace(" ", "")]
        if len(matches) == 1:
            return matches[0].key
        known = ", ".join(f"{i.key} ({i.name})" for i in infos) or "none seen yet"
        if len(matches) > 1:
            raise OwnerRequestError(f"{text!r} matches several devices: {known}")
        raise OwnerRequestError(f"no device {text!r}; known: {known}, cpu")

    def _op_pause(self, args: dict[str, Any]) -> dict[str, Any]:
        self.queue.pause(self.resolve_device(args.get("device")))
        return {"paused": self.queue.paused()}

    def _op_resume(self, args: dict[str, Any]) -> dict[str, Any]:
        self.queue.resume(self.resolve_device(args.get("device")))
        return {"paused": self.queue.paused()}

    def _op_logs(self, args: dict[str, Any]) -> dict[str, Any]:
        rec = self.queue.get(_task_id(args["id"]))
        offset = max(0, args.get("offset") or 0)
        max_bytes = min(max(1, args.get("max_bytes") or LOG_CHUNK_MAX_BYTES), LOG_CHUNK_MAX_BYTES)
        text, next_offset, size = "", offset, 0
        if rec.log_path:
            try:
                with open(rec.log_path, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    f.seek(offset)
                    data = f.read(max_bytes)
                text, used = _decode_utf8_prefix(data)
                next_offset = offset + used
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise OwnerRequestError(f"cannot read the log {rec.log_path}: {exc.strerror}") from None
        return {
            "id": rec.id,
            "state": rec.state,
            "log_path": rec.log_path,
            "text": text,
            "offset": next_offset,
            "size": size,
            "finished": rec.finished,
        }

    def _op_schedule_add(self, args: dict[str, Any]) -> dict[str, Any]:
        from gputray.scheduler.taskfile import load_task_file

        assert self.timing is not None
        path = _abs_path(args["task_file"], args.get("cwd"))
        overrides = args.get("overrides") or {}
        self._with_overrides(load_task_file(path), overrides, str(path))  # a bad file fails now, not at 3 am
        entry = self.timing.add(args["cron"], str(path), overrides=overrides, name=args.get("name"))
        nxt = dict((e.id, n) for e, n in self.timing.entries()).get(entry.id)
        return {"schedule": entry.to_json(nxt)}

    def _op_schedule_list(self, args: dict[str, Any]) -> dict[str, Any]:
        assert self.timing is not None
        return {"schedules": [e.to_json(n) for e, n in self.timing.entries()]}

    def _op_schedule_remove(self, args: dict[str, Any]) -> dict[str, Any]:
        assert self.timing is not None
        entry = self.timing.remove(_task_id(args["id"], "schedule", "gputray schedule list"))
        return {"schedule": entry.to_json()}

    def _op_shutdown(self, args: dict[str, Any]) -> dict[str, Any]:
        # a moment later, so that this reply still reaches the client before the socket closes
        timer = threading.Timer(0.2, self.request_shutdown)
        timer.daemon = True
        timer.start()
        return {"stopping": True, "pid": os.getpid()}
