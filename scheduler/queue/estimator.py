"""The queue's estimator: learns from finished runs and the monitor's ticks (``runtime_history``), builds
each dispatch pass's ``Outlook`` (when each device frees, runtimes per family and device), plans with
``placement_policy.OutlookPolicy``, makes run-elsewhere offers (``Offer``) and adds the estimates to the
task views (``queue --json``'s ``estimate_s`` and ``offer``).

An **offer** stands for a pending task that has waited longer than its estimated run on another device
it may use that is free now (not for one whose user declined: ``offer_declined``), for the first such
task in queue order per free device (only one can take it: a backlog is not a storm of notifications).
It is emitted once per task as a queue event of kind ``offer``; the answer comes back as an ordinary
``edit``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

import msgspec

from gputray.monitor.records import Snapshot
from gputray.monitor.units import format_bytes
from gputray.scheduler.pyenvs.doctor_cache import cached_results
from gputray.scheduler.queue.estimates import Outlook
from gputray.scheduler.queue.job_progress import ProgressBook, left_s, projected_s
from gputray.scheduler.queue.placement import (
    DEFAULT_PREFS,
    DeviceState,
    Placement,
    Plan,
    Wait,
    busy_reason,
    never_fits,
    plan,
    resolve_pref,
    wait_started_s,
)
from gputray.scheduler.queue.placement_policy import OutlookPolicy
from gputray.scheduler.queue.runtime_history import JobRun, RunBook, RuntimeHistory, SpellBook
from gputray.scheduler.queue.store import TaskStore
from gputray.scheduler.reasons.codes import OfferMade, Reason
from gputray.scheduler.replies import DeviceSlots, Estimate, Tasks, TaskView
from gputray.scheduler.tasks.family import family_of
from gputray.scheduler.tasks.records import Offer, TaskRecord

log = logging.getLogger(__name__)

SPEEDS_REFRESH_S = 30.0  # the doctor's cache is read again at most this often
EmitOffer = Callable[[TaskRecord, Reason, Offer], None]


class DoctorSpeeds:
    """Device key → the doctor's best measured fp32 matmul (GFLOP/s) there, from its cache."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._read_at = -math.inf
        self._speeds: dict[str, float] = {}

    def __call__(self) -> Mapping[str, float]:
        if self._clock() - self._read_at >= SPEEDS_REFRESH_S:
            self._read_at = self._clock()
            speeds: dict[str, float] = {}
            try:
                for pair in cached_results():
                    cap = pair.capability("matmul_fp32")
                    if pair.works and cap is not None and cap.ok and cap.value:
                        key = "cpu" if pair.vendor == "cpu" else pair.device_key
                        speeds[key] = max(speeds.get(key, 0.0), cap.value)
            except Exception:  # the doctor's cache must never stop the queue
                log.exception("reading the doctor's speeds failed")
            self._speeds = speeds
        return self._speeds


AllowedCache = dict[tuple[object, ...], list[DeviceState]]


def allowed_devices(
    task: TaskRecord, devices: Sequence[DeviceState], cache: AllowedCache | None = None
) -> list[DeviceState]:
    """Every device the task's preferences name (default: every GPU) that could ever run it; one
    preference alone pins the task there. ``cache``: the answers for one set of ``devices`` by the
    task's shape (a backlog of similar tasks costs a few shapes)."""
    spec = task.spec
    shape = (spec.device_prefs, spec.memory_need_bytes, spec.needs, spec.kind)
    if cache is not None and shape in cache:
        return cache[shape]
    seen: dict[str, DeviceState] = {}
    for pref in task.spec.device_prefs or DEFAULT_PREFS:
        for dev in resolve_pref(pref, devices):
            if dev.key not in seen and never_fits(task, dev) is None:
                seen[dev.key] = dev
    if cache is not None:
        cache[shape] = list(seen.values())
    return list(seen.values())


