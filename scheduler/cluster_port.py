"""What the scheduler asks of a cluster, as Protocols: the scheduler never imports the cluster package.

The cluster sits above the scheduler (layers gui → cluster → scheduler → monitor). Whoever starts an
owner or the command line from above hands it the cluster's side of these seams:

- ``ClusterPort``: what the queue and the owner use while they run — which pending tasks are not this
  queue's to start, the submit check for a task bound for another machine (``--machine``), the
  document ``status --cluster`` shows, and the bridge's and the agent's ops.
- ``ClusterLinkFactory``: how an owner makes its port once its store is open.
- ``ClusterCommands``: what the command line adds — the ``cluster`` subcommand, ``status --cluster``,
  the ``[cluster]`` checks of ``gputray config`` and the daemon's link.

With none handed (tests, or a build without the cluster), every task is this queue's and the cluster's
commands are absent.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from gputray.scheduler import protocol as rq
    from gputray.scheduler import replies as rp
    from gputray.scheduler.cluster_records import ClusterStatus
    from gputray.scheduler.config import ClusterSection
    from gputray.scheduler.paths import Paths
    from gputray.scheduler.queue.store import TaskStore
    from gputray.scheduler.tasks.records import QueueEvent, TaskRecord, TaskSpec


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

    def attach(self, queue: Any) -> None: ...

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
    """Makes an owner's ``ClusterPort`` once its store is open (``cluster.link.ClusterLink`` is one)."""

    def __call__(
        self,
        paths: Paths,
        store: TaskStore,
        *,
        clock: Callable[[], float],
        emit: Callable[[QueueEvent], None] | None,
    ) -> ClusterPort: ...


class ClusterCommands(Protocol):
    """What the cluster adds to the ``gputray`` command line (``cluster.plug.CLUSTER_COMMANDS``)."""

    names: frozenset[str]  # the subcommands it registers ("cluster")

    def register(self, sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None: ...

    def status(self, args: argparse.Namespace) -> int:
        """``gputray status --cluster``: every machine's GPUs, grouped by machine."""
        ...

    def config_problem(self, section: ClusterSection) -> str | None:
        """What is wrong in a ``[cluster]`` table beyond its types (sizes, durations, the machine name):
        what the bridge would refuse at start; None when nothing is."""
        ...

    def link_factory(self) -> ClusterLinkFactory: ...
