"""Tasks, the durable queue, placement, environments, launcher, IPC and the CLI. Never imports Qt."""
