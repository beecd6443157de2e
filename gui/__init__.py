"""The tray app: the only place that imports Qt."""
