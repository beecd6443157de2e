"""What the scheduler asks of a cluster, as Protocols: the scheduler never imports the cluster package.

The cluster sits above the scheduler (layers gui → cluster → scheduler → monitor). Whoever starts an
owner or the command line from above hands it the cluster's side of these seams:

- ``ClusterPort``: what the queue and the owner use while they run — which pending tasks are not this
  queue's to start, the submit check for a task bound for another machine (``--machine``), the
  document ``status --cluster`` shows, and the bridge's and the agent's ops.
- ``QueuePort``: what the cluster may ask of this machine's queue, the other way (``queue/cluster_side.py``
  answers it): read tasks, hand a task another machine sent here to the queue, take one back that has
  not started, record the bridge's lifecycle steps. Typed end to end: no ``Any`` crosses the seam
  (``tests/cluster/test_seam.py``).
- ``ClusterLinkFactory``: how an owner makes its port.
- ``ClusterCommands``: what the command line adds — the ``cluster`` subcommand, ``status --cluster``,
  the ``[cluster]`` checks of ``gputray config`` and the daemon's link.

With none handed (tests, or a build without the cluster), every task is this queue's and the cluster's
commands are absent.

This package is the cluster's one door into the scheduler besides the client face (``scheduler/client/``:
the IPC client, requests, replies): ``records`` (the task and cluster records), ``steps`` (the lifecycle
steps the cluster writes), ``reasons`` (the codes it says things with) and ``shared`` (the pure deciders
it shares with the local queue) re-export what it may use; cluster/ imports no other scheduler module
(the ``doors`` import contract in pyproject.toml).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gputray.monitor.records import DeviceReading
    from gputray.scheduler import protocol as rq
    from gputray.scheduler import replies as rp
    from gputray.scheduler.cluster_records import ClusterStatus
    from gputray.scheduler.config import ClusterSection
    from gputray.scheduler.paths import Paths
    from gputray.scheduler.queue.device_checks import SeenDevice
    from gputray.scheduler.queue.placement import DeviceState
    from gputray.scheduler.reasons.codes import Reason
    from gputray.scheduler.tasks.cluster_steps import ClusterStep
    from gputray.scheduler.tasks.records import QueueEvent, TaskRecord, TaskSpec


#: How ``gputray status`` writes one GPU's line: (the reading, the width of the name column) → text.
DeviceLine = Callable[["DeviceReading", int], str]


class QueuePort(Protocol):
    """This machine's queue as the cluster sees it (``queue.cluster_side.ClusterSide``)."""

    def task(self, task_id: int) -> TaskRecord:
        """The task; ``TaskNotFound`` (a ``Refusal``) when there is none."""
        ...

    def find(self, task_id: int) -> TaskRecord | None: ...

    def tasks(self) -> list[TaskRecord]:
        """Every task, in queue order."""
        ...

    def rows(self) -> Mapping[int, TaskRecord]:
        """Every task by id, read-only and live (for lookups)."""
        ...

    def paused(self) -> rp.Paused: ...

    def devices_for_checks(self) -> tuple[list[DeviceState], list[SeenDevice]] | None:
        """The devices present and seen before, for a submit check; None before the first reading."""
        ...

    def hand_over(self, origin: str, spec: TaskSpec) -> tuple[TaskRecord, bool]:
        """Queue a task another machine hands here as ``origin``, once: (the task, already here)."""
        ...

    def take_back(self, task_id: int, origin: str, reason: Reason, *, now: float) -> TaskRecord | None:
        """Cancel a task handed here if it has not started (compare-and-set); None when it had."""
        ...

    def record(
        self,
        task_id: int,
        step: ClusterStep,
        *,
        expect_state: str | None,
        check: Callable[[TaskRecord], None],
        here: str,
    ) -> tuple[TaskRecord, TaskRecord | None]:
        """One lifecycle step of a task the cluster places or another machine runs: (before, after;
        None: it was no longer in ``expect_state``). ``check`` refuses first what the cluster may not
        do to the row; a step its state does not allow raises ``IllegalTransition``."""
        ...


class ClusterPort(Protocol):
    def runs_here(self, rec: TaskRecord) -> bool:
        """False for a pending task another machine runs or the bridge has still to place: this
        queue leaves it alone."""
        ...

    def check_spec(self, spec: TaskSpec) -> None:
        """The submit check (in place of ``recipes.check_runnable``): a task bound for another machine
        is checked against that machine's devices. Raises a ``Refusal`` that names the problem."""
        ...

    def report_doc(self) -> ClusterStatus:
        """Every machine's view, for ``status --cluster`` and the ``cluster status`` subcommand."""
        ...

    def attach(self, queue: QueuePort) -> None:
        """The queue this link answers for, once the owner made it (before: no task is the cluster's)."""
        ...

    def start(self) -> None: ...

    def close(self) -> None: ...

    def on_event(self, event: QueueEvent) -> None: ...

    def on_paused(self) -> None:
        """This machine's pause changed (``pause``, ``resume``): the bridge is told now, not when a
        task next arrives, so other machines stop placing here (or start again) within a second."""
        ...

    def sync(self, req: rq.ClusterSync) -> rp.ClusterSynced: ...

    def update(self, req: rq.ClusterUpdate) -> rp.ClusterTask: ...

    def submit(self, req: rq.ClusterSubmit) -> rp.ClusterTask: ...

    def withdraw(self, req: rq.ClusterWithdraw) -> rp.ClusterTask: ...

    def on_edited(self, rec: TaskRecord) -> None:
        """A task handed to another machine, waiting there, was edited here: the bridge takes it back
        (if it has not started there) and places it afresh as edited."""
        ...


class ClusterLinkFactory(Protocol):
    """Makes an owner's ``ClusterPort`` (``cluster.link.ClusterLink`` is one); the owner then attaches
    its queue's ``QueuePort``."""

    def __call__(
        self,
        paths: Paths,
        *,
        clock: Callable[[], float],
        emit: Callable[[QueueEvent], None] | None,
    ) -> ClusterPort: ...


class ClusterCommands(Protocol):
    """What the cluster adds to the ``gputray`` command line (``cluster.plug.CLUSTER_COMMANDS``)."""

    names: frozenset[str]  # the subcommands it registers ("cluster")

    def register(self, sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None: ...

    def status(self, args: argparse.Namespace, device_line: DeviceLine) -> int:
        """``gputray status --cluster``: every machine's GPUs, grouped by machine, each GPU's line as
        ``gputray status`` writes it (``device_line``, handed by the command line: the cluster borrows
        nothing from it)."""
        ...

    def config_problem(self, section: ClusterSection) -> str | None:
        """What is wrong in a ``[cluster]`` table beyond its types (sizes, durations, the machine name):
        what the bridge would refuse at start; None when nothing is."""
        ...

    def link_factory(self) -> ClusterLinkFactory: ...
