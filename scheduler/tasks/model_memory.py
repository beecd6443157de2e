"""How much GPU memory a task needs, known before it starts, from the model files it names.

A task that gives no ``vram`` but names model files (its ``files``, or paths among its arguments)
gets a predicted need (``TaskSpec.vram_need_bytes``, with ``vram_need_source`` in words):

* ``.safetensors``: an 8-byte little-endian header length, then a JSON header mapping each tensor's
  name to its ``dtype``, ``shape`` and ``data_offsets`` (and ``__metadata__``); the weights are the sum
  of shape × dtype size over the tensors (nothing past the header is read);
* ``.gguf``: the tensor infos, read by the ``gguf`` package (llama.cpp's own reader; it maps the file
  and reads no tensor data): the sum of their sizes in bytes; plus, where the arguments give a context
  length (``-c N``, ``--ctx-size N``), the KV cache: 2 (K and V) × layers × context × KV heads × head
  size × 2 bytes (f16, llama.cpp's default cache type), from the file's metadata;
* ``.pt``, ``.pth``, ``.ckpt``, ``.bin``, ``.onnx``: the file's size (what a pickle or protobuf holds
  is not known without loading it).

The need is the weights plus ``MARGIN`` (5 %: the CUDA/ROCm context, activations and allocator slack of
an inference run; a training run needs more, so give ``vram`` for one), plus the KV cache: "needs
~7.6 GiB: model.safetensors 7.2 GiB + 5 %". A file that cannot be read adds nothing (the task is
never refused for it).
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gputray.monitor.units import format_bytes

#: What the weights get on top, as a fraction (see the module docstring).
MARGIN = 0.05
#: The largest safetensors header read (the format's own reference limit is 100 MB).
MAX_HEADER_BYTES = 100_000_000
#: Bytes per element of each safetensors dtype (the format's list; F4/F6 pack below a byte).
DTYPE_BYTES: dict[str, float] = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
    "F4": 0.5, "F6_E2M3": 0.75, "F6_E3M2": 0.75,
}  # fmt: skip
#: Files whose size is all that is known of their weights.
SIZE_ONLY = (".pt", ".pth", ".ckpt", ".bin", ".onnx")
MODEL_SUFFIXES = (".safetensors", ".gguf", *SIZE_ONLY)
KV_BYTES_PER_VALUE = 2  # f16 K and V caches
CONTEXT_FLAGS = ("-c", "--ctx-size", "--context-size", "--n-ctx")


class ModelFileError(ValueError):
    """A model file whose header cannot be read; the message says why."""


@dataclass(frozen=True)
class ModelWeights:
    """One model file's share of the need: its weights in bytes, how they were found, and the KV
    cache a GGUF model needs for the context the arguments give (0 when none is given)."""

    path: str
    weights_bytes: int
    how: str  # "header" (safetensors / GGUF tensor infos) or "size" (the file's size)
    kv_cache_bytes: int = 0


@dataclass(frozen=True)
class MemoryNeed:
    """The predicted need and the files it comes from."""

    bytes: int
    files: tuple[ModelWeights, ...]

    @property
    def source(self) -> str:
        """``model.safetensors 7.2 GiB + 5 %`` (``+ KV cache 1.0 GiB at 8192 tokens`` for GGUF)."""
        parts = [f"{Path(f.path).name} {format_bytes(f.weights_bytes)}" for f in self.files]
        text = " + ".join(parts) + f" + {MARGIN * 100:g} %"
        kv = sum(f.kv_cache_bytes for f in self.files)
        return text + (f" + KV cache {format_bytes(kv)}" if kv else "")

    def words(self) -> str:
        return f"needs ~{format_bytes(self.bytes)}: {self.source}"


def safetensors_weights(path: Path) -> int:
    """The bytes of every tensor a ``.safetensors`` header declares (shape × dtype size)."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ModelFileError(f"{path.name}: shorter than a safetensors header")
        (length,) = struct.unpack("<Q", head)
        if length > MAX_HEADER_BYTES:
            raise ModelFileError(f"{path.name}: a header of {length} bytes is not a safetensors header")
        raw = f.read(length)
    try:
        header = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{path.name}: its header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise ModelFileError(f"{path.name}: its header is not a JSON object")
    total = 0.0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            size = DTYPE_BYTES[str(info["dtype"])]
            total += size * math.prod(int(n) for n in info["shape"])
        except (KeyError, TypeError, ValueError):
            raise ModelFileError(f"{path.name}: tensor {name!r} has no known dtype and shape") from None
    return math.ceil(total)


