"""Reasons and fixes for the failure texts PyTorch, CUDA and ROCm really print (quoted in full)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gputray.scheduler.pyenvs.doctor_messages import diagnose, explain
from gputray.scheduler.pyenvs.registry import PythonEnv

CUDA_ENV = PythonEnv("cu124", Path("/home/ana/venvs/cu124/bin/python"))
ROCM_ENV = PythonEnv("rocm", Path("/home/ana/venvs/rocm/bin/python"))
ROCM_OVERRIDE_ENV = PythonEnv(
    "rocm-override", Path("/home/ana/venvs/rocm/bin/python"), {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}
)
ROCM_WRONG_OVERRIDE_ENV = PythonEnv(
    "rocm-wrong", Path("/home/ana/venvs/rocm/bin/python"), {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}
)

SITE = "/home/ana/venvs/cu124/lib/python3.12/site-packages/torch"
ROCM_SITE = "/home/ana/venvs/rocm/lib/python3.12/site-packages/torch"

SM120_WARNING = (
    f"{SITE}/cuda/__init__.py:235: UserWarning:\n"
    "NVIDIA GeForce RTX 5060 Ti with CUDA capability sm_120 is not compatible with the current "
    "PyTorch installation.\n"
    "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_61 sm_70 sm_75 sm_80 sm_86 "
    "sm_90.\n"
    "If you want to use the NVIDIA GeForce RTX 5060 Ti GPU with PyTorch, please check the instructions "
    "at https://pytorch.org/get-started/locally/\n\n"
    "  warnings.warn(\n"
)

NO_KERNEL_IMAGE = (
    "Traceback (most recent call last):\n"
    '  File "/home/ana/train.py", line 12, in <module>\n'
    "    y = model(x.cuda())\n"
    "        ^^^^^^^^^^^^^^^\n"
    f'  File "{SITE}/nn/modules/conv.py", line 549, in _conv_forward\n'
    "    return F.conv2d(\n"
    "           ^^^^^^^^^\n"
    "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
    "below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)

HIP_INVALID_DEVICE_FUNCTION = (
    "Traceback (most recent call last):\n"
    '  File "<string>", line 1, in <module>\n'
    "RuntimeError: HIP error: invalid device function\n"
    "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace "
    "below might be incorrect.\n"
    "For debugging consider passing AMD_SERIALIZE_KERNEL=3\n"
    "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.\n"
)

INVALID_ISA = (
    ":0:rocdevice.cpp            :2984: 4152342217 us: [pid:48121 tid:0x7f0c2bfff640] Callback: "
    "Queue 0x7f0bf8e00000 aborting with error : HSA_STATUS_ERROR_INVALID_ISA: The instruction set "
    "architecture is invalid. code: 0x100f\nAborted (core dumped)\n"
)

ROCBLAS_NO_TENSILE = (
    f"rocBLAS error: Cannot read {ROCM_SITE}/lib/rocblas/library/TensileLibrary.dat: No such file or "
    "directory for GPU arch : gfx1103\n"
    " List of available TensileLibrary Files : \n"
    f'"{ROCM_SITE}/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat"\n'
    f'"{ROCM_SITE}/lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat"\n'
    "Aborted (core dumped)\n"
)

NO_BINARY_FOR_GPU = '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n'

DRIVER_TOO_OLD = (
    "/home/ana/venvs/cu128/lib/python3.12/site-packages/torch/cuda/__init__.py:129: UserWarning: "
    "CUDA initialization: The NVIDIA driver on your system is too old (found version 12040). Please "
    "update your GPU driver by downloading and installing a new version from the URL: "
    "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a "
    "PyTorch version that has been compiled with your version of the CUDA driver. (Triggered internally "
    "at /pytorch/c10/cuda/CUDAFunctions.cpp:109.)\n"
    "  return torch._C._cuda_getDeviceCount() > 0\n"
)

NOT_COMPILED_WITH_CUDA = """\
Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/home/ana/venvs/cpu/lib/python3.12/site-packages/torch/cuda/__init__.py", line 403, in _lazy_init
    raise AssertionError("Torch not compiled with CUDA enabled")
AssertionError: Torch not compiled with CUDA enabled
"""

NO_TORCH = """\
Traceback (most recent call last):
  File "/usr/lib/gputray/probe.py", line 251, in run_probe
    import torch
