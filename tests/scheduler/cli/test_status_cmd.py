"""`gputray status` as a user runs it: a real subprocess of the installed command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from child_signals import DEFAULT_CTRL_C
from cli import gputray
from waiting import wait_for

DEVICE_FIELDS = [
    "key", "name", "vendor", "kind", "backend", "pci_bdf", "state", "reason", "reason_code", "util_percent",
    "temp_c",
    "power_w", "vram_used_bytes", "vram_total_bytes", "shared_used_bytes", "shared_total_bytes",
    "sclk_mhz", "mclk_mhz", "throttle", "pcie_gen", "pcie_width", "pcie_max_gen", "pcie_max_width",
    "fan_percent", "fan_rpm", "power_limit_w", "encoder_percent", "decoder_percent",
]  # fmt: skip


def test_status_on_this_machine_without_gpu_says_so_and_shows_the_host(tmp_path: Path) -> None:
    empty_sys = tmp_path / "sys"
    (empty_sys / "class" / "drm").mkdir(parents=True)
    (empty_sys / "bus" / "pci" / "devices").mkdir(parents=True)
    result = gputray("status", "--sysfs-root", str(empty_sys), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "No GPU found." in result.stdout
    assert "gputray status --demo" in result.stdout  # what to try instead
    assert "Host" in result.stdout and "RAM" in result.stdout
    assert "Traceback" not in result.stderr


def test_a_sysfs_root_that_is_no_folder_is_an_error(tmp_path: Path) -> None:
    result = gputray("status", "--sysfs-root", str(tmp_path / "sys-typo"), home=tmp_path)
    assert result.returncode == 2
    assert "--sysfs-root: no such folder" in result.stderr
    assert "No GPU found" not in result.stdout and "Traceback" not in result.stderr


@pytest.mark.parametrize("seconds", ["0", "-1", "nan"])
def test_watch_needs_a_positive_interval(tmp_path: Path, seconds: str) -> None:
    result = gputray("status", "--demo", "--watch", seconds, home=tmp_path)
    assert result.returncode == 2
    assert f"--watch: expected a positive number of seconds, got '{seconds}'" in result.stderr
    assert result.stdout == ""


def test_status_json_has_exactly_the_documented_fields(tmp_path: Path) -> None:
    result = gputray("status", "--demo", "--json", home=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["demo"] is True
    assert [list(d) for d in doc["devices"]] == [DEVICE_FIELDS, DEVICE_FIELDS]
    assert list(doc["host"]) == ["cpu_percent", "ram_used_bytes", "ram_total_bytes"]
    assert doc["host"]["ram_total_bytes"] > 0
    names = {d["name"]: d for d in doc["devices"]}
    apu = names["Radeon 780M"]
    assert apu["kind"] == "integrated" and apu["shared_total_bytes"] == 31433977856
    egpu = names["GeForce RTX 5060 Ti"]
    assert egpu["vram_total_bytes"] > 15 * 1024**3
    # the simulated eGPU: a PCIe 5.0 x8 card on OCuLink (x4); at idle its link has dropped to 2.5 GT/s
    assert (egpu["pcie_gen"], egpu["pcie_width"], egpu["pcie_max_gen"], egpu["pcie_max_width"]) == (
        1,
        4,
        5,
        8,
    )
    assert (egpu["fan_percent"], egpu["fan_rpm"], egpu["power_limit_w"]) == (0.0, 0, 180.0)
    assert (egpu["encoder_percent"], egpu["decoder_percent"]) == (0.0, 0.0)
    assert [apu[f] for f in ("pcie_gen", "fan_rpm", "power_limit_w")] == [None, None, None]  # an APU has none


def test_status_text_labels_the_demo_and_shows_humane_units(tmp_path: Path) -> None:
    result = gputray("status", "--demo", home=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("DEMO")
    apu = next(line for line in lines if line.startswith("Radeon 780M"))
    assert "VRAM 1.2/4.0 GiB" in apu and "shared 0.2/29.3 GiB" in apu and "°C" in apu
    egpu = lines.index(next(line for line in lines if line.startswith("GeForce RTX 5060 Ti")))
    assert lines[egpu + 1].split()[:8] == ["PCIe", "1.0", "×4", "of", "5.0", "×8", "(idle:", "links"]
    assert "limit 180 W" in lines[egpu + 1] and "mem 405 MHz" in lines[egpu + 1]


def test_status_text_shows_the_egpu_link_under_load_without_an_idle_note(tmp_path: Path) -> None:
    busy = tmp_path / "busy.toml"
    busy.write_text(
        '[[load]]\ndevice = "5060ti"\nutil_percent = 90\nencoder_percent = 40\n', encoding="utf-8"
    )
    result = gputray("status", "--demo-scenario", str(busy), home=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    egpu = lines.index(next(line for line in lines if line.startswith("GeForce RTX 5060 Ti")))
    assert "PCIe 4.0 ×4 of 5.0 ×8  fan" in lines[egpu + 1]  # 4.0 x4 is how it is connected: no alarm
    assert "idle" not in lines[egpu + 1] and "enc 40 %" in lines[egpu + 1]


def test_status_with_a_malformed_scenario_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad scenario ☃.toml"
    bad.write_text("[[load]]\nutil_percent = 5\n", encoding="utf-8")
    result = gputray("status", "--demo-scenario", str(bad), home=tmp_path)
    assert result.returncode == 1  # a refusal (the file's content), as a bad task file is
    assert "`device` must name a GPU" in result.stderr and "Traceback" not in result.stderr


def test_status_watch_refreshes_until_interrupted(tmp_path: Path) -> None:
    env = {**os.environ, "GPUTRAY_HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputray.gui.entry", "status", "--demo", "--watch", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=DEFAULT_CTRL_C,  # Ctrl+C as a terminal gives it, even to a suite run with SIGINT ignored
    )
    try:
        out, _ = proc.communicate(timeout=3)
    except subprocess.TimeoutExpired:
        proc.send_signal(2)  # SIGINT, as Ctrl+C
        out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 130  # as from every command Ctrl+C stops (tests/e2e/test_cli_ctrl_c.py)
    assert out.count("GeForce RTX 5060 Ti") >= 3


@pytest.fixture
def demo_daemon(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`gputray daemon --demo` in tmp_path's home, once `status` gets its readings (the demo pair)."""
    daemon = subprocess.Popen(
        [sys.executable, "-m", "gputray.gui.entry", "daemon", "--demo"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "GPUTRAY_HOME": str(tmp_path)},
    )
    try:
        wait_for(lambda: json.loads(gputray("status", "--json", home=tmp_path).stdout).get("demo"), what="it")
        yield daemon
    finally:
        if daemon.poll() is None:
            daemon.terminate()
        daemon.wait(timeout=20)


