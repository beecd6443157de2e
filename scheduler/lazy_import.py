"""A module that loads on its first attribute access (``importlib.util.LazyLoader``, the standard
library's recipe).

Every ``gputray`` command imports ``protocol`` and ``replies``, whose annotations name the task model and
the monitor's records. Their Structs resolve those annotations only when a message of that type is first
encoded or decoded, so the modules they name need not load until then: ``gputray queue`` never loads the
monitor's records, ``gputray status`` does when it decodes the owner's snapshot. A module bound here is
named in annotations as ``module.Name`` and imported normally under ``TYPE_CHECKING`` for mypy and the
import contracts::

    if TYPE_CHECKING:
        from gputray.monitor import records as monitor_records
    else:
        monitor_records = lazy_module("gputray.monitor.records")
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

_BOUND: list[str] = []  # every module bound here, for ``load_all``


def load_all() -> None:
    """Load every module bound here now, in this thread. A process that decodes messages in several
    threads at once (the owner) calls it before it starts them: on Python before 3.12.3 two threads
    that touch one lazy module first at the same moment may both run it (``LazyLoader`` took no lock),
    and a type defined twice would not be itself."""
    for name in list(_BOUND):
        getattr(sys.modules[name], "__name__", None)  # any attribute loads it


def lazy_module(name: str) -> ModuleType:
    """``name``, loaded now if it already was, else on the first attribute read of what this returns.

    It stands in ``sys.modules`` and on its parent package as the module itself, so a later ``import``
    of it anywhere gets the same object (and loads it at the first name it takes from it)."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    _BOUND.append(name)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module
