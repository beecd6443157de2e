"""Python environments that jobs run in (the ``[[env]]`` tables of the config file) and the GPU doctor
that proves which one works on which device. "env" in this package means a Python environment, never
environment variables (those are ``scheduler.jobs.invocation``'s)."""
