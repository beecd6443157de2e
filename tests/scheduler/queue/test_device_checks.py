"""Device names and memory requests are checked when a task is submitted; devices seen before are
remembered across restarts (an unplugged eGPU is still a device a task may wait for)."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from cli import gputray
from waiting import wait_for

from gputray.monitor.backends.simulated import RADEON_780M, RTX_5060_TI
from gputray.monitor.units import GIB
from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.paths import Paths, app_paths
from gputray.scheduler.queue.device_checks import (
    DEVICES_SEEN_FILE,
    DevicesSeen,
    SubmitRefused,
    check_submit,
    closest_device,
    short_name,
    unknown_device_message,
)
from gputray.scheduler.queue.placement import DeviceState, cpu_state
from gputray.scheduler.reasons.render import render
from gputray.scheduler.tasks.records import TaskSpec

PY = sys.executable
RTX = replace(RTX_5060_TI, simulated=False, backend="nvml")
IGPU = replace(RADEON_780M, simulated=False, backend="amd_sysfs")
EGPU = replace(RTX, key="pci:0000:05:00.0", name="GeForce RTX 4090", uuid=None, vram_total_bytes=24 * GIB)
PRESENT = [DeviceState(RTX), DeviceState(IGPU), cpu_state(host_ram_total_bytes=32 * GIB)]


def spec(**kw: object) -> TaskSpec:
    return TaskSpec(kind="command", name="job", argv=(PY, "-c", "pass"), **kw)  # type: ignore[arg-type]


def test_short_names_and_the_closest_device() -> None:
    assert short_name("GeForce RTX 5060 Ti") == "5060ti" and short_name("Radeon 780M") == "780m"
    assert closest_device("4090", [RTX, IGPU]) == RTX
    assert closest_device("780", [RTX, IGPU]) == IGPU
    assert closest_device("voodoo2", [RTX, IGPU]) is None


def test_a_name_that_matches_nothing_is_refused_with_the_known_names_and_the_closest() -> None:
    with pytest.raises(SubmitRefused) as err:
        check_submit(spec(device_prefs=("4090",)), PRESENT, [])
    assert str(err.value) == (
        "job: no device matches '4090'; closest: GeForce RTX 5060 Ti (5060ti); known: "
        f"GeForce RTX 5060 Ti (5060ti, {RTX.key}), Radeon 780M (780m, {IGPU.key}), cpu "
        "— see `gputray devices`"
    )
    for fine in (("5060ti",), ("780m", "cpu"), ("nvidia", "integrated", "gpu"), (IGPU.key,)):
        check_submit(spec(device_prefs=fine), PRESENT, [])


@pytest.mark.parametrize(
    ("typed", "closest"),
    [("nvidai", "nvidia"), ("NVIDA", "nvidia"), ("amdd", "amd"), ("intergrated", "integrated"),
     ("discreet", "discrete"), ("cpuu", "cpu"), ("5070ti", "GeForce RTX 5060 Ti (5060ti)")],
)  # fmt: skip
def test_a_mistyped_class_of_device_gets_the_class_as_the_closest(typed: str, closest: str) -> None:
    """nvidia, amd, intel, discrete, integrated, cpu (any GPU of that kind) are names too: a typo of
    one is told the class, not the GPU whose name happens to share a letter or two."""
    with pytest.raises(SubmitRefused) as err:
        check_submit(spec(device_prefs=(typed,)), PRESENT, [])
    assert f"no device matches {typed!r}; closest: {closest}; known: " in str(err.value)


def test_a_command_that_takes_one_device_suggests_no_class() -> None:
    """`pause` and `resume` take one device or cpu: "nvidia" is no name they take, so it is not offered."""
    message = unknown_device_message("nvidai", [RTX, IGPU], classes=("cpu",))
    assert "closest: nvidia" not in message
    assert "closest: cpu;" in unknown_device_message("cpuu", [RTX, IGPU], classes=("cpu",))


def test_a_device_seen_before_is_accepted_while_absent(tmp_path: Path) -> None:
    clock = [1000.0]
    seen = DevicesSeen(tmp_path / DEVICES_SEEN_FILE, clock=lambda: clock[0])
    seen.note([RTX, IGPU, EGPU])
    clock[0] += 60
    seen.note([RTX, IGPU])  # unplugged: nothing to write
    again = DevicesSeen(tmp_path / DEVICES_SEEN_FILE)  # after a restart
    remembered = {s.key: s for s in again.remembered()}
    assert remembered[EGPU.key].name == "GeForce RTX 4090" and remembered[EGPU.key].last_seen_s == 1000.0
    check_submit(spec(device_prefs=("4090",)), PRESENT, again.remembered())
    with pytest.raises(SubmitRefused, match=re.escape("GeForce RTX 4090 (4090, pci:0000:05:00.0)")):
        check_submit(spec(device_prefs=("3090",)), PRESENT, again.remembered())
    doc = json.loads((tmp_path / DEVICES_SEEN_FILE).read_text())
    assert {d["key"] for d in doc["devices"]} == {RTX.key, IGPU.key, EGPU.key}
    assert set(doc["devices"][0]) >= {"key", "name", "first_seen_s", "last_seen_s"}


def test_simulated_devices_are_not_remembered(tmp_path: Path) -> None:
    seen = DevicesSeen(tmp_path / DEVICES_SEEN_FILE)
    seen.note([RTX_5060_TI, RADEON_780M])
    assert seen.remembered() == [] and not (tmp_path / DEVICES_SEEN_FILE).exists()


def test_a_damaged_file_forgets_quietly_and_is_rewritten(tmp_path: Path) -> None:
    path = tmp_path / DEVICES_SEEN_FILE
    path.write_text("{not json")
    seen = DevicesSeen(path)
    assert seen.remembered() == []
    seen.note([RTX])
    assert [s.key for s in DevicesSeen(path).remembered()] == [RTX.key]


def test_memory_larger_than_every_allowed_device_is_refused_naming_only_those() -> None:
    # Only the 780M may run it: the 5060 Ti is not named (even though it is present).
    with pytest.raises(SubmitRefused) as err:
        check_submit(spec(device_prefs=("780m",), vram_bytes=int(95.4 * 1024 * GIB)), PRESENT, [])
    assert (
        str(err.value) == "job: memory asks 95.4 TiB; the largest allowed device, Radeon 780M, has 33.3 GiB"
    )
    # 20 GiB: more than the 5060 Ti has, less than the 780M's carve-out + GTT.
    check_submit(spec(device_prefs=("5060ti", "780m"), on_busy="redirect", vram_bytes=20 * GIB), PRESENT, [])
    with pytest.raises(SubmitRefused, match=re.escape("GeForce RTX 5060 Ti, has 15.9 GiB")):
        check_submit(spec(device_prefs=("5060ti",), on_busy="wait", vram_bytes=20 * GIB), PRESENT, [])
    with pytest.raises(
        SubmitRefused, match=re.escape("the largest allowed device, the CPU (RAM), has 32.0 GiB")
    ):
        check_submit(spec(device_prefs=("cpu",), vram_bytes=40 * GIB), PRESENT, [])
    # A device that does not say how much it has might fit: not refused.
    unknown = [DeviceState(replace(IGPU, vram_total_bytes=None, shared_total_bytes=None))]
    check_submit(spec(device_prefs=("780m",), vram_bytes=1024 * GIB), unknown, [])


# --- through the owner, as the CLI sees it ------------------------------------------------------


@pytest.fixture
def owner(gputray_home: Path) -> Iterator[Owner]:
    o = Owner(app_paths(), demo=True)
    o.start()
    wait_for(lambda: o.monitor.latest is not None, what="a first sample")
    yield o
    o.stop()


def test_cli_submit_refuses_4090_and_too_much_memory_and_queues_nothing(
    owner: Owner, gputray_home: Path, tmp_path: Path
) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    typo = gputray("submit", str(script), "--device", "4090", home=gputray_home)
    assert typo.returncode == 1
    assert "no device matches '4090'; closest: GeForce RTX 5060 Ti (5060ti)" in typo.stderr
    huge = gputray("submit", str(script), "--device", "780m", "--vram", "95.4TiB", home=gputray_home)
    assert huge.returncode == 1
    assert "asks 95.4 TiB; the largest allowed device, Radeon 780M, has 33.3 GiB" in huge.stderr
    assert "5060" not in huge.stderr
    task_file = tmp_path / "job.toml"
    task_file.write_text(f'kind = "command"\nargv = ["{PY}", "-c", "pass"]\ndevices = ["4090"]\n')
    in_file = gputray("submit", "--task", str(task_file), home=gputray_home)
    assert in_file.returncode == 1 and "no device matches '4090'" in in_file.stderr
    nightly = gputray("schedule", "add", "--cron", "0 3 * * *", str(task_file), home=gputray_home)
    assert nightly.returncode == 1 and "no device matches '4090'" in nightly.stderr  # now, not at 3 am
    pause = gputray("pause", "4090", home=gputray_home)
    assert pause.returncode == 1 and "closest: GeForce RTX 5060 Ti" in pause.stderr
    assert owner.queue.list() == []


def test_pause_and_the_queue_name_a_paused_gpu_as_people_know_it(owner: Owner, gputray_home: Path) -> None:
    """`gputray pause 780m` answers with the GPU's name, as the queue listing does (the JSON keeps keys)."""
    pause = gputray("pause", "780m", home=gputray_home)
    assert pause.returncode == 0 and pause.stdout == "paused: Radeon 780M\n", pause.stdout + pause.stderr
    listing = gputray("queue", home=gputray_home)
    assert listing.stdout.splitlines()[0] == "paused: Radeon 780M"
    as_json = json.loads(gputray("pause", "--json", "cpu", home=gputray_home).stdout)
    assert as_json["pci:0000:64:00.0"] is True and as_json["cpu"] is True


def test_a_remembered_absent_device_is_accepted_and_waits_not_present(
    gputray_home: Path, tmp_path: Path
) -> None:
    paths: Paths = app_paths()
    DevicesSeen(paths.state_dir / DEVICES_SEEN_FILE, clock=lambda: time.time() - 3600).note([EGPU])
    o = Owner(paths, demo=True)
    o.start()
    try:
        wait_for(lambda: o.monitor.latest is not None, what="a first sample")
        with ipc.IpcClient(paths) as client:
            result = client.ask(
                rq.Run(argv=[PY, "-c", "pass"], cwd=str(tmp_path), overrides={"device_prefs": ["4090"]})
            )
            (task,) = result.tasks
            (note,) = result.notes
            assert note.startswith(f"#{task.id}: GeForce RTX 4090 is not present now (last seen ")
            assert note.endswith("); the task waits for it")
            waiting = wait_for(lambda: (t := client.ask(rq.Get(id=task.id)).task).state == "waiting" and t)
            assert render(waiting.reason) == "waiting for 4090: not present"
            # The unplugged eGPU may be paused by name too.
            assert EGPU.key in client.ask(rq.Pause(device="4090")).paused.devices
    finally:
        o.stop()
