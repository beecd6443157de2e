"""A small wgpu compute job that leaves the choice of adapter to wgpu (``get_default_device``: wgpu-py's
``request_adapter_sync(power_preference="high-performance")``), as most wgpu programs do, and says
which adapter that was and whether the shader computed right. Run by tests/scheduler/test_real_programs.py
through the queue."""

from __future__ import annotations

import sys
from array import array

import wgpu
from wgpu.utils.compute import compute_with_buffers

SHADER = """
@group(0) @binding(0) var<storage, read> numbers: array<i32>;
@group(0) @binding(1) var<storage, read_write> squares: array<i32>;

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) index: vec3<u32>) {
    let i: u32 = index.x;
    squares[i] = numbers[i] * numbers[i];
}
"""


def main() -> int:
    device = wgpu.utils.get_default_device()
    info = device.adapter.info
    kind, backend = info["adapter_type"], info["backend_type"]
    print(f"wgpu {wgpu.__version__} adapter: {info['device']} ({kind}, {backend})")
    numbers = array("i", range(64))
    out = compute_with_buffers({0: numbers}, {1: (len(numbers), "i")}, SHADER, n=len(numbers))
    squares = list(out[1])
    right = squares == [n * n for n in numbers]
    print(f"computed {len(squares)} squares: {'right' if right else 'WRONG'} (last {squares[-1]})")
    return 0 if right else 1


if __name__ == "__main__":
    sys.exit(main())