def test_status_shows_the_running_owners_readings_instead_of_polling_again(
    tmp_path: Path, demo_daemon: subprocess.Popen[bytes]
) -> None:
    """Poll from one place only: with a (demo) daemon running, plain `status` reports what it sees."""
    doc = json.loads(gputray("status", "--json", home=tmp_path).stdout)
    assert doc["demo"] is True  # this machine has no GPU: the two GPUs can only be the owner's
    assert sorted(d["name"] for d in doc["devices"]) == ["GeForce RTX 5060 Ti", "Radeon 780M"]


def test_status_watch_goes_on_by_itself_when_the_owner_stops(
    tmp_path: Path, demo_daemon: subprocess.Popen[bytes]
) -> None:
    """`status --watch` shows the (demo) owner's readings; when it stops, status reads the GPUs itself
    (this machine: none) and says so, instead of ending with an error."""
    env = {**os.environ, "GPUTRAY_HOME": str(tmp_path)}
    daemon = demo_daemon
    watch = None
    try:
        watch = subprocess.Popen(
            [sys.executable, "-m", "gputray.gui.entry", "status", "--watch", "0.2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=DEFAULT_CTRL_C,  # Ctrl+C as a terminal gives it, even under nohup
        )
        assert watch.stdout is not None
        assert "DEMO" in watch.stdout.readline()  # the owner's readings
        daemon.terminate()
        daemon.wait(timeout=20)
        # Each refresh is a block after a blank line; wait for one that is not the demo's.
        block_starts = []
        previous = ""
        for _ in range(500):
            line = watch.stdout.readline()
            if previous == "\n" and line.strip():
                block_starts.append(line)
                if not line.startswith("DEMO"):
                    break
            previous = line
        assert block_starts and not block_starts[-1].startswith("DEMO"), block_starts
        watch.send_signal(2)  # Ctrl+C
        _, err = watch.communicate(timeout=20)
        assert watch.returncode == 130, err  # stopped by Ctrl+C
        assert "the gputray owner stopped; reading the GPUs directly" in err
    finally:
        if watch is not None and watch.poll() is None:
            watch.kill()
            watch.wait()


def test_a_lost_gpus_reason_from_a_real_owner_is_worded_with_its_code_beside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The simulated backend loses the 5060 Ti inside a real owner; `status` asks it over the socket.
    The backend's reason is a code (``busy_why.FellOffBus``): the text and the JSON word it in English as
    before, and ``reason_code`` gives the code for scripts."""
    from real_owner import home_paths, running_owner

    scenario = tmp_path / "lost.toml"
    scenario.write_text(
        '[[load]]\ndevice = "5060ti"\nstart_s = 0\nend_s = 1e9\nutil_percent = 0\nstate = "lost"\n'
    )
    paths = home_paths(tmp_path, monkeypatch)
    with running_owner(paths, scenario=scenario) as owner:
        wait_for(lambda: owner.monitor.latest is not None, 30, "the owner's first reading")
        as_json = gputray("status", "--json", home=tmp_path / "home")
        as_text = gputray("status", home=tmp_path / "home")
    assert as_json.returncode == 0 and as_text.returncode == 0, as_json.stderr + as_text.stderr
    (lost,) = [d for d in json.loads(as_json.stdout)["devices"] if d["state"] == "lost"]
    assert lost["name"] == "GeForce RTX 5060 Ti"
    assert (lost["reason"], lost["reason_code"]) == ("fell off the bus", {"code": "FellOffBus"})
    line = next(ln for ln in as_text.stdout.splitlines() if ln.startswith("GeForce RTX 5060 Ti"))
    assert line.split() == ["GeForce", "RTX", "5060", "Ti", "lost:", "fell", "off", "the", "bus"]
