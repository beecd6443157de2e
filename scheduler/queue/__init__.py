"""The durable queue and its decisions: the SQLite store (and its salvage), the queue service, edits,
dependencies, placement, start times, the queue lock, and acting on the saved queue when no owner runs."""
