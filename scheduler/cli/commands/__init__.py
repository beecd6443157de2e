"""One module per command family (daemon, submit/run, queue/logs, control, schedule, status, devices,
envs, doctor), each exposing ``register(subparsers)``; ``client`` holds what the client commands share."""
