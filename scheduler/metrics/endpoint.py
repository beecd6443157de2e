"""The owner's metrics endpoint: the registry, the job counters fed by its events, and the server.

``start_metrics`` is all the owner calls; it decides from ``[metrics]`` whether to serve at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from gputray.monitor.records import Snapshot
from gputray.scheduler.metrics.exporter import QueueFacts, build_exposition
from gputray.scheduler.metrics.listen import ListenAddress, ListenError, checked_listen
from gputray.scheduler.metrics.server import MetricsServer
from gputray.scheduler.queue.service import QueueService
from gputray.scheduler.tasks.records import PENDING_STATES, QueueEvent, TaskRecord

log = logging.getLogger("gputray.metrics")


class MetricsEndpoint:
    """The series (``exporter``), the job counters fed by the owner's events, the server: one per owner."""

    def __init__(
        self, address: ListenAddress, *, token: str, latest: Callable[[], Snapshot | None], facts: QueueFacts
    ) -> None:
        self.exposition = build_exposition(latest, facts)
        self.server = MetricsServer(address, self.exposition.text, token=token)

    def start(self) -> bool:
        """Serve; False (logged, the owner goes on without metrics) when the address cannot be bound."""
        try:
            self.server.start()
        except OSError as exc:
            log.error("metrics not served: cannot listen on %s: %s", self.server.address.url(), exc)
            return False
        log.info("metrics at %s", self.server.url)
        return True

    def observe(self, event: QueueEvent) -> None:
        self.exposition.jobs.observe(event)

    def stop(self) -> None:
        self.server.stop()


class _PendingIds:
    """``task_id in pending``: whether the store holds it queued or waiting now (no copy of the rows)."""

    def __init__(self, view: Mapping[int, TaskRecord]) -> None:
        self._view = view

    def __contains__(self, task_id: object) -> bool:
        record = self._view.get(task_id) if isinstance(task_id, int) else None
        return record is not None and record.state in PENDING_STATES


class ServiceFacts:
    """``QueueFacts`` of a running ``QueueService``: its store's counts and its dispatcher's waits."""

    def __init__(self, queue: QueueService) -> None:
        self._queue = queue

    def counts(self) -> Mapping[str, int]:
        return self._queue.store.counts()

    def waiting_by_device(self) -> Mapping[str, int]:
        return self._queue.waits_book.by_device(_PendingIds(self._queue.store.view()))


def start_metrics(
    listen: str, token: str, *, queue: QueueService, latest: Callable[[], Snapshot | None]
) -> MetricsEndpoint | None:
    """The owner's endpoint, serving; None when ``[metrics] listen`` is off, may not be served (the
    config check has named why) or cannot be bound (logged)."""
    try:
        address = checked_listen(listen, token)
    except ListenError as exc:
        log.error("metrics not served: [metrics] listen = %r: %s", listen, exc)
        return None
    if address is None:
        return None
    endpoint = MetricsEndpoint(address, token=token, latest=latest, facts=ServiceFacts(queue))
    return endpoint if endpoint.start() else None
