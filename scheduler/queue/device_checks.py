"""Device names and memory requests checked when a task is submitted, and the devices seen before.

A preference that names no device present now and none seen before (``--device 4090``) is refused,
with the names known and the closest one; a device seen before and absent now (an unplugged eGPU) is
accepted and the task waits for it ("not present"). A memory request larger than every device the
task may use is refused in human units, naming only those devices.

The devices seen are kept in ``<state folder>/devices_seen.json`` (key, name, vendor, kind, memory,
first and last seen), written when a device first shows up or changes, so they survive restarts.
Simulated devices (the demo) are not remembered.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from gputray.monitor.records import DeviceInfo
from gputray.monitor.units import format_bytes
from gputray.scheduler.protocol import Refusal
from gputray.scheduler.queue.device_names import squashed
from gputray.scheduler.queue.placement import (
    DEFAULT_PREFS,
    GENERIC_PREFS,
    DeviceState,
    resolve_pref,
    total_memory_bytes,
)
from gputray.scheduler.tasks.records import TaskSpec

log = logging.getLogger(__name__)

# How alike (difflib's ratio) a typed name and a class word must be to suggest the class: "nvidai" and
# "nvidia" are 0.83 alike, "amdd" and "amd" 0.86; "4090" and "gpu" 0.
CLASS_TYPO_LIKENESS = 0.6

DEVICES_SEEN_FILE = "devices_seen.json"
SEEN_FORMAT = 1
LAST_SEEN_EVERY_S = 3600.0  # "last seen" is rewritten at most hourly while a device stays present
_VENDOR_WORDS = {"nvidia", "geforce", "rtx", "gtx", "amd", "radeon", "intel", "graphics", "arc", "ati"}


class SubmitRefused(Refusal, ValueError):
    """A task whose devices or memory request cannot be right; the message says why and what exists."""


@dataclass(frozen=True)
class SeenDevice:
    key: str
    name: str
    vendor: str
    kind: str
    vram_total_bytes: int | None
    shared_total_bytes: int | None
    first_seen_s: float
    last_seen_s: float

    def info(self) -> DeviceInfo:
        return DeviceInfo(
            key=self.key,
            name=self.name,
            vendor=self.vendor,  # type: ignore[arg-type]  # a Vendor word, as it was written
            kind=self.kind,  # type: ignore[arg-type]
            backend="remembered",
            vram_total_bytes=self.vram_total_bytes,
            shared_total_bytes=self.shared_total_bytes,
        )


class DevicesSeen:
    """The devices this machine has shown, kept across restarts. Thread-safe; never raises for its file."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._devices: dict[str, SeenDevice] | None = None

    def _load(self) -> dict[str, SeenDevice]:
        if self._devices is None:
            self._devices = {}
            try:
                doc = json.loads(self.path.read_text(encoding="utf-8"))
                if doc.get("format") == SEEN_FORMAT:
                    for item in doc.get("devices", []):
                        seen = SeenDevice(**item)
                        self._devices[seen.key] = seen
            except FileNotFoundError:
                pass
            except (OSError, ValueError, TypeError, AttributeError) as exc:
                log.warning("%s cannot be read (%s); devices seen before are forgotten", self.path, exc)
        return self._devices

    def note(self, infos: Iterable[DeviceInfo]) -> None:
        """Remember the devices present now; writes the file only when something changed."""
        now = self._clock()
        with self._lock:
            devices = self._load()
            changed = False
            for info in infos:
                if info.simulated or info.kind == "cpu" or info.key == "cpu":
                    continue
                old = devices.get(info.key)
                new = SeenDevice(
                    info.key,
                    info.name,
                    str(info.vendor),
                    str(info.kind),
                    info.vram_total_bytes,
                    info.shared_total_bytes,
                    old.first_seen_s if old else now,
                    now,
                )
                stale = old is None or now - old.last_seen_s >= LAST_SEEN_EVERY_S
                if stale or (old is not None and old.info() != new.info()):
                    devices[info.key] = new
                    changed = True
            if changed:
                self._save(devices)

    def _save(self, devices: dict[str, SeenDevice]) -> None:
        doc = {"format": SEEN_FORMAT, "devices": [asdict(d) for d in devices.values()]}
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("cannot write %s: %s", self.path, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()

    def remembered(self) -> list[SeenDevice]:
        with self._lock:
            return list(self._load().values())


def short_name(name: str) -> str:
    """``GeForce RTX 5060 Ti`` → ``5060ti``, ``Radeon 780M`` → ``780m``: what people type."""
    words = [w for w in re.findall(r"[a-z0-9]+", name.lower()) if w not in _VENDOR_WORDS]
    return "".join(words) or re.sub(r"[^a-z0-9]", "", name.lower())


def _likeness(wanted: str, names: Iterable[str]) -> float:
    return max((difflib.SequenceMatcher(None, wanted, name).ratio() for name in names), default=0.0)


def _device_likeness(wanted: str, info: DeviceInfo) -> float:
    return _likeness(wanted, (squashed(info.name), short_name(info.name), info.key.lower()))


def closest_device(text: str, infos: Sequence[DeviceInfo]) -> DeviceInfo | None:
    """The device whose name (or short name) is most like ``text``; None when nothing is alike at all."""
    wanted = squashed(text)
    best = max(infos, key=lambda info: _device_likeness(wanted, info), default=None)
    return best if best is not None and _device_likeness(wanted, best) >= 0.3 else None


def closest_name(
    text: str, infos: Sequence[DeviceInfo], classes: Collection[str] = GENERIC_PREFS
) -> str | None:
    """What to suggest for ``text``: the device most like it (``GeForce RTX 5060 Ti (5060ti)``) or, when
    one is more alike and alike enough to be a typo of it, a word of ``classes`` (``nvidia`` for
    ``nvidai``: every NVIDIA GPU). None when nothing is alike."""
    wanted = squashed(text)
    near = closest_device(text, infos)
    word = max(sorted(classes), key=lambda w: _likeness(wanted, (w,)))
    word_likeness = _likeness(wanted, (word,))
    beats_the_device = near is None or word_likeness > _device_likeness(wanted, near)
    if word_likeness >= CLASS_TYPO_LIKENESS and beats_the_device:
        return word
    return f"{near.name} ({short_name(near.name)})" if near is not None else None


def unknown_device_message(
    text: str,
    infos: Sequence[DeviceInfo],
    *,
    what: str = "no device",
    see: str = "gputray devices",
    classes: Collection[str] = GENERIC_PREFS,
) -> str:
    """``no device matches '4090'; closest: GeForce RTX 5060 Ti (5060ti); known: …, cpu — see …``.
    ``classes``: the words for several devices that the command takes (`pause` takes only ``cpu``)."""
    gpus = [i for i in infos if i.kind != "cpu" and i.key != "cpu"]
    known = ", ".join(f"{i.name} ({short_name(i.name)}, {i.key})" for i in gpus)
    known = f"{known}, cpu" if known else "cpu (no GPU seen yet)"
    near = closest_name(text, gpus, classes)
    closest = f"; closest: {near}" if near is not None else ""
    return f"{what} matches {text!r}{closest}; known: {known} — see `{see}`"


def allowed_devices(spec: TaskSpec, devices: Sequence[DeviceState]) -> list[DeviceState]:
    """The devices the task may ever run on, by its preferences and policy (as ``placement.place``)."""
    prefs = spec.device_prefs or DEFAULT_PREFS
    groups = [resolve_pref(p, devices) for p in prefs]
    can_wait_out = spec.max_wait_s is not None
    redirect = spec.on_busy == "redirect" or (can_wait_out and spec.after_max_wait == "redirect")
    to_cpu = spec.on_busy == "cpu" or (can_wait_out and spec.after_max_wait == "cpu")
    allowed = list(groups[0])
    if redirect:
        later = (
            [d for g in groups[1:] for d in g] if len(groups) > 1 else [d for d in devices if not d.is_cpu]
        )
        allowed += later
    if to_cpu:
        allowed += [d for d in devices if d.is_cpu]
    return list({d.key: d for d in allowed}.values())


def torch_device_keys(specs: Iterable[TaskSpec], devices: Sequence[DeviceState]) -> set[str]:
    """The devices some torch task among ``specs`` may run on: where its env must be known (and
    checked), and nowhere else (one check per shape of preferences, not per task)."""
    shapes = {
        (s.device_prefs, s.on_busy, s.max_wait_s is None, s.after_max_wait): s
        for s in specs
        if s.kind == "torch"
    }
    return {d.key for s in shapes.values() for d in allowed_devices(s, devices)}


def check_submit(spec: TaskSpec, present: Sequence[DeviceState], remembered: Sequence[SeenDevice]) -> None:
    """Refuse (SubmitRefused) a device name that matches nothing present or seen before, and a memory
    request larger than every device the task may use. ``present`` includes the CPU."""
    here = {d.key for d in present}
    absent = [DeviceState(info=s.info()) for s in remembered if s.key not in here]
    everything = [*present, *absent]
    check_device_names(spec, everything)
    check_memory(spec, everything)


def check_device_names(
    spec: TaskSpec, devices: Sequence[DeviceState], *, where: str = "", see: str = "gputray devices"
) -> None:
    """Refuse a device preference that names none of ``devices`` (``where``: `` on laptop``)."""
    for pref in spec.device_prefs:
        if pref.strip().lower() in GENERIC_PREFS or resolve_pref(pref, devices):
            continue
        message = unknown_device_message(pref, [d.info for d in devices], what=f"no device{where}", see=see)
        raise SubmitRefused(f"{spec.name}: {message}")


def check_memory(spec: TaskSpec, devices: Sequence[DeviceState], *, where: str = "") -> None:
    """Refuse a memory request larger than every one of ``devices`` the task may use."""
    need = spec.memory_need_bytes
    if not need:
        return
    allowed = allowed_devices(spec, devices)
    totals = [(d, total_memory_bytes(d)) for d in allowed]
    if not totals or any(total is None for _, total in totals):
        return  # a device that does not say how much it has might fit
    largest, most = max(totals, key=lambda item: item[1] or 0)
    if most is not None and need > most:
        name = "the CPU (RAM)" if largest.is_cpu else largest.name
        hint = ""
        if spec.vram_bytes is None and spec.vram_need_bytes is not None:  # a guess from its arguments
            hint = " (if the job needs less on the GPU, say how much: --vram SIZE, or `vram` in a task file)"
        raise SubmitRefused(
            f"{spec.name}: {_asks(spec)}; the largest allowed device{where}, {name}, has {format_bytes(most)}"
            + hint
        )


def _asks(spec: TaskSpec) -> str:
    """``memory asks 4.0 GiB`` (its ``vram``), or the need its model files predict, and from what."""
    if spec.vram_bytes is None and spec.vram_need_bytes is not None:
        return f"its model files need ~{format_bytes(spec.vram_need_bytes)} ({spec.vram_need_source})"
    return f"memory asks {format_bytes(spec.memory_need_bytes or 0)}"


def remembered_absent_note(
    prefs: Sequence[str], present: Sequence[DeviceState], seen: Sequence[SeenDevice]
) -> list[str]:
    """For a task that names a device seen before but absent now: it waits for it."""
    here = {d.key for d in present}
    absent = [DeviceState(info=s.info()) for s in seen if s.key not in here]
    notes = []
    for pref in prefs:
        if pref.strip().lower() in GENERIC_PREFS or resolve_pref(pref, present):
            continue
        for d in resolve_pref(pref, absent):
            last = next(s.last_seen_s for s in seen if s.key == d.key)
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(last))
            notes.append(f"{d.name} is not present now (last seen {when}); the task waits for it")
    return notes
