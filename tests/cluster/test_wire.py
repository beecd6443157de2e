"""What crosses between machines and to ``status --cluster``: a machine's view carries its monitor's
own reading (``Sample``), stamped with the cluster wire version; another version's view is refused in
words. No Ray: the bytes are what an agent's ``view`` returns, the report what a real ``Bridge`` writes."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from test_machine_tasks import Desk, _view

from gputray.cluster import commands
from gputray.cluster.wire import WIRE_VERSION, MachineView, OtherVersion
from gputray.monitor import busy_why as why
from gputray.monitor.backends.simulated import RADEON_780M
from gputray.monitor.units import GIB
from gputray.scheduler import protocol as rq
from gputray.scheduler.cli.commands.status import device_line


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    d = Desk(tmp_path)
    yield d
    d.close()


def _laptop_with_fan() -> MachineView:
    """The laptop's view, its 780M's reading with a fan speed (a field the cluster's code never names)."""
    view = _view("laptop", RADEON_780M, ram_total_bytes=32 * GIB)
    gpu = view.devices[0]
    assert gpu.reading is not None
    reading = dataclasses.replace(gpu.reading, fan_percent=41.0, temp_c=55.0)
    return msgspec.structs.replace(
        view, devices=(msgspec.structs.replace(gpu, reading=reading), *view.devices[1:])
    )


def test_a_view_crosses_whole_and_another_versions_view_is_refused_in_words() -> None:
    view = _laptop_with_fan()
    assert MachineView.from_wire(view.to_wire()) == view  # every field of the reading, none listed here
    with pytest.raises(OtherVersion, match=f"cluster wire 1, this gputray's is {WIRE_VERSION}"):
        MachineView.from_wire({"machine": "laptop", "taken_at_s": 1.0, "devices": []})  # before wire 2
    later = json.loads(view.to_wire()) | {"wire": WIRE_VERSION + 1}
    with pytest.raises(OtherVersion, match=f"cluster wire {WIRE_VERSION + 1}, this gputray's is"):
        MachineView.from_wire(json.dumps(later).encode())


def test_a_lost_gpus_reason_crosses_as_its_code_and_an_older_peers_text_still_reads() -> None:
    """A reading's reason is a ``busy_why`` code on the wire (wire 3), worded by whoever shows it; a
    wire-2 machine, whose reasons were English text, is refused in words, not misread."""
    view = _laptop_with_fan()
    gpu = view.devices[0]
    assert gpu.reading is not None
    lost = dataclasses.replace(gpu.reading, state="lost", reason=why.FellOffBus())
    view = msgspec.structs.replace(view, devices=(msgspec.structs.replace(gpu, reading=lost),))
    came = MachineView.from_wire(view.to_wire())
    assert came == view and came.devices[0].reading is not None
    assert came.devices[0].reading.reason == why.FellOffBus()
    older = json.loads(view.to_wire()) | {"wire": 2}  # wire 2 sent the backend's English: refused in words
    older["view"]["devices"][0]["reading"]["reason"] = "GPU is lost (fell off the bus?)"
    with pytest.raises(OtherVersion, match=f"cluster wire 2, this gputray's is {WIRE_VERSION}"):
        MachineView.from_wire(json.dumps(older).encode())


def test_status_cluster_json_shows_every_reading_another_machine_takes(
    desk: Desk, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    desk.report()
    desk.bridge.machines["laptop"].view = _laptop_with_fan()
    report = desk.bridge.report()
    sent = rq.request_from(
        "cluster_sync", {"report": msgspec.to_builtins(report)}
    )  # as the socket decodes it
    assert isinstance(sent, rq.ClusterSync) and sent.report == report
    desk.link.sync(msgspec.structs.replace(sent, bridge_key=desk.link.bridge_key))
    monkeypatch.setattr(commands, "_owner_cluster", desk.link.report_doc)
    assert commands.status_cluster(argparse.Namespace(json=True), device_line) == 0
    rows = {d["key"]: d for d in json.loads(capsys.readouterr().out)["devices"]}
    row = rows[f"laptop/{RADEON_780M.key}"]
    assert row["fan_percent"] == 41.0 and row["temp_c"] == 55.0 and row["local_key"] == RADEON_780M.key
    assert row["backend"] == "cluster" and row["machine"] == "laptop" and row["busy"] is False
