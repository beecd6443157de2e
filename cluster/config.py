"""The ``[cluster]`` table of the config file, read into a typed record, and written by ``cluster join``.

::

    [cluster]
    address = "10.0.0.5:6379"     # the Ray head (or "auto"); no address: not in a cluster
    machine = "desk"              # this machine's name in the cluster (default: the host name)
    insecure = false              # true: join a Ray cluster without token authentication
    shared = ["/mnt/nas"]         # folders every machine sees at the same path: files there stay put
    max_transfer = "2GiB"         # inputs larger than this are refused unless under a shared folder
    lost_after = "20s"            # a machine unseen this long (the head up) has left: its tasks follow
                                  # their retry policy
    fence_after = "5s"            # cut off from the cluster this long (the head up), a machine stops the
                                  # tasks other machines handed it: they are placed again elsewhere
"""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from gputray.scheduler.cluster_port.records import MACHINE_RE

if TYPE_CHECKING:
    from gputray.scheduler.client.settings import ClusterSection

DEFAULT_MAX_TRANSFER_BYTES = 2 << 30
CHUNK_BYTES = 8 << 20  # one object-store object per chunk; a few are in flight at once
RESOURCE_PREFIX = "gputray-machine-"  # the Ray custom resource naming a machine: gputray-machine-desk
# Ray swaps a loopback address for the machine's own unless this is "0": a cluster on 127.0.0.1 stays there.
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
LABEL_KEY = "gputray-machine"  # ... or the node label gputray-machine=desk
T = TypeVar("T")


class ClusterConfigError(ValueError):
    """A bad ``[cluster]`` value; the message names the key."""


@dataclass(frozen=True)
class ClusterConfig:
    address: str | None = None
    machine: str = "localhost"
    insecure: bool = False
    shared: tuple[Path, ...] = ()
    max_transfer_bytes: int = DEFAULT_MAX_TRANSFER_BYTES
    lost_after_s: float = 20.0
    fence_after_s: float = 5.0

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    def is_shared(self, path: Path) -> bool:
        """Whether ``path`` lies under one of the shared folders (then it is used in place)."""
        resolved = Path(os.path.abspath(path))
        return any(resolved == root or root in resolved.parents for root in self.shared)


def default_machine_name() -> str:
    """The host name, cut to what a machine name may hold."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname().split(".")[0]).strip("-._")
    return name[:63] if name and MACHINE_RE.match(name) else "localhost"


def check_machine_name(name: str, what: str = "machine") -> str:
    if name == "any" or not MACHINE_RE.match(name):
        raise ClusterConfigError(
            f"{what} {name!r}: a machine name is 1-63 letters, digits, '.', '_' or '-' (and not 'any')"
        )
    return name


def cluster_config(section: ClusterSection) -> ClusterConfig:
    """The cluster's settings from the typed ``[cluster]`` table (``scheduler.config.read_config`` checked
    its types): sizes and durations parsed, the machine name checked, the defaults filled in."""
    from gputray.scheduler.cluster_port.shared import parse_duration, parse_size

    def text(value: str | None) -> str | None:
        return value.strip() or None if value else None

    def parsed(key: str, parse: Callable[[Any], T], value: object, default: object) -> T:
        try:
            return parse(default if value is None else value)
        except ValueError as exc:
            raise ClusterConfigError(f"[cluster] {key}: {exc}") from None

    machine = check_machine_name(text(section.machine) or default_machine_name(), "[cluster] machine")
    shared_raw = [section.shared] if isinstance(section.shared, str) else section.shared or []
    shared = tuple(Path(os.path.abspath(Path(p).expanduser())) for p in shared_raw)
    max_transfer = parsed("max_transfer", parse_size, section.max_transfer, DEFAULT_MAX_TRANSFER_BYTES)
    lost_after_s = parsed("lost_after", parse_duration, section.lost_after, 20.0)
    fence_after_s = parsed("fence_after", parse_duration, section.fence_after, 5.0)
    if fence_after_s >= lost_after_s:
        raise ClusterConfigError(
            "[cluster] fence_after must be shorter than lost_after: a machine cut off must stop the "
            "tasks it was handed before their submitter places them again"
        )
    address = text(section.address)
    return ClusterConfig(
        address, machine, section.insecure, shared, max_transfer, lost_after_s, fence_after_s
    )


def load_cluster_config(config_file: Path) -> ClusterConfig:
    """The one way the cluster reads its settings: the config file's typed ``[cluster]`` section.

    A ``[cluster]`` value of the wrong type is a ClusterConfigError (the config's own problem message,
    naming file, key and value): the machine then joins no cluster rather than a guessed one.
    """
    from gputray.scheduler.client.settings import read_config

    config = read_config(config_file)
    bad = [p for p in config.problems_in("cluster") if not p.unknown]
    if bad:
        raise ClusterConfigError("; ".join(p.message for p in bad))
    try:
        return cluster_config(config.cluster)
    except ClusterConfigError as exc:
        raise ClusterConfigError(f"{config.source}: {exc}") from None


def write_cluster_table(config_file: Path, values: dict[str, Any] | None) -> None:
    """Set (or, with None, remove) the ``[cluster]`` table of the user's config, keeping the rest (the
    file as it was stays as ``config.toml.bak``, as with ``envs add`` and Settings)."""
    import tomli_w

    from gputray.scheduler.client.settings import read_user_config, write_user_config

    data = read_user_config(config_file)
    if values is None:
        data.pop("cluster", None)
    else:
        current = data.get("cluster")
        data["cluster"] = {**(current if isinstance(current, dict) else {}), **values}
    write_user_config(config_file, tomli_w.dumps(data), backup=True)  # comments are not written back


def is_windows() -> bool:
    return sys.platform == "win32"


WINDOWS_NOTE = (
    "Ray supports Windows as a single node only: a Windows machine cannot join a multi-machine "
    "cluster (use Linux or WSL2 there); everything else in gputray works unchanged"
)