def gguf_weights(path: Path, context: int | None) -> tuple[int, int]:
    """The bytes of a GGUF file's tensors, and its KV cache at ``context`` tokens (0 without one)."""
    try:
        from gguf import GGUFReader
    except ImportError as exc:  # the gguf package is a dependency; a broken install falls back to the size
        raise ModelFileError(f"{path.name}: the gguf package cannot be imported ({exc})") from None
    try:
        reader = GGUFReader(path)
    except (OSError, ValueError, KeyError, IndexError) as exc:
        raise ModelFileError(f"{path.name}: not a readable GGUF file ({exc})") from None
    weights = sum(int(t.n_bytes) for t in reader.tensors)
    if context is None:
        return weights, 0
    return weights, _kv_cache_bytes(reader, context)


def _kv_cache_bytes(reader: object, context: int) -> int:
    """2 × layers × context × KV heads × head size × 2 bytes, from the GGUF metadata (0 if missing)."""

    def value(key: str) -> int | None:
        field = getattr(reader, "fields", {}).get(key)
        if field is None:
            return None
        try:
            return int(field.contents())
        except (TypeError, ValueError):
            return None

    arch_field = getattr(reader, "fields", {}).get("general.architecture")
    arch = str(arch_field.contents()) if arch_field is not None else ""
    layers = value(f"{arch}.block_count")
    heads = value(f"{arch}.attention.head_count")
    kv_heads = value(f"{arch}.attention.head_count_kv") or heads
    embedding = value(f"{arch}.embedding_length")
    key_length = value(f"{arch}.attention.key_length")
    if not (layers and heads and kv_heads and (key_length or embedding)):
        return 0
    head_size = key_length or (embedding or 0) // heads
    return 2 * layers * context * kv_heads * head_size * KV_BYTES_PER_VALUE


def context_length(args: Sequence[str]) -> int | None:
    """The context length the arguments give (``-c 8192``, ``--ctx-size=8192``), None without one."""
    for i, arg in enumerate(args):
        flag, eq, inline = arg.partition("=")
        if flag in CONTEXT_FLAGS:
            text = inline if eq else (args[i + 1] if i + 1 < len(args) else "")
            if text.isdigit() and int(text) > 0:
                return int(text)
    return None


def model_files(paths: Iterable[str], cwd: str | None = None) -> list[Path]:
    """The model files among ``paths`` (a task's files and arguments) that exist, each once."""
    found: list[Path] = []
    for text in paths:
        _flag, eq, value = text.partition("=")
        for candidate in (text, value) if eq else (text,):
            if not candidate.lower().endswith(MODEL_SUFFIXES):
                continue
            path = Path(candidate) if cwd is None else Path(cwd) / candidate
            if path.is_file() and path not in found:
                found.append(path)
    return found


def weights_of(path: Path, context: int | None) -> ModelWeights:
    """One model file's weights: from its header where the format has one, else its size."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".safetensors":
            return ModelWeights(str(path), safetensors_weights(path), "header")
        if suffix == ".gguf":
            weights, kv = gguf_weights(path, context)
            return ModelWeights(str(path), weights, "header", kv)
    except ModelFileError:
        pass  # the size, as for a format without a header
    return ModelWeights(str(path), os.stat(path).st_size, "size")


def predict_need(files: Sequence[str], args: Sequence[str], cwd: str | None = None) -> MemoryNeed | None:
    """The need of a task naming ``files`` and ``args``; None when it names no readable model file."""
    context = context_length(args)
    weights: list[ModelWeights] = []
    for path in model_files([*files, *args], cwd):
        try:
            weights.append(weights_of(path, context))
        except OSError:
            continue
    if not weights:
        return None
    total = sum(w.weights_bytes for w in weights)
    kv = sum(w.kv_cache_bytes for w in weights)
    return MemoryNeed(math.ceil(total * (1 + MARGIN)) + kv, tuple(weights))
