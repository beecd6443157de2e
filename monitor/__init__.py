"""GPU and host monitoring. Never imports Qt, nor anything else of gputray."""
