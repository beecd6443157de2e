"""The owner's dispatcher timers that pause, free, give back and move: preemption (``--preempt``),
making room (``[[resident]]``), exclusive apps (``[exclusive]``) and moving a running job its progress
shows ending late (``on_late``, ``late_move``); built here so that the owner stays one page of wiring."""

from __future__ import annotations

from gputray.scheduler.config import Config
from gputray.scheduler.queue.exclusive_apps import ExclusiveApps
from gputray.scheduler.queue.job_pause import JobPauser
from gputray.scheduler.queue.late_move_timer import LateMoves
from gputray.scheduler.queue.make_room import MakeRoom
from gputray.scheduler.queue.preemption import Preemption
from gputray.scheduler.queue.service import QueueService

__all__ = ["ExclusiveApps", "MakeRoom", "Preemption", "add_room_timers"]


def add_room_timers(
    queue: QueueService, pauser: JobPauser, config: Config
) -> tuple[Preemption, MakeRoom, ExclusiveApps]:
    preemption = Preemption(
        queue, pauser, every_task=config.queue.preempt == "priority", max_pause_s=config.queue.max_pause_s
    )
    make_room = MakeRoom(queue, config.residents)
    exclusive = ExclusiveApps(queue, pauser, config.residents.exclusive)
    for timer in (preemption, make_room, exclusive, LateMoves(queue)):
        queue.add_timer(timer)
    return preemption, make_room, exclusive
