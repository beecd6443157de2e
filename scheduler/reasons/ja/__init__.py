"""Reasons in Japanese: one wording per code (``reasons.codes`` and the monitor's ``busy_why``).

A list inside a reason is joined with "、", reasons in a row with "。"; brackets are the full-width
（）and never nest (an inner reason in brackets is joined with "、" instead). Names, sizes and
numbers stay as they are.

One module per area (the monitor's verdicts, placement, jobs, residents, the cluster …); each registers its
wordings in ``JA`` (``common``) as it is imported, and this package imports them all.
"""

from __future__ import annotations

from gputray.scheduler.reasons.ja import (  # noqa: F401  (each registers its words)
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
from gputray.scheduler.reasons.ja.common import JA as JA
