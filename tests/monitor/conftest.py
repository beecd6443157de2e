"""The monitor's tests: the core's here, the backends' in ``backends/``.

No fixtures: this file makes pytest put this folder on ``sys.path`` before it collects the subfolder,
so that ``backends/``' tests import the captured-tree helper they share with the core's tests
(``amd_trees.py``, kept here where both use it)."""
