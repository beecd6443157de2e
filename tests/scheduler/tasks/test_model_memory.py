"""The memory a task needs, known before it starts (issue 28, item 1): model files written here with
real headers that declare big tensors — a ``.safetensors`` header (its data never written), a GGUF
file from llama.cpp's own ``gguf`` writer (sparse: the tensor data is a hole), a sparse ``.pt`` — and
the predictions checked against the header arithmetic; then a real owner that places, refuses and
lists with them.

Before: a task without ``--vram`` counted as needing nothing; a 20 GiB model was started on a 16 GiB
card and failed there."""

from __future__ import annotations

import json
import math
import os
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import gguf
import numpy as np
import pytest
from real_owner import home_paths, running_owner
from waiting import wait_for

from gputray.scheduler import ipc
from gputray.scheduler import protocol as rq
from gputray.scheduler.paths import Paths
from gputray.scheduler.tasks.model_memory import MARGIN, context_length, predict_need, safetensors_weights

GiB = 1 << 30
PY = sys.executable


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    """A real safetensors header (8-byte length, JSON with dtype, shape, data_offsets); no data."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    sizes = {"F32": 4, "F16": 2, "BF16": 2, "I8": 1, "F8_E4M3": 1}
    for name, (dtype, shape) in tensors.items():
        size = sizes[dtype] * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


def write_gguf(path: Path) -> int:
    """A llama-shaped GGUF (32 layers, 32 heads, 8 KV heads, 4096 wide) with two big tensors whose data
    is a hole in a sparse file; the bytes its tensors declare."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(32)
    writer.add_head_count(32)
    writer.add_head_count_kv(8)
    writer.add_embedding_length(4096)
    q4k = 4096 * 14336 // 256 * 144  # Q4_K: 144 bytes per block of 256 weights
    f16 = 128256 * 4096 * 2
    writer.add_tensor_info("blk.0.ffn_up.weight", [14336, 4096 // 256 * 144], np.dtype(np.uint8), q4k,
                           raw_dtype=gguf.GGMLQuantizationType.Q4_K)  # fmt: skip
    writer.add_tensor_info("token_embd.weight", [128256, 4096], np.dtype(np.float16), f16,
                           raw_dtype=gguf.GGMLQuantizationType.F16)  # fmt: skip
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size + q4k + f16 + 64)  # the data: a hole, nothing on disk
    return q4k + f16


def test_a_safetensors_need_is_shape_times_dtype_plus_the_margin(tmp_path: Path) -> None:
    model = tmp_path / "model.safetensors"
    write_safetensors(model, {
        "embed.weight": ("BF16", [128256, 4096]),
        "layers.0.mlp.weight": ("F16", [14336, 4096]),
        "lm_head.scale": ("F32", [4096]),
        "q.weight": ("F8_E4M3", [4096, 4096]),
    })  # fmt: skip
    weights = 2 * 128256 * 4096 + 2 * 14336 * 4096 + 4 * 4096 + 4096 * 4096
    assert model.stat().st_size < 2000  # a header only: the need comes from it, not from the size
    assert safetensors_weights(model) == weights
    need = predict_need([str(model)], [])
    assert need is not None and need.bytes == math.ceil(weights * (1 + MARGIN))
    assert need.words() == "needs ~1.2 GiB: model.safetensors 1.1 GiB + 5 %"


