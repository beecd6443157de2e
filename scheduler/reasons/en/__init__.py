"""Reasons in English: one wording per code (``reasons.codes`` and the monitor's ``busy_why``).

One module per area (the monitor's verdicts, placement, jobs, residents, the cluster …); each registers its
wordings in ``EN`` (``common``) as it is imported, and this package imports them all.
"""

from __future__ import annotations

from gputray.scheduler.reasons.en import (  # noqa: F401  (each registers its words)
    cluster,
    config,
    dependencies,
    devices,
    doctor,
    envs,
    events,
    jobs,
    monitor,
    placement,
    refusals,
    residents,
    submit,
    taskfile,
)
from gputray.scheduler.reasons.en.common import EN as EN
