"""What ``gputray cluster join`` checks of a cluster before joining it (reachable, token
authentication on, Ray version), in a child: ``python -m gputray.cluster.bridge --probe ADDRESS``."""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys

import msgspec

from gputray.cluster.bridge_base import _short
from gputray.cluster.config import (
    LOOPBACK_ENV,
)
from gputray.cluster.link import is_loopback


def _probe_env(address: str, *, with_token: bool) -> None:
    """Before Ray is imported (it reads its auth mode once)."""
    os.environ["RAY_AUTH_MODE"] = "token" if with_token else "disabled"
    if not with_token:
        for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
            os.environ.pop(name, None)
    if is_loopback(address):
        os.environ[LOOPBACK_ENV] = "0"


class ProbeResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What ``probe`` found of a cluster (``ok``: reached), as its child prints it on one JSON line."""

    ok: bool
    no_ray: bool = False  # Ray is not installed here
    auth_refused: bool = False  # the cluster refused this machine's token (or its lack)
    error: str | None = None
    ray_version: str | None = None  # the cluster's
    client_ray_version: str | None = None  # this machine's
    nodes: int | None = None  # alive


def probe(address: str, *, with_token: bool) -> ProbeResult:
    """Reach the cluster's GCS with (or without) a token; the cluster's Ray version and node count."""
    _probe_env(address, with_token=with_token)
    ray = importlib.import_module("ray")
    if address == "auto":  # the cluster this machine's `ray start` joined
        services = importlib.import_module("ray._private.services")
        try:
            address = services.canonicalize_bootstrap_address_or_die("auto")
        except Exception as exc:
            return ProbeResult(ok=False, error=_short(exc))
    get_cluster_metadata = importlib.import_module("ray._common.usage.usage_lib").get_cluster_metadata
    GcsClient = importlib.import_module("ray._raylet").GcsClient

    try:
        client = GcsClient(address=address)
        meta = get_cluster_metadata(client)
        nodes = client.get_all_node_info(timeout=10)
    except Exception as exc:
        auth = "AuthenticationError" in type(exc).__name__ or "InvalidAuthToken" in str(exc)
        return ProbeResult(ok=False, auth_refused=auth, error=_short(exc))
    alive = sum(1 for n in nodes.values() if getattr(n, "state", 0) == 0)
    version = meta.get("ray_version")
    return ProbeResult(
        ok=True,
        ray_version=None if version is None else str(version),
        client_ray_version=ray.__version__,
        nodes=alive,
    )


def run_probe(address: str, *, with_token: bool, timeout_s: float = 25.0) -> ProbeResult:
    """``probe`` in a child process (Ray's settings are per process), with a deadline."""
    cmd = [sys.executable, "-m", "gputray.cluster.bridge", "--probe", address]
    if with_token:
        cmd.append("--with-token")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return ProbeResult(ok=False, error=f"no answer within {timeout_s:.0f} s")
    for line in reversed(done.stdout.splitlines()):
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            return msgspec.json.decode(line, type=ProbeResult)
    return ProbeResult(
        ok=False,
        error=(done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1],
    )
