"""Out of memory → run where it fits (issue 28, item 4): out-of-memory texts as the issue trackers
recorded them, recognised with what they needed; stand-in jobs that print torch's message on the
simulated RTX 5060 Ti and run on the Radeon 780M once moved there (and never a second time); a real CPU
torch job under ``prlimit --as`` whose real allocator message fails it, saying what it needed.

Before: a job that ran out of memory failed like any other ("exited with status 1")."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_owner import home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.jobs.oom import find_oom
from gputray.scheduler.paths import Paths
from gputray.scheduler.reasons.render import render, render_for
from gputray.scheduler.replies import TaskView

GiB = 1 << 30
PY = sys.executable
NVIDIA, AMD = "pci:0000:01:00.0", "pci:0000:64:00.0"

# (message as printed in the field, where it was recorded) -> (kind, bytes it needed or None)
RECORDED = [
    (  # ROCm/TheRock issue #1054 (gfx1151, torch on ROCm)
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total capacity "
        "of 15.24 GiB of which 15.09 GiB is free. Of the allocated memory 0 bytes is allocated by PyTorch",
        "torch HIP", int(0.15 * GiB) + 16 * GiB,
    ),
    (  # huggingface/autotrain-advanced issue #737
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 124.00 MiB. GPU 0 has a total capacity "
        "of 19.94 GiB of which 554.47 MiB is free.",
        "torch HIP", int(19.94 * GiB) - int(554.47 * (1 << 20)) + 124 * (1 << 20),
    ),
    (  # torch before 2.2, CUDA
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; "
        "14.56 GiB already allocated; 3.44 MiB free; 14.79 GiB reserved in total by PyTorch)",
        "torch CUDA", int(14.56 * GiB) + 20 * (1 << 20),
    ),
    (  # ggml-org/llama.cpp issue #20431
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 144817.04 MiB on device 0: "
        "cudaMalloc failed: out of memory\n"
        "alloc_tensor_range: failed to allocate CUDA0 buffer of size 151851674624\n"
        "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
        "llama.cpp", 151851674624,
    ),
    (  # ggml-org/llama.cpp issue #8101
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 137438953504\n"
        "llama_kv_cache_init: failed to allocate buffer for kv cache",
        "CPU", 137438953504,
    ),
    (  # xinntao/Real-ESRGAN issue #153 (ncnn on a Vega 8)
        "[0 AMD Radeon(TM) Vega 8 Graphics ]  subgroup=64  basic=1  vote=1  ballot=1  shuffle=1\n"
        "vkAllocateMemory failed -2",
        "Vulkan", None,
    ),
    (  # tensorflow-rocm, keras-team/keras issue #13889
        "rocm_driver.cc:606] failed to allocate 127.99TiB (140729850295296 bytes) from device: "
        "HIP_ERROR_OutOfMemory",
        "HIP", None,
    ),
]  # fmt: skip


@pytest.mark.parametrize(("text", "kind", "needed"), RECORDED)
def test_recorded_out_of_memory_texts_are_recognised_with_what_they_needed(
    text: str, kind: str, needed: int | None
) -> None:
    found = find_oom("some output before\n" + text + "\n")
    assert found is not None and found.kind == kind
    if needed is None:
        assert found.peak_bytes is None
    else:
        assert found.peak_bytes == pytest.approx(needed, rel=0.001)
    assert find_oom("Traceback (most recent call last):\nValueError: no memory talk here") is None


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    return home_paths(tmp_path, monkeypatch)


@pytest.fixture
def client(paths: Paths) -> Iterator[ipc.IpcClient]:
    with running_owner(paths), ipc.IpcClient(paths, timeout_s=60) as c:
        yield c


def _ended(client: ipc.IpcClient, task_id: int) -> TaskView:
    return wait_for(
        lambda: (
            (t := client.ask(rq.Get(id=task_id)).task).state in ("succeeded", "failed", "cancelled") and t
        ),
        what=f"task {task_id} to end",
    )


def _on(client: ipc.IpcClient, key: str) -> list[int]:
    """Our processes the monitor's latest sample shows on the device ``key``."""
    snapshot = client.ask(rq.Status()).snapshot
    return [p.pid for p in (snapshot.processes if snapshot is not None else ()) if p.device == key]


