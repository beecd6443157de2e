"""The probe runner against real interpreters: torch, no torch, and "pythons" that hang, crash or babble."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import psutil
import pytest
from child_signals import DEFAULT_CTRL_C

from gputray.scheduler.pyenvs.probe_runner import probe_env, python_version_info, run_python

posix_only = pytest.mark.skipif(os.name != "posix", reason="shell-script interpreters need a POSIX shell")


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _gone(pid: int) -> bool:
    """Dead: no such process, or a zombie nobody has reaped yet (it runs nothing)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return _gone(pid)


@pytest.mark.slow
def test_real_torch_env_reports_torch_and_a_working_cpu(torch_python: Path) -> None:
    progress: list[str] = []
    result = probe_env(torch_python, bench=False, on_progress=lambda p: progress.append(str(p.get("stage"))))
    assert result.status == "ok", result.message + result.stderr_tail
    data = result.data
    assert data is not None
    assert str(data["torch_version"]).startswith("2.13.0")
    assert data["cuda_version"] is None and data["hip_version"] is None  # the CPU build
    assert "Torch not compiled with CUDA enabled" in data["accelerator_error"]
    cpu = data["devices"][0]
    assert cpu["torch_device"] == "cpu"
    assert cpu["basic_op"]["ok"] is True, cpu["basic_op"]
    assert "bench" not in cpu
    assert progress[0] == "torch" and "device" in progress


def test_env_without_torch_says_so(notorch_python: Path) -> None:
    result = probe_env(notorch_python, bench=True)
    assert result.status == "ok"
    assert result.data is not None
    assert result.data["torch_version"] is None
    assert "ModuleNotFoundError" in result.data["torch_error"]
    assert "No module named 'torch'" in result.data["torch_error"]
    assert result.data["devices"] == []


def test_version_info_is_quick_and_does_not_need_torch(notorch_python: Path) -> None:
    result = python_version_info(notorch_python)
    assert result.status == "ok"
    assert result.data is not None
    assert result.data["python_version"].count(".") == 2
    assert result.data["torch_dist_version"] is None


def test_missing_interpreter(tmp_path: Path) -> None:
    result = run_python(tmp_path / "nope" / "python", [])
    assert result.status == "missing"
    assert "not found" in result.message


def test_a_folder_or_a_plain_file_is_not_runnable(tmp_path: Path) -> None:
    assert run_python(tmp_path, []).status == "not_runnable"
    text = tmp_path / "notes.txt"
    text.write_text("hello", encoding="utf-8")
    result = run_python(text, [])
    assert result.status == "not_runnable"
    assert str(text) in result.message


@posix_only
def test_hanging_python_and_its_children_are_killed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # One child stays in the group, one escapes it with setsid: both must die.
    hang = _script(
        tmp_path / "python",
        f'echo $$ >> "{pids}"\n'
        f'sleep 600 &\necho $! >> "{pids}"\n'
        f'setsid sleep 600 &\necho $! >> "{pids}"\n'
        "sleep 600\n",
    )
    result = run_python(hang, ["--bench"], timeout_s=3.0)
    assert result.status == "timeout"
    assert "3 s" in result.message
    recorded = [int(line) for line in pids.read_text().split()]
    assert len(recorded) == 3
    left = [pid for pid in recorded if not _wait_gone(pid)]
    assert left == [], f"processes left running: {left}"


@posix_only
def test_ctrl_c_while_probing_stops_the_probe_too(tmp_path: Path) -> None:
    """The probe has its own process group, so a terminal's Ctrl+C reaches only gputray."""
    import signal
    import subprocess
    import sys

    pids = tmp_path / "pids"
    hang = _script(tmp_path / "python", f'echo $$ >> "{pids}"\nsleep 600 &\necho $! >> "{pids}"\nsleep 600\n')
    code = (
        "from gputray.scheduler.pyenvs.probe_runner import run_python\n"
        f"run_python({str(hang)!r}, ['--bench'], timeout_s=300)\n"
    )
    doctor = subprocess.Popen(
        [sys.executable, "-c", code], stderr=subprocess.PIPE, text=True, preexec_fn=DEFAULT_CTRL_C
    )
    deadline = time.monotonic() + 30
    while not (pids.exists() and len(pids.read_text().split()) == 2):
        assert time.monotonic() < deadline, "the fake probe never started"
        time.sleep(0.05)
    doctor.send_signal(signal.SIGINT)
    _, err = doctor.communicate(timeout=30)
    assert doctor.returncode != 0 and "KeyboardInterrupt" in err
    left = [pid for pid in map(int, pids.read_text().split()) if not _wait_gone(pid)]
    assert left == [], f"processes left running: {left}"


@posix_only
def test_hang_keeps_the_results_reported_before_it(tmp_path: Path) -> None:
    line = '@gputray-progress {"stage": "device", "device": {"torch_device": "cpu", "kind": "cpu"}}'
    hang = _script(tmp_path / "python", f"echo '{line}' >&2\nexec sleep 600\n")
    result = run_python(hang, [], timeout_s=2.0)
    assert result.status == "timeout"
    assert [p["stage"] for p in result.progress] == ["device"]


@posix_only
def test_crashing_python(tmp_path: Path) -> None:
    crash = _script(tmp_path / "python", 'echo "Fatal Python error: Segmentation fault" >&2\nkill -SEGV $$\n')
    result = run_python(crash, [])
    assert result.status == "crashed"
    assert "SIGSEGV" in result.message
    assert "Segmentation fault" in result.stderr_tail


@posix_only
def test_python_exiting_with_an_error(tmp_path: Path) -> None:
    failing = _script(tmp_path / "python", 'echo "ImportError: libcudart.so.12: cannot open" >&2\nexit 3\n')
    result = run_python(failing, [])
    assert result.status == "crashed"
    assert "code 3" in result.message
    assert "libcudart" in result.message


@posix_only
def test_garbage_and_non_utf8_output(tmp_path: Path) -> None:
    babble = _script(
        tmp_path / "python",
        "printf 'hello \\377\\376 not json {\\n'\nprintf '\\377\\300 oops\\n' >&2\nexit 0\n",
    )
    result = run_python(babble, [])
    assert result.status == "garbage"
    assert "hello" in result.message
    assert "\ufffd" in result.stderr_tail  # undecodable bytes replaced, not an exception


@posix_only
def test_json_after_noise_is_found(tmp_path: Path) -> None:
    noisy = _script(
        tmp_path / "python", "printf 'some \\377 warning\\n'\necho '{\"python_version\": \"3.12.1\"}'\n"
    )
    result = run_python(noisy, [])
    assert result.status == "ok"
    assert result.data == {"python_version": "3.12.1"}


@posix_only
def test_extra_env_reaches_the_probe(tmp_path: Path) -> None:
    echo = _script(tmp_path / "python", 'printf \'{"override": "%s"}\\n\' "$HSA_OVERRIDE_GFX_VERSION"\n')
    result = run_python(echo, [], extra_env={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    assert result.data == {"override": "11.0.0"}
