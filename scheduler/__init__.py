"""The local job queue, in wings: ``tasks`` (the task model), ``queue`` (the durable queue and its
decisions), ``jobs`` (a task's process), ``pyenvs`` (Python environments and the doctor), ``ipc`` (the
owner's socket and pipe), ``cli`` (the command line). Beside them: the owner that wires them together,
the protocol and replies every caller shares, the config file, paths, console and log set-up.
Never imports Qt."""