def build_outlook(
    runs: RunBook,
    spells: SpellBook,
    families: Iterable[str],
    devices: Sequence[DeviceState],
    running: Iterable[TaskRecord],
    now_s: float,
    *,
    measured_gflops: Mapping[str, float] | None = None,
    free_in: Mapping[str, float | None] | None = None,
    progress: Mapping[int, float] | None = None,
    paced: Mapping[int, float] | None = None,
) -> Outlook:
    """The outlook for these families (and those of the jobs ``running``) over ``devices`` at ``now_s``,
    from the books; ``free_in`` given: as it is (the last pass's), else worked out from the devices.
    ``progress``: task id → the fraction a running job reports done (``job_progress``): its time left
    counts instead of its family's median, and a family with no runs gets its first estimate from it
    (the job's projected whole run on its device, scaled to the others as any run is). ``paced``: task id
    → the seconds of work its progress stands for at the pace kept since its first progress line
    (``job_progress.paced_s``), counted in place of how long it has run where given."""
    running = list(running)
    progress, paced = progress or {}, paced or {}
    wanted = set(families) | {family_of(r.spec) for r in running}
    medians = {f: m for f in wanted if (m := runs.median_run_s(f))}
    bases = {f: runs.basis(f) for f in medians}
    projected: dict[str, dict[str, float]] = {}
    for rec in running:
        family, fraction = family_of(rec.spec), progress.get(rec.id)
        if family in medians or fraction is None or rec.device is None:
            continue
        whole = projected_s(fraction, paced.get(rec.id, rec.run_s(now_s) or 0.0))
        if whole is not None:
            projected.setdefault(family, {})[rec.device] = whole
    outlook = Outlook(
        run_medians={**medians, **projected},
        energy_medians={f: runs.median_energy_j(f) for f in medians},
        run_counts={f: {k: len(v) for k, v in basis.items()} for f, basis in bases.items()},
        throttled_counts={
            f: {k: sum(1 for r in v if r.throttled) for k, v in basis.items()} for f, basis in bases.items()
        },
        kinds={d.key: d.info.kind for d in devices},
        measured_gflops=measured_gflops or {},
    )
    if free_in is None:
        free_in = {d.key: free_in_s(d, running, outlook, spells, now_s, progress, paced) for d in devices}
    guessed = frozenset(
        d.key for d in devices if d.verdict is not None and d.verdict.busy and spells.guessing(d.key, now_s)
    )
    return dataclasses.replace(outlook, free_in=free_in, free_in_guessed=guessed)


def free_in_s(
    dev: DeviceState,
    running: Sequence[TaskRecord],
    outlook: Outlook,
    spells: SpellBook,
    now_s: float,
    progress: Mapping[int, float] | None = None,
    paced: Mapping[int, float] | None = None,
) -> float | None:
    """When ``dev`` frees up: 0 when free now; None when unknown (paused, lost, a spell of external use
    longer than any before, our jobs past their estimates). A job that reports its progress
    (``progress``: task id → fraction done) is expected to need elapsed / done × what is left."""
    sample = dev.sample
    if dev.paused or (sample is not None and sample.state in {"lost", "unavailable"}):
        return None
    ours = 0.0
    if dev.running >= dev.slots:
        ours_there = [r for r in running if r.device == dev.key]
        left = [x for r in ours_there if (x := _job_left_s(r, outlook, now_s, progress, paced)) is not None]
        known = [x for x in left if x > 0]
        if not known:
            return None
        ours = min(known)
    external = 0.0
    if dev.verdict is not None and dev.verdict.busy:
        spell = spells.free_in_s(dev.key, now_s)
        if spell is None:
            return None
        external = spell
    return max(ours, external)


def _job_left_s(
    rec: TaskRecord,
    outlook: Outlook,
    now_s: float,
    progress: Mapping[int, float] | None,
    paced: Mapping[int, float] | None = None,
) -> float | None:
    """A running job's time left: from its own progress when it reports one (at its pace since its
    first progress line, where known), else its family's estimate less what it has run (a paused
    job's pause does not bring its end closer)."""
    run = rec.run_s(now_s) or 0.0
    fraction = (progress or {}).get(rec.id)
    if fraction is not None and (left := left_s(fraction, (paced or {}).get(rec.id, run))) is not None:
        return max(left, 1.0)  # "100 %" and still running: about to end
    est = outlook.run_s(family_of(rec.spec), str(rec.device))
    return None if est is None else est - run


