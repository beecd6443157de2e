"""A task's reason as data (``codes``), put into words per language by one renderer (``render``):
``en`` and ``ja`` are the catalogues. See docs/architecture.md, "Adding a reason"."""
