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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputray.scheduler.tasks import MACHINE_RE

DEFAULT_MAX_TRANSFER_BYTES = 2 << 30
CHUNK_BYTES = 8 << 20  # one object-store object per chunk; a few are in flight at once
RESOURCE_PREFIX = "gputray-machine-"  # the Ray custom resource naming a machine: gputray-machine-desk
LABEL_KEY = "gputray-machine"  # ... or the node label gputray-machine=desk


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


def cluster_config(config: dict[str, Any]) -> ClusterConfig:
    """The typed ``[cluster]`` table of a loaded config (``scheduler.config.load_config``)."""
    from gputray.scheduler.taskfile import parse_duration, parse_size

    table = config.get("cluster") or {}
    if not isinstance(table, dict):
        raise ClusterConfigError("[cluster] must be a table")

    def text(key: str) -> str | None:
        value = table.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise ClusterConfigError(f"[cluster] {key} must be a string, not {value!r}")
        return value.strip()

    try:
        address = text("address")
        machine = check_machine_name(text("machine") or default_machine_name(), "[cluster] machine")
        insecure = table.get("insecure", False)
        if not isinstance(insecure, bool):
            raise ClusterConfigError(f"[cluster] insecure must be true or false, not {insecure!r}")
        shared_raw = table.get("shared", [])
        if isinstance(shared_raw, str):
            shared_raw = [shared_raw]
        if not isinstance(shared_raw, list) or not all(isinstance(p, str) for p in shared_raw):
            raise ClusterConfigError("[cluster] shared must be a list of folders")
        shared = tuple(Path(os.path.abspath(Path(p).expanduser())) for p in shared_raw)
        max_transfer = parse_size(table.get("max_transfer", DEFAULT_MAX_TRANSFER_BYTES))
        lost_after_s = parse_duration(table.get("lost_after", 20.0))
        fence_after_s = parse_duration(table.get("fence_after", 5.0))
    except ValueError as exc:
        if isinstance(exc, ClusterConfigError):
            raise
        raise ClusterConfigError(f"[cluster]: {exc}") from None
    if fence_after_s >= lost_after_s:
        raise ClusterConfigError(
            "[cluster] fence_after must be shorter than lost_after: a machine cut off must stop the "
            "tasks it was handed before their submitter places them again"
        )
    return ClusterConfig(address, machine, insecure, shared, max_transfer, lost_after_s, fence_after_s)


def load_cluster_config(config_file: Path) -> ClusterConfig:
    from gputray.scheduler.config import load_config

    return cluster_config(load_config(config_file))


def write_cluster_table(config_file: Path, values: dict[str, Any] | None) -> None:
    """Set (or, with None, remove) the ``[cluster]`` table of the user's config, keeping the rest."""
    import tomli_w

    from gputray.scheduler.config import read_user_config

    data = read_user_config(config_file)
    if values is None:
        data.pop("cluster", None)
    else:
        data["cluster"] = {**(data.get("cluster") or {}), **values}
    config_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = config_file.with_name(config_file.name + f".{os.getpid()}.tmp")
    tmp.write_text(tomli_w.dumps(data), encoding="utf-8")
    os.replace(tmp, config_file)


def is_windows() -> bool:
    return sys.platform == "win32"


WINDOWS_NOTE = (
    "Ray supports Windows as a single node only: a Windows machine cannot join a multi-machine "
    "cluster (use Linux or WSL2 there); everything else in gputray works unchanged"
)
