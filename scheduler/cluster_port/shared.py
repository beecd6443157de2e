"""The pure pieces the cluster shares with the local queue, so that a task is judged the same way on
every machine: placement (``queue/placement.py``), dependencies, the submit-time device checks, the
task file's value parsers, a job's ``{out}`` path, the doctor's failed needs and reading a job's log.
Part of the port: the cluster reaches them here, never in ``queue/``, ``tasks/`` or ``jobs/`` directly.
They decide or read; none of them writes the queue (that goes through ``QueuePort``)."""

from __future__ import annotations

from gputray.scheduler.jobs.invocation import free_out_path
from gputray.scheduler.jobs.log_files import LogNotReadable, read_log
from gputray.scheduler.pyenvs.doctor_cache import DoctorNeeds
from gputray.scheduler.queue.dependencies import gate
from gputray.scheduler.queue.device_checks import (
    SeenDevice,
    SubmitRefused,
    check_device_names,
    check_memory,
    check_submit,
)
from gputray.scheduler.queue.placement import Decision, DeviceState, GiveUp, Placement, Wait, plan
from gputray.scheduler.reasons.taskfile_codes import FromMachine
from gputray.scheduler.tasks.recipes import SubmitError, check_runnable
from gputray.scheduler.tasks.taskfile import parse_duration, parse_size, spec_from_patch

__all__ = [
    "Decision",
    "DeviceState",
    "DoctorNeeds",
    "FromMachine",
    "GiveUp",
    "LogNotReadable",
    "Placement",
    "SeenDevice",
    "SubmitError",
    "SubmitRefused",
    "Wait",
    "check_device_names",
    "check_memory",
    "check_runnable",
    "check_submit",
    "free_out_path",
    "gate",
    "parse_duration",
    "parse_size",
    "plan",
    "read_log",
    "spec_from_patch",
]