# Runs out of memory on the device its first argument names ({device}), as torch says it on CUDA.
STANDIN = (
    "import sys\n"
    "if sys.argv[1] in sys.argv[2:]:\n"
    "    print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a'\n"
    "          ' total capacity of 15.48 GiB of which 1.12 GiB is free. Including non-PyTorch memory,'\n"
    "          ' this process has 14.34 GiB memory in use.', flush=True)\n"
    "    sys.exit(1)\n"
    "print('done on', sys.argv[1])\n"
)


def test_out_of_memory_on_the_5060_ti_runs_again_on_the_780m_once(client: ipc.IpcClient) -> None:
    def run(*oom_on: str) -> int:
        return client.ask(rq.Run(
            argv=[PY, "-c", STANDIN, "{device}", *oom_on], name="big",
            overrides={"device_prefs": [NVIDIA, AMD], "on_busy": "redirect", "on_oom": "elsewhere",
                       "placeholders": True, "retries": 0},
        )).tasks[0].id  # fmt: skip

    moved = _ended(client, run(NVIDIA))
    assert moved.state == "succeeded" and moved.device == AMD and moved.attempts == 2, moved.reason
    said = render_for(moved.state, moved.reason)  # it ended: the past tense
    assert said.startswith("out of memory on GeForce RTX 5060 Ti at 16.4 GiB; ran on Radeon 780M ("), said
    assert "shared free)" in said
    log = Path(moved.log_path or "").read_text()
    assert "torch CUDA: torch.OutOfMemoryError: CUDA out of memory." in log and f"done on {AMD}" in log
    # the monitor no longer shows the first job's memory on the 780M: the second one may fit there too
    wait_for(lambda: not _on(client, AMD), what="the 780M's sample without the first job")
    # out of memory wherever it runs: moved once at most (where it starts depends on which GPU the
    # monitor shows free at that moment), then it fails saying where it ran out
    nowhere = _ended(client, run(NVIDIA, AMD))
    assert nowhere.state == "failed" and nowhere.attempts <= 2, render(nowhere.reason)
    last = {NVIDIA: "GeForce RTX 5060 Ti", AMD: "Radeon 780M"}[str(nowhere.device)]
    assert render(nowhere.reason).startswith(f"out of memory on {last} at 16.4 GiB"), render(nowhere.reason)
    if nowhere.attempts == 2:
        assert nowhere.device == AMD  # moved from the 5060 Ti to where it fit, and no further


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="prlimit (util-linux) is not installed")
def test_a_real_cpu_torch_job_out_of_memory_under_prlimit_says_what_it_needed(
    client: ipc.IpcClient, torch_python: Path
) -> None:
    job = [shutil.which("prlimit") or "prlimit", "--as=3000000000", "--", str(torch_python), "-c",
           "import torch; torch.empty(8 * 2**30, dtype=torch.uint8)"]  # fmt: skip
    only_cpu = {"device_prefs": ["cpu"], "on_oom": "elsewhere"}
    task = client.ask(rq.Run(argv=job, name="cpu-oom", overrides=only_cpu)).tasks[0]
    failed = _ended(client, task.id)
    assert failed.state == "failed" and failed.attempts == 1
    said = render(failed.reason)
    assert said == (
        "out of memory on the CPU at 8.0 GiB; no other device is allowed for it (--device names more; "
        "--on-busy redirect lets it go there)"
    ), said
    assert "DefaultCPUAllocator: can't allocate memory" in Path(failed.log_path or "").read_text()