ModuleNotFoundError: No module named 'torch'
"""

HIP_OOM = (
    "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
    "of 4.00 GiB of which 1.21 GiB is free. Of the allocated memory 2.50 GiB is allocated by PyTorch, "
    "and 12.00 MiB is reserved by PyTorch but unallocated."
)

MISSING_CUDART = "OSError: libcudart.so.12: cannot open shared object file: No such file or directory"


def test_sm120_warning_says_cu128() -> None:
    found = explain(SM120_WARNING, vendor="nvidia", env=CUDA_ENV)
    assert found is not None
    assert "sm_120" in found.reason
    assert found.fix is not None
    assert "cu128" in found.fix
    assert str(CUDA_ENV.python) in found.fix  # the command is for this env's interpreter


def test_no_kernel_image_says_cu128() -> None:
    found = explain(NO_KERNEL_IMAGE, vendor="nvidia", arch="12.0", env=CUDA_ENV)
    assert found is not None
    assert "no kernels for sm_120" in found.reason
    assert found.fix is not None and "https://download.pytorch.org/whl/cu128" in found.fix


def test_warning_and_error_together_name_the_architecture() -> None:
    found = explain(NO_KERNEL_IMAGE + SM120_WARNING, vendor="nvidia", env=CUDA_ENV)
    assert found is not None and "sm_120" in found.reason


def test_hip_invalid_device_function_suggests_the_override_for_this_env_only() -> None:
    found = explain(HIP_INVALID_DEVICE_FUNCTION, vendor="amd", arch="gfx1103", env=ROCM_ENV)
    assert found is not None
    assert "gfx1103" in found.reason
    assert found.fix is not None
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in found.fix
    assert "for this env only" in found.fix
    assert f"gputray envs add {ROCM_ENV.python}" in found.fix


def test_hip_invalid_device_function_with_the_override_already_set() -> None:
    found = explain(HIP_INVALID_DEVICE_FUNCTION, vendor="amd", arch="gfx1100", env=ROCM_OVERRIDE_ENV)
    assert found is not None
    assert "even with HSA_OVERRIDE_GFX_VERSION=11.0.0" in found.reason
    assert found.fix is not None and "try HSA_OVERRIDE" not in found.fix


def test_invalid_isa_with_a_wrong_override() -> None:
    found = explain(INVALID_ISA, vendor="amd", arch="gfx1103", env=ROCM_WRONG_OVERRIDE_ENV)
    assert found is not None
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in found.reason
    assert found.fix is not None and "11.0.0" in found.fix


def test_invalid_isa_without_override() -> None:
    found = explain(INVALID_ISA, vendor="amd", arch="gfx1103", env=ROCM_ENV)
    assert found is not None
    assert "invalid ISA" in found.reason
    assert found.fix is not None and "HSA_OVERRIDE_GFX_VERSION=11.0.0" in found.fix


def test_rocblas_without_tensile_library_for_gfx1103() -> None:
    found = explain(ROCBLAS_NO_TENSILE, vendor="amd", env=ROCM_ENV)
    assert found is not None
    assert "gfx1103" in found.reason
    assert found.fix is not None and "HSA_OVERRIDE_GFX_VERSION=11.0.0" in found.fix


def test_no_binary_for_gpu() -> None:
    found = explain(NO_BINARY_FOR_GPU, vendor="amd", arch="gfx1103", env=ROCM_ENV)
    assert found is not None and found.fix is not None
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in found.fix


def test_override_for_other_rdna2_parts() -> None:
    found = explain(HIP_INVALID_DEVICE_FUNCTION, vendor="amd", arch="gfx1035", env=ROCM_ENV)
    assert found is not None and found.fix is not None
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in found.fix


def test_unknown_gfx_gets_no_override_guess() -> None:
    found = explain(HIP_INVALID_DEVICE_FUNCTION, vendor="amd", arch="gfx1201", env=ROCM_ENV)
    assert found is not None and found.fix is not None
    assert "HSA_OVERRIDE" not in found.fix
    assert "gfx1201" in found.fix


def test_driver_too_old() -> None:
    found = explain(DRIVER_TOO_OLD, vendor="nvidia", env=CUDA_ENV, cuda_version="12.8")
    assert found is not None
    assert "driver is too old" in found.reason
    assert "CUDA 12.8" in found.reason
    assert "CUDA 12.4" in found.reason  # found version 12040
    assert found.fix is not None and "570" in found.fix


def test_cpu_only_build_on_nvidia_and_on_amd() -> None:
    nvidia = explain(NOT_COMPILED_WITH_CUDA, vendor="nvidia", env=CUDA_ENV)
    amd = explain(NOT_COMPILED_WITH_CUDA, vendor="amd", env=ROCM_ENV)
    assert nvidia is not None and amd is not None
    assert nvidia.reason == amd.reason == "this env has a CPU-only build of torch"
    assert nvidia.fix is not None and "cu128" in nvidia.fix
    assert amd.fix is not None and "ROCm" in amd.fix


def test_torch_not_installed() -> None:
    found = explain(NO_TORCH, env=CUDA_ENV)
    assert found is not None
    assert found.reason == "torch is not installed in this env"
    assert found.fix is not None and found.fix.startswith(f"{CUDA_ENV.python} -m pip install torch")
    # a path with a space is quoted, so the fix pastes into a shell as it is
    spaced = explain(NO_TORCH, env=PythonEnv("plain", Path("/tmp/plain env/bin/python")))
    assert spaced is not None and spaced.fix is not None
    quoted = '"/tmp/plain env/bin/python"' if sys.platform == "win32" else "'/tmp/plain env/bin/python'"
    assert spaced.fix.startswith(f"{quoted} -m pip install torch"), spaced.fix


def test_a_missing_torch_submodule_is_not_a_missing_torch() -> None:
    found = explain("ModuleNotFoundError: No module named 'torch._C'")
    assert found is None or found.reason != "torch is not installed in this env"


def test_out_of_memory() -> None:
    found = explain(HIP_OOM, vendor="amd")
    assert found is not None and "out of memory" in found.reason


def test_missing_cuda_library() -> None:
    found = explain(MISSING_CUDART, env=CUDA_ENV)
    assert found is not None
    assert "libcudart.so.12" in found.reason
    assert found.fix is not None and "--force-reinstall" in found.fix


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Traceback (most recent call last):\n  File x\nValueError: something odd\n",
            "ValueError: something odd",
        ),
        (
            "RuntimeError: CUDA error: unspecified launch failure\nmore text",
            "RuntimeError: CUDA error: unspecified",
        ),
        ("", "unknown error"),
    ],
)
def test_unknown_texts_keep_their_own_words(text: str, expected: str) -> None:
    assert explain(text) is None
    assert diagnose(text).reason.startswith(expected)
    assert diagnose(text).fix is None
