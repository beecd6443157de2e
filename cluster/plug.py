"""The cluster's side of the scheduler's seams (``scheduler.cluster_port``), handed down by the entry
points: the scheduler never imports the cluster, the cluster plugs into it from above.

``CLUSTER_COMMANDS`` is what ``gputray.gui.entry`` gives the command line (the ``cluster`` subcommand,
``status --cluster``, the ``[cluster]`` checks of ``gputray config``, the daemon's link);
``cluster.link.ClusterLink`` is itself the ``ClusterLinkFactory`` an owner is handed. Cheap to import:
every ``gputray`` command loads this, so the cluster's modules load only when one is used.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gputray.scheduler.client.settings import ClusterSection
    from gputray.scheduler.cluster_port import ClusterLinkFactory, DeviceLine


class _ClusterCommands:
    names = frozenset({"cluster"})

    def register(self, sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        from gputray.cluster.commands import register

        register(sub)

    def status(self, args: argparse.Namespace, device_line: DeviceLine) -> int:
        from gputray.cluster.commands import status_cluster

        return status_cluster(args, device_line)

    def config_problem(self, section: ClusterSection) -> str | None:
        from gputray.cluster.config import ClusterConfigError, cluster_config

        try:
            cluster_config(section)
        except ClusterConfigError as exc:
            return str(exc)
        return None

    def link_factory(self) -> ClusterLinkFactory:
        from gputray.cluster.link import ClusterLink

        return ClusterLink


CLUSTER_COMMANDS = _ClusterCommands()