def test_a_gguf_need_is_its_tensors_plus_the_kv_cache_the_arguments_ask(tmp_path: Path) -> None:
    model = tmp_path / "llama-8b-q4.gguf"
    declared = write_gguf(model)
    alone = predict_need([], ["-m", str(model)])
    assert alone is not None and alone.bytes == math.ceil(declared * (1 + MARGIN))
    with_context = predict_need([], ["-m", str(model), "--ctx-size", "8192"])
    kv = 2 * 32 * 8192 * 8 * (4096 // 32) * 2  # K and V, layers, tokens, KV heads, head size, f16
    assert with_context is not None and with_context.bytes == alone.bytes + kv
    assert with_context.source.endswith("+ 5 % + KV cache 1.0 GiB")
    assert context_length(["-c", "4096"]) == 4096 and context_length(["--ctx-size=512"]) == 512


def test_a_pickle_or_onnx_counts_its_size_and_a_broken_header_falls_back_to_it(tmp_path: Path) -> None:
    pt = tmp_path / "weights.pt"
    with open(pt, "wb") as f:
        f.truncate(3 * GiB)  # sparse: 3 GiB that take no disk
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\xff" * 64)  # a length no header has
    need = predict_need([str(pt), str(broken)], ["--other", "x.txt"])
    assert need is not None and [(Path(f.path).name, f.how) for f in need.files] == [
        ("weights.pt", "size"),
        ("broken.safetensors", "size"),
    ]
    assert need.bytes == math.ceil((3 * GiB + 64) * (1 + MARGIN))
    assert predict_need([], ["--model", str(tmp_path / "missing.gguf")]) is None  # no file: no need


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    return home_paths(tmp_path, monkeypatch)


@pytest.fixture
def client(paths: Paths) -> Iterator[ipc.IpcClient]:
    with running_owner(paths), ipc.IpcClient(paths, timeout_s=60) as c:
        yield c


def test_the_owner_places_refuses_and_lists_with_the_predicted_need(
    client: ipc.IpcClient, tmp_path: Path
) -> None:
    big = tmp_path / "big.safetensors"
    write_safetensors(big, {"w": ("F32", [5 * 1024, 1024, 1024])})  # 20 GiB of f32
    small = tmp_path / "small.safetensors"
    write_safetensors(small, {"w": ("F16", [1024, 1024, 1024])})  # 2 GiB
    with pytest.raises(
        ipc.RemoteError, match=r"its model files need ~21\.0 GiB \(big\.safetensors 20\.0 GiB \+ 5 %\)"
    ) as refused:
        client.ask(rq.Run(argv=[PY, "-c", "pass", str(big)], overrides={"device_prefs": ["5060ti"]}))
    assert str(refused.value).endswith("say how much: --vram SIZE, or `vram` in a task file)")  # the way on
    given = client.ask(rq.Run(argv=[PY, "-c", "pass", str(big)],
                              overrides={"device_prefs": ["5060ti"], "vram_bytes": GiB}))  # fmt: skip
    assert given.tasks[0].vram_need == GiB and given.tasks[0].vram_need_source == "vram"
    later = client.ask(rq.Run(argv=[PY, "-c", "pass", f"--model={small}"],
                              overrides={"start_at": time.time() + 3600})).tasks[0]  # fmt: skip
    assert later.vram_need == math.ceil(2 * GiB * (1 + MARGIN))
    assert later.vram_need_source == "small.safetensors 2.0 GiB + 5 %"
    later_s = time.time() + 3600
    given = client.ask(rq.Run(argv=[PY, "-c", "pass", str(small)],
                              overrides={"vram_bytes": GiB, "start_at": later_s})).tasks[0]  # fmt: skip
    assert (given.vram_need, given.vram_need_source) == (GiB, "vram")
    listed = {t.id: t for t in client.ask(rq.Queue(all=True)).tasks}
    assert listed[later.id].vram_need_source == "small.safetensors 2.0 GiB + 5 %"
    assert os.path.exists(small)


def _run_holding_memory(client: ipc.IpcClient, tmp_path: Path, family: str) -> None:
    """One run of ``family`` on the simulated 5060 Ti, which lists its process holding 1 GiB (what the
    monitor reads per process on real GPUs), held until a sample showed it and one more tick passed:
    its peak is kept with the family."""
    mark = tmp_path / f"go-{family}"
    waits = f"import os, time\nwhile not os.path.exists({str(mark)!r}): time.sleep(0.05)"
    first = client.ask(rq.Run(argv=[PY, "-c", waits], name="first",
                              overrides={"family": family, "device_prefs": ["5060ti"]})).tasks[0]  # fmt: skip

    def seen_holding() -> bool:
        snapshot = client.ask(rq.Status()).snapshot
        pid = client.ask(rq.Get(id=first.id)).task
        return (
            snapshot is not None and any(p.vram_bytes for p in snapshot.processes) and pid.state == "running"
        )

    try:
        wait_for(seen_holding, what="a sample with the job's memory")
        time.sleep(1.5)  # one more monitor tick (1 s) while it holds it: the peak is read from the samples
    finally:
        mark.touch()  # the job ends even when the wait failed: no process outlives the test
    wait_for(lambda: client.ask(rq.Get(id=first.id)).task.state == "succeeded", what="the first run")


def test_a_familys_recent_peak_counts_when_it_is_more_than_the_prediction(
    client: ipc.IpcClient, tmp_path: Path
) -> None:
    """The demo's simulated 5060 Ti lists a job's process holding 1 GiB where its task names no need:
    the run's peak is kept with its family, and the family's next task, naming a model predicted at
    0.5 GiB, counts the 1 GiB its last run reached."""
    small = tmp_path / "small.safetensors"
    write_safetensors(small, {"w": ("F16", [256, 1024, 1024])})  # 0.5 GiB
    _run_holding_memory(client, tmp_path, "blur")
    an_hour_on = {"family": "blur", "start_at": time.time() + 3600}
    later = client.ask(rq.Run(argv=[PY, "-c", "pass", str(small)], overrides=an_hour_on)).tasks[0]
    assert later.vram_need == math.ceil(0.5 * GiB * (1 + MARGIN))  # the submit's own answer: the files
    (listed,) = [t for t in client.ask(rq.Queue(all=False)).tasks if t.id == later.id]
    assert listed.vram_need == GiB and listed.vram_need_source == "the peak of its recent runs, 1.0 GiB"


def test_tasks_whose_family_learned_a_need_start_on_every_device_they_name(
    client: ipc.IpcClient, tmp_path: Path
) -> None:
    """Three tasks of a family whose last run taught it 1 GiB, ``--device 5060ti,780m,cpu --on-busy
    redirect``, all start once the queue resumes and all succeed.

    Before (accbb11 until 5f331dc and d656fdc): the pass placed the copy of each record that carried the
    learned need, the start compared that spec with the stored one, found them different and asked for
    another pass, which placed the same copy again: the tasks stayed ``queued`` with no reason while
    every device was free (the crash-kill bench's "stuck" tasks)."""
    _run_holding_memory(client, tmp_path, "upscale")
    client.ask(rq.Pause())  # all three planned in the same pass, as a burst of submits is
    overrides = {"family": "upscale", "device_prefs": ["5060ti", "780m", "cpu"], "on_busy": "redirect"}
    ids = [client.ask(rq.Run(argv=[PY, "-c", "pass"], name=f"t{i}", overrides=overrides)).tasks[0].id
           for i in range(3)]  # fmt: skip
    listed = [t for t in client.ask(rq.Queue(all=False)).tasks if t.id in ids]
    assert [t.vram_need for t in listed] == [GiB] * 3  # the learned need, which the pass plans with
    client.ask(rq.Resume())

    def ended() -> list[str] | None:
        states = [client.ask(rq.Get(id=i)).task.state for i in ids]
        return states if all(s in ("succeeded", "failed", "cancelled") for s in states) else None

    assert wait_for(ended, what="the three tasks to end") == ["succeeded"] * 3
