"""`status` and `devices` on the Windows backends: PDH through pdh.dll, NVML's nvml.dll, vulkan-1.dll.

Wine's pdh.dll has no GPU counter set, as Windows without a WDDM 2.x driver: status says so in a note.
Wine has no nvml.dll. Wine's Vulkan (winevulkan over the host's loader) reaches Mesa's lavapipe.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from winpython import Owner, WinePython

LAVAPIPE_ICD = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
JAPANESE_WINDOWS = {"LANG": "ja_JP.UTF-8", "LC_ALL": "ja_JP.UTF-8"}  # Wine's ANSI code page is then cp932


def test_pdh_is_opened_through_pdh_dll_and_has_no_gpu_counters(win: WinePython) -> None:
    code = (
        "import json; from gputray.monitor.backends import pdh_ctypes as pdh\n"
        "reader = pdh.PdhCtypesReader()\n"
        "try:\n"
        "    reader.open(); print(json.dumps({'opened': True}))\n"
        "except pdh.PdhError as exc: print(json.dumps({'status': exc.status, 'message': str(exc)}))\n"
    )
    result = win.value(code)
    assert isinstance(result, dict)
    # PdhOpenQueryW worked; the first GPU counter is unknown: PDH_CSTATUS_NO_COUNTER from the real DLL
    assert result["status"] in (0xC0000BB8, 0xC0000BB9), result
    assert "PdhAddEnglishCounterW(\\GPU Engine(*)\\Utilization Percentage)" in result["message"]


def test_status_on_the_windows_backends_says_why_it_sees_no_gpu(win: WinePython, home: Path) -> None:
    as_json = win.gputray("status", "--json", home=home)
    assert as_json.returncode == 0, as_json.text
    doc = json.loads(as_json.stdout)
    assert doc["devices"] == [] and doc["demo"] is False
    assert doc["host"]["ram_total_bytes"] > 0
    notes = doc["notes"]
    assert any(n.startswith("nvml: ") and "nvml.dll" in n for n in notes), notes
    assert any(n.startswith("pdh: Windows has no GPU performance counters") and "WDDM" in n for n in notes)

    text = win.gputray("status", home=home)
    assert text.returncode == 0 and text.stderr == "", text.text
    lines = text.stdout.splitlines()
    assert lines[0].startswith("No GPU found.")
    assert any("no GPU performance counters" in line for line in lines)
    host = next(line for line in lines if line.startswith("Host"))
    bar = host[host.index("[") + 1 : host.index("]")]
    assert len(bar) == 10 and set(bar) <= {"#", "-"}, host  # cp1252 pipe: ASCII bars, no traceback


def test_status_with_an_owner_on_cp1252_and_cp932_pipes(win: WinePython, tmp_path: Path) -> None:
    home = tmp_path / "plain home"  # ASCII: this machine has no ja_JP locale for Wine to convert names with
    owner = Owner(win, home, "--demo")
    try:
        western = win.gputray("status", home=home)
        assert western.returncode == 0 and western.stderr == "", western.text
        gpu = next(line for line in western.stdout.splitlines() if line.startswith("GeForce RTX 5060 Ti"))
        assert set(gpu[gpu.index("[") + 1 : gpu.index("]")]) <= {"#", "-"} and "°C" in gpu, gpu
        assert western.stdout.startswith("DEMO — simulated GPUs")  # cp1252 has the dash

        encoding = win.run("-c", "import sys; print(sys.stdout.encoding)", env=JAPANESE_WINDOWS)
        assert encoding.stdout.strip() == "cp932"
        japanese = win.gputray("status", home=home, env=JAPANESE_WINDOWS, encoding="cp932")
        assert japanese.returncode == 0 and japanese.stderr == "", japanese.text
        assert japanese.stdout.startswith("DEMO - simulated GPUs")  # Shift-JIS has no U+2014
        assert "Radeon 780M" in japanese.stdout and "°C" in japanese.stdout
        as_json = win.gputray("status", "--json", home=home, env=JAPANESE_WINDOWS, encoding="cp932")
        assert json.loads(as_json.stdout)["demo"] is True
    finally:
        owner.stop()


def test_devices_lists_lavapipe_through_wines_vulkan(win: WinePython, home: Path) -> None:
    if win.display is None:
        pytest.skip("Wine's Vulkan needs an X display here and Xvfb is not installed")
    if not LAVAPIPE_ICD.exists():
        pytest.skip("needs Mesa's lavapipe (mesa-vulkan-drivers) for Wine's Vulkan to reach")
    # Wine's first Vulkan enumeration starts winevulkan and the ICD loader: over the default 20 s on a
    # loaded 2-core machine, so the test gives it a minute (what it checks is the path, not the speed)
    result = win.gputray("devices", "--json", "--vulkan-timeout", "60", home=home)
    assert result.returncode == 0, result.text
    doc = json.loads(result.stdout)
    assert doc["vulkan"]["available"] is True, doc["vulkan"]  # vulkan-1.dll → winevulkan → lavapipe
    assert doc["vulkan"]["instance_version"] >= "1.1"
    (lavapipe,) = doc["unmapped_vulkan"]
    assert lavapipe["name"].startswith("llvmpipe") and lavapipe["device_type"] == "cpu"
    assert lavapipe["reason"] == "software renderer on the CPU, not a GPU"
    text = win.gputray("devices", home=home)
    assert text.returncode == 0 and "Vulkan 0  llvmpipe" in text.stdout, text.text
    assert "no GPU performance counters" in text.stdout
