"""Probe one Python environment: which torch it has, which devices torch sees, and whether they work.

Run by gputray inside the environment as ``<python> -I probe.py [--bench] [--version-only] [--select]``.
``--select`` reads back only the device a job would use (``GPUTRAY_TORCH_DEVICE``, else ``cuda:0``) under
the selection variables it was started with, and runs the small checked matmul on it. It must
not import gputray and uses only the standard library plus torch (which may be missing or broken).

It prints exactly ONE JSON document on stdout, at the end. Everything else that torch or its
libraries print goes to stderr: fd 1 is pointed at fd 2 while the probe works. Along the way it
writes progress lines ``@gputray-progress {json}`` on stderr, so that when the probe hangs on one
device (a wrong ``HSA_OVERRIDE_GFX_VERSION`` can do that) the runner still has the results so far.

Every item is guarded: an exception becomes ``{"ok": false, "error": "<type>: <text>"}`` and the
probe goes on. ``torch.cuda.is_available()`` says True even when the wheel has no kernels for the
GPU, so only a real op on the device proves it works.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import time
import traceback
import warnings

PROBE_FORMAT = 1
PROGRESS_PREFIX = "@gputray-progress "
MAX_ERROR_CHARS = 4000
ITEM_BUDGET_S = 0.35  # time spent repeating one bench item after its warm-up run
_STARTED = time.perf_counter()


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text[:MAX_ERROR_CHARS]


def _progress(stderr_fd: int, payload: dict) -> None:
    line = PROGRESS_PREFIX + json.dumps(payload, ensure_ascii=True, default=str) + "\n"
    with contextlib.suppress(OSError):
        os.write(stderr_fd, line.encode("ascii"))


def _version_info() -> dict:
    info = {
        "python_version": platform.python_version(),
        "python_executable": sys.executable,
        "python_prefix": sys.prefix,
        "platform": sys.platform,
        "machine": platform.machine(),
    }
    try:
        from importlib import metadata

        info["torch_dist_version"] = metadata.version("torch")
    except Exception as exc:  # PackageNotFoundError, broken metadata
        info["torch_dist_version"] = None
        info["torch_dist_error"] = _error_text(exc)
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")  # finds the package without importing it
        info["torch_origin"] = spec.origin if spec is not None else None
    except Exception:
        info["torch_origin"] = None
    return info


def _sync(torch, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def _timed(torch, device: str, fn) -> tuple[float, int]:
    """Warm up once, then repeat ``fn`` for about ITEM_BUDGET_S; return (seconds per call, calls)."""
    fn()
    _sync(torch, device)
    calls = 0
    start = time.perf_counter()
    elapsed = 0.0
    while True:
        fn()
        calls += 1
        _sync(torch, device)
        elapsed = time.perf_counter() - start
        if elapsed >= ITEM_BUDGET_S or calls >= 200:
            break
    return elapsed / calls, calls


def _item(name: str, unit: str, body) -> dict:
    started = time.perf_counter()
    try:
        value, extra = body()
        out = {"name": name, "ok": True, "value": value, "unit": unit, "error": None}
        out.update(extra)
    except Exception as exc:
        out = {"name": name, "ok": False, "value": None, "unit": unit, "error": _error_text(exc)}
    out["seconds"] = round(time.perf_counter() - started, 3)
    return out


def _check_close(torch, got, want, tol: float, what: str) -> None:
    err = (got.double().cpu() - want).abs().max().item()
    scale = max(want.abs().max().item(), 1.0)
    if not err <= tol * scale:  # also catches NaN
        raise ArithmeticError(f"wrong results for {what}: max error {err:.3g} (scale {scale:.3g})")


def _matmul(torch, device: str, dtype, n: int, tol: float):
    def body():
        gen = torch.Generator().manual_seed(0)
        a_small = torch.randn(64, 64, generator=gen, dtype=torch.float64)
        b_small = torch.randn(64, 64, generator=gen, dtype=torch.float64)
        got = a_small.to(device=device, dtype=dtype) @ b_small.to(device=device, dtype=dtype)
        _check_close(torch, got, a_small @ b_small, tol, f"{dtype} matmul")
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        per_call_s, calls = _timed(torch, device, lambda: a @ b)
        return round(2.0 * n**3 / per_call_s / 1e9, 2), {"size": n, "calls": calls}

    return body


def _conv2d(torch, device: str, batch: int, channels: int, hw: int):
    def body():
        import torch.nn.functional as F

        x = torch.randn(batch, channels, hw, hw, device=device)
        w = torch.randn(channels, channels, 3, 3, device=device)
        ref = F.conv2d(x[:1].cpu().double(), w.cpu().double(), padding=1)
        _check_close(torch, F.conv2d(x[:1], w, padding=1), ref, 1e-3, "fp32 conv2d")
        per_call_s, calls = _timed(torch, device, lambda: F.conv2d(x, w, padding=1))
        flops = 2.0 * batch * channels * hw * hw * channels * 9
        return round(flops / per_call_s / 1e9, 2), {
            "size": f"{batch}x{channels}x{hw}x{hw} k3",
            "calls": calls,
        }

    return body


def _sdpa(torch, device: str, dtype, batch: int, heads: int, length: int, dim: int):
    def body():
        import torch.nn.functional as F

        q = torch.randn(batch, heads, length, dim, device=device, dtype=dtype)
        k = torch.randn(batch, heads, length, dim, device=device, dtype=dtype)
        v = torch.randn(batch, heads, length, dim, device=device, dtype=dtype)
        qs, ks, vs = (t[:1, :1].double().cpu() for t in (q, k, v))
        ref = torch.softmax(qs @ ks.transpose(-1, -2) / dim**0.5, dim=-1) @ vs
        got = F.scaled_dot_product_attention(q[:1, :1], k[:1, :1], v[:1, :1])
        _check_close(torch, got, ref, 2e-2 if dtype != torch.float32 else 1e-3, "attention")
        per_call_s, calls = _timed(torch, device, lambda: F.scaled_dot_product_attention(q, k, v))
        flops = 4.0 * batch * heads * length * length * dim
        dtype_name = str(dtype).replace("torch.", "")
        return round(flops / per_call_s / 1e9, 2), {
            "size": f"{batch}x{heads}x{length}x{dim}",
            "dtype": dtype_name,
            "calls": calls,
        }

    return body


def _bandwidth(torch, device: str, nbytes: int):
    def body():
        x = torch.ones(nbytes // 4, device=device, dtype=torch.float32)
        y = torch.empty_like(x)
        y.copy_(x)
        if y[-1].item() != 1.0:
            raise ArithmeticError("wrong results for a device copy")
        per_call_s, calls = _timed(torch, device, lambda: y.copy_(x))
        return round(2.0 * nbytes / per_call_s / 1e9, 2), {
            "size": f"{nbytes // (1 << 20)} MiB",
            "calls": calls,
        }

    return body


def _bench(torch, device: str) -> list[dict]:
    on_gpu = device != "cpu"
    n = 2048 if on_gpu else 384
    half_tol = 2e-2
    items = [
        _item(
            "conv2d_fp32", "GFLOP/s", _conv2d(torch, device, 16 if on_gpu else 4, 64, 56 if on_gpu else 32)
        ),
        _item("matmul_fp32", "GFLOP/s", _matmul(torch, device, torch.float32, n, 1e-3)),
        _item("matmul_fp16", "GFLOP/s", _matmul(torch, device, torch.float16, n, half_tol)),
        _item("matmul_bf16", "GFLOP/s", _matmul(torch, device, torch.bfloat16, n, 8e-2)),
        _item(
            "sdpa",
            "GFLOP/s",
            _sdpa(
                torch, device, torch.float16 if on_gpu else torch.float32, 4, 8, 1024 if on_gpu else 256, 64
            ),
        ),
        _item("bandwidth", "GB/s", _bandwidth(torch, device, (256 if on_gpu else 32) << 20)),
    ]
    return items


def _basic_op(torch, device: str) -> dict:
    """A small real kernel whose result is checked against the CPU: proves the device really works."""

    def body():
        a = torch.arange(1, 65, dtype=torch.float32).reshape(8, 8) / 8.0
        got = (a.to(device) @ a.to(device)).relu().sum().cpu()
        want = (a.double() @ a.double()).relu().sum()
        _check_close(torch, got.reshape(1), want.reshape(1), 1e-4, "a basic op")
        return None, {}

    item = _item("basic_op", "", body)
    return item


def _device_props(torch, index: int) -> dict:
    out: dict = {"index": index}
    try:
        props = torch.cuda.get_device_properties(index)
    except Exception as exc:
        out["error"] = _error_text(exc)
        return out
    out["name"] = getattr(props, "name", None)
    out["total_memory_bytes"] = getattr(props, "total_memory", None)
    major, minor = getattr(props, "major", None), getattr(props, "minor", None)
    out["capability"] = f"{major}.{minor}" if major is not None else None
    out["gcn_arch_name"] = getattr(props, "gcnArchName", None) or None
    out["multi_processor_count"] = getattr(props, "multi_processor_count", None)
    uuid = getattr(props, "uuid", None)
    out["uuid"] = str(uuid) if uuid is not None else None
    for attr in ("pci_bus_id", "pci_device_id", "pci_domain_id"):
        value = getattr(props, attr, None)
        out[attr] = int(value) if isinstance(value, int) else None
    return out


def _cpu_name() -> str:
    name = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return name or platform.machine() or "CPU"


def _device_count(torch, result: dict) -> int:
    """How many GPUs torch sees, put in ``result`` (``device_count``); 0 when asking fails, with the
    error as ``accelerator_error``."""
    try:
        count = torch.cuda.device_count()
    except Exception as exc:
        count = 0
        result["accelerator_error"] = _error_text(exc)
    result["device_count"] = count
    return count


def run_probe(bench: bool, stderr_fd: int) -> dict:
    result: dict = {"probe_format": PROBE_FORMAT, "bench": bench}
    result.update(_version_info())
    caught: list[str] = []
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        try:
            import torch
        except BaseException as exc:  # ImportError, OSError from a broken CUDA lib, SystemExit...
            result["torch_version"] = None
            result["torch_error"] = _error_text(exc)
            result["torch_traceback"] = traceback.format_exc()[-MAX_ERROR_CHARS:]
            result["devices"] = []
            result["warnings"] = [str(w.message)[:MAX_ERROR_CHARS] for w in records]
            return result
        result["torch_import_s"] = round(time.perf_counter() - started, 3)
        result["torch_version"] = str(torch.__version__)
        result["torch_error"] = None
        version = getattr(torch, "version", None)
        result["cuda_version"] = getattr(version, "cuda", None)
        result["hip_version"] = getattr(version, "hip", None)
        result["num_threads"] = torch.get_num_threads()
        _progress(stderr_fd, {"stage": "torch", "torch_version": result["torch_version"]})

        devices: list[dict] = []
        try:
            result["arch_list"] = list(torch.cuda.get_arch_list())
        except Exception as exc:
            result["arch_list"] = []
            result["arch_list_error"] = _error_text(exc)
        count = _device_count(torch, result)
        if count == 0 and "accelerator_error" not in result:
            # Ask for the reason there is no GPU: "Torch not compiled with CUDA enabled", "driver too old"...
            try:
                torch.zeros(1, device="cuda")
            except Exception as exc:
                result["accelerator_error"] = _error_text(exc)

        cpu: dict = {"torch_device": "cpu", "kind": "cpu", "name": _cpu_name()}
        targets = [cpu]
        for index in range(count):
            props = _device_props(torch, index)
            props["torch_device"] = f"cuda:{index}"
            props["kind"] = "hip" if result["hip_version"] else "cuda"
            targets.append(props)

        for target in targets:
            device = target["torch_device"]
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as device_records:
                warnings.simplefilter("always")
                target["basic_op"] = _basic_op(torch, device)
                if bench and target["basic_op"]["ok"]:
                    target["bench"] = _bench(torch, device)
            target["warnings"] = sorted({str(w.message)[:MAX_ERROR_CHARS] for w in device_records})
            target["seconds"] = round(time.perf_counter() - t0, 3)
            devices.append(target)
            _progress(stderr_fd, {"stage": "device", "device": target})
        result["devices"] = devices
        caught = sorted({str(w.message)[:MAX_ERROR_CHARS] for w in records})
    result["warnings"] = caught
    return result


def run_select() -> dict:
    """What torch sees under the selection this process got: the device count, the selected device's
    properties and whether a small checked matmul runs on it."""
    result: dict = {"probe_format": PROBE_FORMAT, "platform": sys.platform}
    try:
        import torch
    except BaseException as exc:
        result["torch_error"] = _error_text(exc)
        return result
    version = getattr(torch, "version", None)
    result["torch_version"] = str(torch.__version__)
    result["cuda_version"] = getattr(version, "cuda", None)
    result["hip_version"] = getattr(version, "hip", None)
    device = os.environ.get("GPUTRAY_TORCH_DEVICE") or "cuda:0"
    result["torch_device"] = device
    count = _device_count(torch, result)
    index = int(device.partition(":")[2] or 0) if device.startswith("cuda") else -1
    if not 0 <= index < count:
        result["selected"] = None
        return result
    props = _device_props(torch, index)
    props["torch_device"] = device
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        props["basic_op"] = _basic_op(torch, device)
    result["selected"] = props
    return result


def main(argv: list[str]) -> int:
    bench = "--bench" in argv
    version_only = "--version-only" in argv
    # Keep fd 1 for our JSON only: whatever torch, CUDA or ROCm print goes to stderr instead.
    out_fd = os.dup(1)
    os.dup2(2, 1)
    stderr_fd = 2
    try:
        if version_only:
            result = _version_info()
        elif "--select" in argv:
            result = run_select()
        else:
            result = run_probe(bench, stderr_fd)
        result["probe_seconds"] = round(time.perf_counter() - _STARTED, 3)
    except BaseException as exc:  # the probe must always answer
        result = {"probe_format": PROBE_FORMAT, "probe_error": _error_text(exc)}
        result["probe_traceback"] = traceback.format_exc()[-MAX_ERROR_CHARS:]
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    data = (json.dumps(result, ensure_ascii=True, default=str) + "\n").encode("ascii")
    while data:
        written = os.write(out_fd, data)
        data = data[written:]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
