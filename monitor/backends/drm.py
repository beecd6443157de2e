"""The shape the Linux DRM backends share (amdgpu, Intel, every other card): one loop over the cards.

Each tick :meth:`DrmBackend.poll` lists ``class/drm/cardN``, asks the backend who each card is
(:meth:`~DrmBackend._identify`: identity only, from files that never wake a GPU), forgets the cards
that went away, reads ``power/runtime_status`` and reports a runtime-suspended card asleep with nothing
else read, looks once at a card that is awake for the first time (:meth:`~DrmBackend._discover`),
samples the rest, and attributes the DRM clients (fdinfo, read once per tick for every backend).
A card whose files fail to read is skipped with a log line, and anything else becomes an empty poll:
the Backend contract is never to raise into the monitor. What differs between the backends (which
cards are theirs, what they read, how a client becomes a process row) is in their own modules.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from gputray.monitor import busy_why as why
from gputray.monitor.fdinfo import DrmUsageReader, ProcUsage, read_file_bytes
from gputray.monitor.records import BackendPoll, DeviceInfo, DeviceReading, ProcessUse, Sample
from gputray.monitor.sysfs import drm_cards, drm_class_dir, text_of

log = logging.getLogger(__name__)

ASLEEP_REASON = why.NotWoken()
_ASLEEP_STATES = ("suspended", "suspending")


class DrmCard(Protocol):
    """What the shared loop needs of a backend's card record (its own dataclass)."""

    card: str  # "cardN"
    device: str  # ".../class/drm/cardN/device"
    info: DeviceInfo
    complete: bool  # False until discovered while awake


CardT = TypeVar("CardT", bound=DrmCard)


def uevent_fields(raw: bytes | None) -> dict[str, str]:
    """``KEY=value`` lines of a ``uevent`` file (the PCI core's cached identity) as a dict."""
    values: dict[str, str] = {}
    for line in (text_of(raw) or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values


def read_uevent(path: str) -> dict[str, str]:
    return uevent_fields(read_file_bytes(path, 4096))


class DrmBackend(ABC, Generic[CardT]):
    """A Backend over the DRM cards of ``sys_dir`` (read as if it were ``/sys``) and the DRM clients of
    ``proc_dir`` (read as if it were ``/proc``).

    ``usage``: the DRM process reader, shared by every DRM backend (one walk of /proc per tick); None:
    no process rows. ``owns_usage``: this backend closes it (the factory's shared reader is closed by
    the backends that made or were handed it, which is harmless twice).
    """

    name: str

    def __init__(
        self, sys_dir: Path, proc_dir: Path, usage: DrmUsageReader | None, *, owns_usage: bool
    ) -> None:
        self.sys_dir = sys_dir
        self.proc_dir = proc_dir
        self._usage = usage
        self._owns_usage = owns_usage
        self._cards: dict[str, CardT] = {}

    def close(self) -> None:
        self._cards.clear()
        if self._usage is not None and self._owns_usage:
            self._usage.close()

    def watch_pids(self, pids: frozenset[int]) -> None:
        """The queue's own jobs (the Monitor says which): their fds are walked every tick."""
        if self._usage is not None:
            self._usage.watch_pids(pids)

    def poll(self, now_s: float) -> BackendPoll:
        try:
            return self._poll(now_s)
        except Exception:  # the Backend contract: never raise into the monitor
            log.exception("%s poll failed", self.name)
            return BackendPoll()

    def _poll(self, now_s: float) -> BackendPoll:
        drm = drm_class_dir(Path(self.sys_dir))
        found: list[CardT] = []
        for card_name in drm_cards(drm):
            try:
                card = self._identify(f"{drm}/{card_name}", card_name, self._cards.get(card_name))
            except Exception:
                log.exception("reading %s failed", card_name)
                continue
            if card is not None:
                self._cards[card_name] = card
                found.append(card)
        for gone in self._cards.keys() - {c.card for c in found}:
            del self._cards[gone]
        if not found:
            return BackendPoll()
        usage = self._usage.read(now_s) if self._usage is not None else None
        readings: list[DeviceReading] = []
        for card in found:
            try:
                reading = self._reading(card, usage, now_s)
            except Exception:
                log.exception("reading %s failed", card.card)
                reading = None
            if reading is None:  # gone while being read: discovered afresh if it comes back
                self._cards.pop(card.card, None)
            else:
                readings.append(reading)
        return self._finish(readings, usage)

    def _reading(self, card: CardT, usage: ProcUsage | None, now_s: float) -> DeviceReading | None:
        runtime = text_of(read_file_bytes(f"{self._power_dir(card)}/power/runtime_status", 64))
        if runtime in _ASLEEP_STATES:
            return DeviceReading(
                card.info, Sample(card.info.key, now_s, state="asleep", reason=ASLEEP_REASON)
            )
        if not card.complete:
            self._discover(card)
            card.complete = True
        sample = self._sample(card, usage, now_s)
        return DeviceReading(card.info, sample) if sample is not None else None

    def _finish(self, readings: Sequence[DeviceReading], usage: ProcUsage | None) -> BackendPoll:
        """The poll from this tick's readings: its process rows from the DRM clients."""
        processes = self._processes(usage) if usage is not None else ()
        return BackendPoll(tuple(readings), processes)

    def _power_dir(self, card: CardT) -> str:
        """The device folder whose ``power/runtime_status`` says whether the card sleeps."""
        return card.device

    # -- what each backend says --------------------------------------------------------------------

    @abstractmethod
    def _identify(self, card_dir: str, card_name: str, known: CardT | None) -> CardT | None:
        """The card at ``card_dir`` if it is this backend's (``known`` again while its identity holds),
        else None. Reads only what wakes nothing (``uevent``, ``vendor``/``device``)."""

    @abstractmethod
    def _discover(self, card: CardT) -> None:
        """First look at an awake card: the files to read each tick, totals, name and kind."""

    @abstractmethod
    def _sample(self, card: CardT, usage: ProcUsage | None, now_s: float) -> Sample | None:
        """One sample of an awake, discovered card; None: the card went away while being read."""

    @abstractmethod
    def _processes(self, usage: ProcUsage) -> tuple[ProcessUse, ...]:
        """The DRM clients on this backend's cards as process rows."""
