"""Tray notifications: one per event worth a glance, rate-limited, each kind can be turned off.

Messages from the queue and the monitor are shown in the user's language (``gui/messages.py``). A
``sink`` shows the message (``QSystemTrayIcon.showMessage`` in the app); every shown or dropped message
is also logged, so a user (and the end-to-end test) can see what the app told them. Clicking a job
message opens that job's log. A ``job_offer`` notice (a waiting task could start now on another device:
``replies.Offer``) carries the task and the offer, so the sink can ask "Run on … now" / "Keep waiting"
(``gui/offer_prompts.py``). A ``resident_ask`` notice carries the "ask" question of making room
(``replies.RoomQuestion``: "Free ComfyUI's 9.8 GiB and run train.py" / "Keep waiting",
``gui/room_prompts.py``); ``gpu_taken`` says that an exclusive app (a game) took a GPU and gave it back
(``gui/resident_text.py`` words them).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gputray.gui import messages
from gputray.gui.i18n import tr
from gputray.monitor.records import DeviceEvent
from gputray.scheduler.client.replies import Offer, RoomQuestion, TaskView
from gputray.scheduler.client.settings import NOTIFICATION_KINDS
from gputray.scheduler.client.words import Reason

log = logging.getLogger("gputray.gui.notifications")

KINDS = NOTIFICATION_KINDS  # the config checks their names


def kind_labels() -> dict[str, str]:
    return {
        "job_started": tr("Job started"),
        "job_redirected": tr("Job redirected to another GPU"),
        "job_finished": tr("Job finished"),
        "job_failed": tr("Job failed"),
        "job_offer": tr("Job could run on another GPU now"),
        "resident_ask": tr("An idle GPU server could free memory for a job"),
        "gpu_taken": tr("A game or exclusive app took a GPU, or gave it back"),
        "gpu_hot": tr("GPU over temperature"),
        "gpu_lost": tr("GPU lost"),
        "gpu_back": tr("GPU back"),
    }


@dataclass(frozen=True)
class Notice:
    kind: str
    title: str
    message: str
    critical: bool = False
    log_path: str | None = None
    key: str = ""  # what the notice is about (task id, device key): repeats of one key are limited
    task_id: int | None = None
    offer: Offer | None = None  # job_offer: where the task could start now
    room: RoomQuestion | None = None  # resident_ask: the idle resident whose memory would let it start


Sink = Callable[[Notice], None]


class Notifier:
    """Rate limits: the same kind and key at most once per ``repeat_s``; at most ``burst`` per minute."""

    def __init__(
        self,
        sink: Sink,
        *,
        enabled: Mapping[str, bool] | None = None,
        repeat_s: float = 60.0,
        burst: int = 6,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sink = sink
        self.enabled = {k: True for k in KINDS}
        if enabled:
            self.enabled.update({k: bool(v) for k, v in enabled.items() if k in KINDS})
        self.repeat_s = repeat_s
        self.burst = burst
        self._clock = clock
        self._last: dict[tuple[str, str], float] = {}
        self._recent: deque[float] = deque()
        self.last_log_path: str | None = None
        self.shown: list[Notice] = []
        self.settled_offers: set[int] = set()  # tasks whose offer was answered: never offered again

    def notify(self, notice: Notice) -> bool:
        if not self.enabled.get(notice.kind, True):
            log.info("notification off (%s): %s", notice.kind, notice.message)
            return False
        now = self._clock()
        last = self._last.get((notice.kind, notice.key))
        # Job notices for different tasks are distinct keys; a device going hot again and again is not.
        if last is not None and now - last < self.repeat_s:
            log.info("notification rate-limited (%s): %s", notice.kind, notice.message)
            return False
        while self._recent and now - self._recent[0] > 60.0:
            self._recent.popleft()
        if len(self._recent) >= self.burst and not notice.critical:
            log.info("notification over burst limit (%s): %s", notice.kind, notice.message)
            return False
        self._last[(notice.kind, notice.key)] = now
        self._recent.append(now)
        if notice.log_path:
            self.last_log_path = notice.log_path
        self.shown.append(notice)
        del self.shown[:-50]
        log.info("notification shown (%s): %s — %s", notice.kind, notice.title, notice.message)
        self.sink(notice)
        return True

    # -- turning events into notices -------------------------------------------------------------------
    def on_device_events(self, events: Iterable[DeviceEvent]) -> None:
        for ev in events:
            if ev.kind == "hot":
                title, kind, critical = tr("{name} is hot"), "gpu_hot", True
            elif ev.kind in ("lost", "vanished"):
                title, kind, critical = tr("{name} lost"), "gpu_lost", True
            elif ev.kind == "back":
                title, kind, critical = tr("{name} is back"), "gpu_back", False
            else:
                continue
            self.notify(
                Notice(kind, title.format(name=ev.name), messages.reason(ev.message), critical, key=ev.key)
            )

    def on_queue_event(self, kind: str, task: TaskView, message: Reason | None) -> None:
        """A scheduler QueueEvent (kind, the task, message) → maybe a notice."""
        name = task.name or str(task.id)
        log_path = task.log_path
        key = str(task.id)
        notice_kind = queue_event_kind(kind, task)
        if notice_kind is None:
            return
        if notice_kind == "job_offer":
            self._offer(task)  # its body says the event's arithmetic itself, in the user's language
            return
        titles = {
            "job_started": tr("Started: {name}"),
            "job_redirected": tr("Redirected: {name}"),
            "job_finished": tr("Finished: {name}"),
            "job_failed": tr("Failed: {name}"),
        }
        self.notify(
            Notice(
                notice_kind,
                titles[notice_kind].format(name=name),
                messages.reason(message if message is not None else task.reason, task.state),
                critical=notice_kind == "job_failed",
                log_path=str(log_path) if log_path else None,
                key=f"{key}:{notice_kind}",
            )
        )

    def _offer(self, task: TaskView) -> None:
        offer = task.offer
        if offer is None:
            log.warning("an offer event without an offer for task #%d", task.id)
            return
        if task.id in self.settled_offers:
            log.info("offer for task #%d not shown: already answered", task.id)
            return
        name = task.name or str(task.id)
        body = tr("Waiting for {waited}; it takes about {run} on {device}.").format(
            waited=short_duration(offer.waited_s), run=short_duration(offer.run_s), device=offer.device_name
        )
        title = tr("{name} can start now on {device}").format(name=name, device=offer.device_name)
        self.notify(
            Notice("job_offer", title, body, key=f"{task.id}:job_offer", task_id=task.id, offer=offer)
        )


def short_duration(seconds: float) -> str:
    """``"45 s"``, ``"12 min"``, ``"2 h 05 min"``: an estimate's precision, in the user's language."""
    seconds = max(1, round(seconds))
    if seconds < 60:
        return tr("{n} s").format(n=seconds)
    minutes = round(seconds / 60)
    if minutes < 60:
        return tr("{n} min").format(n=minutes)
    return tr("{h} h {m:02d} min").format(h=minutes // 60, m=minutes % 60)


def queue_event_kind(kind: str, task: TaskView) -> str | None:
    """Map the scheduler's event names (and, as a fallback, the task's state) to a notice kind."""
    k = kind.lower()
    if k == "offer":
        return "job_offer"
    if "redirect" in k:
        return "job_redirected"
    if k in ("started", "running", "start", "job_started"):
        return "job_started"
    if k in ("failed", "interrupted", "job_failed"):
        return "job_failed"
    if k in ("succeeded", "finished", "done", "job_finished"):
        return "job_finished"
    if k in ("ended", "exited", "state"):
        state = task.state
        if state == "succeeded":
            return "job_finished"
        if state in ("failed", "interrupted"):
            return "job_failed"
    return None