class Estimator:
    def __init__(
        self,
        store: TaskStore,
        *,
        emit_offer: EmitOffer | None = None,
        speeds: Callable[[], Mapping[str, float]] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.history = RuntimeHistory(store, clock)
        self.emit_offer = emit_offer
        self.speeds = speeds if speeds is not None else DoctorSpeeds()
        self._lock = threading.Lock()
        self._devices: Sequence[DeviceState] = ()
        self._free_in: Mapping[str, float | None] = {}
        self._offers: dict[int, Offer] = {}
        self._offered: set[int] = set()  # tasks an offer event was emitted for (once each)
        self.peaks: dict[int, int] = {}  # task id -> its run's peak GPU memory (``job_peaks``), until learned
        self.progress = ProgressBook()  # the running jobs' progress, read from their own output

    # -- learning --------------------------------------------------------------------------------
    def finished(self, rec: TaskRecord) -> None:
        """A run that succeeded: one more entry in its family's history on that device."""
        if rec.device is None or rec.started_at is None or rec.ended_at is None or rec.machine is not None:
            return
        self.history.record_run(
            JobRun(
                family=family_of(rec.spec), device_key=rec.device, env=rec.env,
                duration_s=rec.run_s(rec.ended_at) or 0.0,
                energy_j=None if rec.energy_shared else rec.energy_j,
                throttled=self.history.throttled_since(rec.device, rec.started_at), ended_at=rec.ended_at,
                peak_bytes=self.peaks.pop(rec.id, None),
            )
        )  # fmt: skip

    def with_learned_need(self, rec: TaskRecord) -> TaskRecord:
        """A task without ``vram`` whose family's recent runs reached more GPU memory than its model files
        predict (or that names none) counts that peak (``job_peaks``); others as they are."""
        spec = rec.spec
        if spec.vram_bytes is not None:
            return rec
        peak = self.history.runs.recent_peak(family_of(spec))
        if peak is None or peak <= (spec.vram_need_bytes or 0):
            return rec
        source = f"the peak of its recent runs, {format_bytes(peak)}"
        learned = msgspec.structs.replace(spec, vram_need_bytes=peak, vram_need_source=source)
        return rec.replace(spec=learned)

    def note_snapshot(self, snapshot: Snapshot) -> None:
        self.history.note_snapshot(snapshot)

    # -- estimating ------------------------------------------------------------------------------
    def outlook(
        self,
        families: Iterable[str],
        devices: Sequence[DeviceState],
        running: Iterable[TaskRecord],
        now_s: float,
        free_in: Mapping[str, float | None] | None = None,
    ) -> Outlook:
        """The outlook for these families (and those running now) over ``devices`` at ``now_s``; the
        running jobs' own progress counts (``job_progress``)."""
        running = list(running)
        return build_outlook(
            self.history.runs, self.history.spells, families, devices, running, now_s,
            measured_gflops=self.speeds(), free_in=free_in, progress=self.progress.fractions(running),
            paced=self.progress.paced(running),
        )  # fmt: skip

    def _records(self, task_ids: Iterable[int]) -> list[TaskRecord]:
        """The records of these tasks (our running jobs), each a lookup: never a walk of the store."""
        view = self.store.view()
        return [rec for i in task_ids if (rec := view.get(i)) is not None]

    def device_slots(
        self, devices: Sequence[DeviceState], running: Iterable[int], now_s: float
    ) -> tuple[DeviceSlots, ...]:
        """The devices for listings, with when each frees up (``Outlook.free_in``); ``running``: the ids
        of our running jobs."""
        free_in = self.outlook((), devices, self._records(running), now_s).free_in
        return tuple(
            DeviceSlots(
                key=d.key, name=d.name, slots=d.slots, running=d.running, paused=d.paused,
                free_in_s=free_in.get(d.key),
            )
            for d in devices
        )  # fmt: skip

    # -- a dispatch pass -------------------------------------------------------------------------
    def plan(
        self,
        pending: Sequence[TaskRecord],
        devices: Sequence[DeviceState],
        now_s: float,
        running: Iterable[int],
    ) -> Plan:
        """``placement.plan`` with the estimates; remembers the devices and makes the offers. ``running``:
        the ids of our running jobs."""
        running = list(running)
        self.progress.forget(running)
        outlook = self.outlook({family_of(r.spec) for r in pending}, devices, self._records(running), now_s)
        stored = {r.id: r for r in pending}
        pending = [self.with_learned_need(r) for r in pending]  # a family's recent peaks count too
        result = plan(pending, devices, now_s=now_s, policy=OutlookPolicy(outlook))
        taken = {d.device for _, d in result.decisions if isinstance(d, Placement)}
        idle = {
            d.key
            for d in devices
            if d.key not in taken and d.running < d.slots and not (d.verdict and d.verdict.busy)
        }
        offers: dict[int, tuple[TaskRecord, Offer, Reason]] = {}
        allowed: AllowedCache = {}
        for task, decision in result.decisions:
            if not idle - taken:
                break  # one offer per free device: only one task can take it
            if (
                isinstance(decision, Wait)
                and not task.spec.offer_declined
                and decision.until_s is None
                and family_of(task.spec) in outlook.run_medians
            ):
                made = self._offer(
                    task, decision, allowed_devices(task, devices, allowed), taken, outlook, now_s
                )
                if made is not None:
                    offers[task.id] = (task, *made)
                    taken.add(made[0].device_key)
        with self._lock:
            self._devices, self._free_in = tuple(devices), outlook.free_in
            self._offers = {i: o for i, (_, o, _) in offers.items()}
            new = [(t, o, m) for i, (t, o, m) in offers.items() if i not in self._offered]
            self._offered.update(offers)
        for task, offer, message in new:
            if self.emit_offer is not None:
                self.emit_offer(task, message, offer)
        # the decisions carry the stored records: the start checks that the task did not change since the
        # pass (``JobRuns._still_placeable``), and a learned need is no change (it was: never started, and a
        # pass over and over)
        return dataclasses.replace(
            result, decisions=tuple((stored.get(t.id, t), d) for t, d in result.decisions)
        )

    def _offer(
        self,
        task: TaskRecord,
        wait: Wait,
        allowed: Sequence[DeviceState],
        taken: set[str],
        outlook: Outlook,
        now_s: float,
    ) -> tuple[Offer, Reason] | None:
        waited = now_s - wait_started_s(task)
        family = family_of(task.spec)
        best: tuple[float, DeviceState] | None = None
        for dev in allowed:
            if dev.key == wait.device or dev.key in taken or busy_reason(task, dev) is not None:
                continue
            run = outlook.run_s(family, dev.key)
            if run is not None and waited > run and (best is None or run < best[0]):
                best = (run, dev)
        if best is None:
            return None
        run, dev = best
        offer = Offer(device_key=dev.key, device_name=dev.name, run_s=run, waited_s=waited)
        return offer, OfferMade(name=task.name, waited_s=waited, device=dev.name, run_s=run)

    # -- views -----------------------------------------------------------------------------------
    def views(self, records: Iterable[TaskRecord], now_s: float | None = None) -> Tasks:
        """The records' views, with ``estimate_s`` and ``offer`` on the pending ones and ``progress`` and
        ``eta_s`` on the running ones that report their progress."""
        records = list(records)
        pending = [r for r in records if r.pending]
        running = [r for r in records if r.state == "running"]
        now = time.time() if now_s is None else now_s
        if not pending:
            return tuple(self.with_progress(TaskView.of(r), r, now) for r in records)
        with self._lock:
            devices, free_in, offers = self._devices, self._free_in, dict(self._offers)
        outlook = self.outlook({family_of(r.spec) for r in pending}, devices, running, now, free_in=free_in)
        out = []
        allowed: AllowedCache = {}
        for rec in records:
            rec = self.with_learned_need(rec) if rec.pending else rec
            view = self.with_progress(TaskView.of(rec, offers.get(rec.id) if rec.pending else None), rec, now)
            if rec.pending:
                estimates = self.estimates(rec, allowed_devices(rec, devices, allowed), outlook)
                if estimates:
                    view = msgspec.structs.replace(view, estimate_s=estimates)
            out.append(view)
        return tuple(out)

    def with_progress(self, view: TaskView, rec: TaskRecord, now_s: float) -> TaskView:
        """A running task's view with its job's progress (0..1) and time left, where it reports them."""
        found = self.progress.progress(rec) if rec.state == "running" else None
        if found is None:
            return view
        run = self.progress.paced([rec]).get(rec.id, rec.run_s(now_s) or 0.0)
        return msgspec.structs.replace(view, progress=found.fraction, eta_s=left_s(found.fraction, run))

    @staticmethod
    def estimates(rec: TaskRecord, allowed: Sequence[DeviceState], outlook: Outlook) -> tuple[Estimate, ...]:
        """The task's estimate on each device it may use (``allowed``), where its family has one."""
        family = family_of(rec.spec)
        if family not in outlook.run_medians:  # never ran: nothing to say
            return ()
        out = []
        for dev in allowed:
            run = outlook.run_s(family, dev.key)
            if run is None:
                continue
            wait = outlook.free_in.get(dev.key)
            finish = None if wait is None else wait + run
            runs = outlook.run_counts.get(family, {}).get(dev.key, 0)
            throttled = outlook.throttled_counts.get(family, {}).get(dev.key, 0)
            out.append(
                Estimate(
                    device_key=dev.key, device_name=dev.name, run_s=run, finish_s=finish, runs=runs,
                    throttled_runs=throttled,
                )
            )  # fmt: skip
        return tuple(out)
