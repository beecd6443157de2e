"""The task model: what to run (``TaskSpec``) and what became of it (``TaskRecord``), read from task files
and recipes. A *task* is what a person queued; the process it becomes is a *job* (``scheduler.jobs``)."""
