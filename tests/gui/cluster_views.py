"""A cluster of three machines for the tray tests, made by the cluster code itself.

``desk`` is this machine, ``laptop`` is online with two GPUs, ``nas`` left at 14:02 (Japan time, which
the tests set with ``TZ``). The report is what a real bridge writes (``Bridge.report`` over its machine
records and views); it reaches the owner as a bridge sends it (``cluster_sync``), and the tray reads it
back through ``ClusterLink.report_doc``. No Ray runs: the views are the records an agent returns.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import time
from pathlib import Path
from typing import Any

import pytest

from gputray.cluster.bridge import Bridge
from gputray.cluster.bridge_base import _Machine
from gputray.cluster.config import load_cluster_config, write_cluster_table
from gputray.cluster.link import ClusterLink
from gputray.cluster.picture import ClusterPicture, cluster_picture
from gputray.cluster.view import local_view
from gputray.cluster.wire import DeviceView, MachineView
from gputray.monitor.busy_why import MemoryHeld, Who
from gputray.monitor.records import Sample
from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.cluster_records import ClusterReport
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths

GIB = 1024**3
JST = dt.timezone(dt.timedelta(hours=9))
TZ = "JST-9"  # POSIX TZ: no tz database needed
LEFT_AT_S = dt.datetime(2026, 12, 2, 14, 2, tzinfo=JST).timestamp()  # nas left at 14:02
NOW_S = dt.datetime(2026, 12, 2, 15, 30, tzinfo=JST).timestamp()  # the panel's clock, same day


def join(paths: Paths, machine: str = "desk") -> None:
    """``gputray cluster join`` writes this (its Ray checks left out)."""
    write_cluster_table(paths.config_file, {"address": "127.0.0.1:6379", "machine": machine})


def hide_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner starts a bridge once it is in a cluster: let it find no Ray and exit at once, as on a
    machine without Ray (the test plays the bridge, so no second report overwrites its own)."""
    fake = tmp_path / "no-ray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("Ray is hidden from this test")\n')
    paths = [str(fake.parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))


def gpu(key: str, name: str, vendor: str, kind: str, **fields: Any) -> DeviceView:
    """A GPU's view; ``fields`` are its reading's (``Sample``: ``util_percent`` …) and the view's own."""
    bdf = key.removeprefix("pci:")
    sample_fields = {f.name for f in dataclasses.fields(Sample)}
    reading = Sample(key=key, timestamp_s=NOW_S, **{k: v for k, v in fields.items() if k in sample_fields})
    own = {k: v for k, v in fields.items() if k not in sample_fields}
    return DeviceView(key=key, name=name, vendor=vendor, kind=kind, pci_bdf=bdf, reading=reading, **own)


def cpu() -> DeviceView:
    return DeviceView(key="cpu", name="CPU", vendor="other", kind="cpu")


def desk_view() -> MachineView:
    return MachineView(
        machine="desk",
        taken_at_s=NOW_S,
        devices=(
            gpu("pci:0000:01:00.0", "GeForce RTX 5060 Ti", "nvidia", "discrete", util_percent=42.0),
            gpu("pci:0000:64:00.0", "Radeon 780M", "amd", "integrated", util_percent=3.0),
            cpu(),
        ),
    )


def laptop_view(util_4070: float = 97.0) -> MachineView:
    return MachineView(
        machine="laptop",
        taken_at_s=NOW_S,
        devices=(
            gpu(
                "pci:0000:01:00.0",
                "GeForce RTX 4070 Laptop GPU",
                "nvidia",
                "discrete",
                util_percent=util_4070,
                temp_c=71.0,
                power_w=88.0,
                vram_used_bytes=int(7.1 * GIB),
                vram_total_bytes=8 * GIB,
                busy=True,
                reasons=(
                    MemoryHeld(
                        who=Who("llama-server"), held_bytes=7 * GIB, util_pct=97.0, threshold_pct=30.0
                    ),
                ),
                running=1,
                running_names=("upscale.py (#7)",),
            ),
            # an iGPU that reports no temperature: "—"
            gpu(
                "pci:0000:05:00.0",
                "Radeon 890M",
                "amd",
                "integrated",
                util_percent=0.0,
                vram_used_bytes=GIB // 2,
                vram_total_bytes=2 * GIB,
                busy=False,
            ),
            cpu(),
        ),
    )


def bridge_report(
    paths: Paths, local: MachineView, *, util_4070: float = 97.0, head_ok: bool = True
) -> ClusterReport:
    """What the bridge of ``desk`` reports with laptop online and nas gone since 14:02 (with
    ``head_ok=False``: the Ray head has not answered for a minute, so nobody else is seen)."""
    bridge = Bridge(paths, load_cluster_config(paths.config_file), owner_pid=None)
    bridge.local_view = local
    bridge.connected = True
    bridge.gcs_ok_mono = time.monotonic() - (0.0 if head_ok else 60.0)
    bridge.machines["laptop"] = _Machine(last_contact=time.time(), view=laptop_view(util_4070))
    bridge.machines["nas"] = _Machine(last_contact=LEFT_AT_S, left_at=LEFT_AT_S)
    return bridge.report()


def three_machines(paths: Paths, *, util_4070: float = 97.0, head_ok: bool = True) -> ClusterPicture:
    """The picture the tray gets of desk + laptop + nas, through a real (unstarted) ClusterLink."""
    join(paths)
    link = ClusterLink(paths)  # no queue attached: only the report matters here
    report = bridge_report(paths, desk_view(), util_4070=util_4070, head_ok=head_ok)
    link.sync(rq.ClusterSync(report=report, bridge_key=link.bridge_key))
    picture = cluster_picture(link)
    assert picture is not None
    return picture


def report_as_the_bridge(owner: Owner | None, paths: Paths) -> None:
    """What desk's bridge sends its owner (``cluster_sync``): every machine's view, this one's asked
    of the owner over its socket as the bridge asks it."""
    assert owner is not None
    with ipc.IpcClient(paths, timeout_s=10.0) as client:
        desk = local_view(client, "desk")
    assert isinstance(owner.cluster, ClusterLink)  # the bridge it starts is given its key
    owner.handle(rq.ClusterSync(report=bridge_report(paths, desk), bridge_key=owner.cluster.bridge_key))


# Names the cluster's machines and GPUs carry: data, not the app's words (for the language walk).
DATA_NAMES = ("desk", "laptop", "nas", "GeForce RTX 4070 Laptop GPU", "Radeon 890M", "upscale.py (#7)")
