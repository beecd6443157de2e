"""gputray across machines, on Ray: see docs/cluster.md. Only ``bridge`` and ``agent`` use Ray."""
