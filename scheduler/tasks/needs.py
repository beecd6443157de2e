"""What a job may say it needs (``needs = ["fp16"]`` in a task file, ``--needs``) and the doctor's bench
items that must have passed for each: the task model checks the words, the doctor and the queue read
the items. A leaf module, so that reading a task file never loads the doctor."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Bench items the probe measures, in table order, with a short column title.
CAPABILITIES: tuple[tuple[str, str], ...] = (
    ("conv2d_fp32", "conv2d fp32"),
    ("matmul_fp32", "matmul fp32"),
    ("matmul_fp16", "matmul fp16"),
    ("matmul_bf16", "matmul bf16"),
    ("sdpa", "attention"),
    ("bandwidth", "bandwidth"),
)
# A job's declared needs → the bench items that must have passed.
NEEDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "fp32": ("matmul_fp32",),
        "conv2d": ("conv2d_fp32",),
        "matmul": ("matmul_fp32",),
        "fp16": ("matmul_fp16",),
        "half": ("matmul_fp16",),
        "bf16": ("matmul_bf16",),
        "sdpa": ("sdpa",),
        "attention": ("sdpa",),
        **{name: (name,) for name, _ in CAPABILITIES},
    }
)
