"""Did a job end because it ran out of memory? Its exit and the tail of its log say so, in the words of
the runtime that ran out (each pattern is a message as printed in the field):

* torch, CUDA and ROCm: ``torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0
  has a total capacity of 15.59 GiB of which 1.20 GiB is free …`` (ROCm prints ``HIP out of memory``
  in the same sentence: ROCm/TheRock issue #1054, pytorch/pytorch issue #138002); torch before 2.2:
  ``… Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.56 GiB already allocated; …)``;
* HIP itself: ``hipErrorOutOfMemory``, ``HIP_ERROR_OutOfMemory`` (tensorflow-rocm: keras issue #13889);
* Vulkan: ``VK_ERROR_OUT_OF_DEVICE_MEMORY``; ncnn's ``vkAllocateMemory failed -2`` (-2 is that error:
  nihui/waifu2x-ncnn-vulkan issue #32, xinntao/Real-ESRGAN issue #153);
* llama.cpp: ``cudaMalloc failed: out of memory`` and ``failed to allocate CUDA0 buffer of size
  151851674624`` (ggml-org/llama.cpp issues #20431, #16725; ``… CPU buffer …`` on the CPU, #8101);
* the CPU allocator: torch's ``DefaultCPUAllocator: can't allocate memory: you tried to allocate
  17179869184 bytes``, Python's ``MemoryError``.

``peak_bytes`` is what the job needed as far as the message tells: what the device held plus what it
tried to allocate (torch), the buffer it could not get (llama.cpp, torch's CPU allocator); None when
the message does not say (then the device's memory is the floor).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

TAIL_BYTES = 64 * 1024  # how much of the log's end is read
_UNITS = {"B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40, "KB": 1000, "MB": 10**6,
          "GB": 10**9, "TB": 10**12}  # fmt: skip
_SIZE = r"([\d.]+)\s*([KMGT]?i?B)"

_TORCH = re.compile(
    r"(?P<api>CUDA|HIP) out of memory\. Tried to allocate " + _SIZE + r"\. GPU \d+ has a total capacity of "
    + _SIZE + r" of which " + _SIZE + r" is free"
)  # fmt: skip
_TORCH_OLD = re.compile(
    r"(?P<api>CUDA|HIP) out of memory\. Tried to allocate " + _SIZE + r" \(GPU \d+; " + _SIZE
    + r" total capacity; " + _SIZE + r" already allocated"
)  # fmt: skip
_TORCH_BARE = re.compile(r"(CUDA|HIP) out of memory")
_HIP = re.compile(r"hipErrorOutOfMemory|HIP_ERROR_OutOfMemory")
_VULKAN = re.compile(r"VK_ERROR_OUT_OF_DEVICE_MEMORY|vkAllocateMemory failed -2\b")
_LLAMA = re.compile(
    r"(?P<cpu>cpu_buffer_type_alloc_buffer: )?"
    r"failed to allocate (?:(?P<where>\w+) )?buffer of size (?P<size>\d+)"
)
_CUDA_MALLOC = re.compile(r"cudaMalloc failed: out of memory")
_CPU_TORCH = re.compile(
    r"DefaultCPUAllocator: can't allocate memory: you tried to allocate (?P<size>\d+) bytes"
)
_PY_MEMORY = re.compile(r"^MemoryError\b", re.MULTILINE)


@dataclass(frozen=True)
class OutOfMemory:
    """An out-of-memory end: by what (``torch CUDA``, ``HIP``, ``Vulkan``, ``llama.cpp``, ``CPU``), the
    line that says so, and the memory the job needed as far as it tells (None: not said)."""

    kind: str
    line: str
    peak_bytes: int | None = None


def _bytes(number: str, unit: str) -> int:
    return int(float(number) * _UNITS[unit.upper()])


def _line_of(text: str, start: int) -> str:
    begin = text.rfind("\n", 0, start) + 1
    end = text.find("\n", start)
    return text[begin : end if end != -1 else len(text)].strip()[:300]


def find_oom(text: str) -> OutOfMemory | None:
    """The last out-of-memory message in ``text`` (a log's tail), None when there is none."""
    found: list[tuple[int, OutOfMemory]] = []
    for m in _TORCH.finditer(text):
        tried = _bytes(m.group(2), m.group(3))
        total, free = _bytes(m.group(4), m.group(5)), _bytes(m.group(6), m.group(7))
        found.append((m.start(), OutOfMemory(f"torch {m.group('api')}", _line_of(text, m.start()),
                                             max(0, total - free) + tried)))  # fmt: skip
    for m in _TORCH_OLD.finditer(text):
        tried, held = _bytes(m.group(2), m.group(3)), _bytes(m.group(6), m.group(7))
        found.append(
            (m.start(), OutOfMemory(f"torch {m.group('api')}", _line_of(text, m.start()), held + tried))
        )
    if not found:
        for m in _TORCH_BARE.finditer(text):
            found.append((m.start(), OutOfMemory(f"torch {m.group(1)}", _line_of(text, m.start()))))
    for m in _LLAMA.finditer(text):
        kind = "CPU" if m.group("where") == "CPU" or m.group("cpu") else "llama.cpp"
        found.append((m.start(), OutOfMemory(kind, _line_of(text, m.start()), int(m.group("size")))))
    for m in _CPU_TORCH.finditer(text):
        found.append((m.start(), OutOfMemory("CPU", _line_of(text, m.start()), int(m.group("size")))))
    for pattern, kind in (
        (_HIP, "HIP"),
        (_VULKAN, "Vulkan"),
        (_CUDA_MALLOC, "llama.cpp"),
        (_PY_MEMORY, "CPU"),
    ):
        for m in pattern.finditer(text):
            found.append((m.start(), OutOfMemory(kind, _line_of(text, m.start()))))
    if not found:
        return None
    # the last line with a message wins; of those on one line, the one that says how much was needed
    last = max(found, key=lambda f: (text.rfind("\n", 0, f[0]), f[1].peak_bytes is not None))
    return last[1]


def oom_in_log(log_path: str | os.PathLike[str] | None, returncode: int | None) -> OutOfMemory | None:
    """An out-of-memory end of a job that failed (a status other than 0): from its log's tail."""
    if log_path is None or returncode in (None, 0):
        return None
    try:
        with open(Path(log_path), "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    return find_oom(tail)
