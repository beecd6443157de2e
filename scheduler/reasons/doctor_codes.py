"""What the doctor finds, as data: why an env works, is limited or fails on a device (a ``Finding``) and
what to do about it (a ``Fix``), each a typed code with its facts, made where the diagnosis is made
(``pyenvs/doctor_messages.py``, ``pyenvs/doctor.py``, ``pyenvs/selection_learning.py``) and worded by
the same catalogues as every reason (``reasons/en/doctor.py``, ``reasons/ja/doctor.py``): ``gputray
doctor`` in English (``--json`` gives the code, its arguments and the words), the tray's doctor table
in the language it shows, and a torch task that waits because no env works there (``NoEnvWorks``).

Arguments are facts (an arch, a CUDA version, an interpreter's path, a command to paste): never words.
The words of others (torch's own error line, a probe's message) are kept as they are written.
"""

from __future__ import annotations

from typing import Literal

from gputray.scheduler.reasons.base import Code

#: The pip command that installs a CUDA 12.8 build of torch (RTX 50-series needs one).
CU128_INSTALL = "pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu128"
#: Where ROCm builds of torch are listed.
ROCM_INDEX_PAGE = "https://pytorch.org/get-started/locally/"

# -- findings: how an env did on a device -------------------------------------------------------------


class Passed(Code, frozen=True):
    """A real op ran; ``benched``: every bench item passed too (else none was run)."""

    benched: bool


class RanUnder(Code, frozen=True):
    """A real op ran with the job's device selection ``selection`` (not benchmarked)."""

    selection: str


class WorksBut(Code, frozen=True):
    """A real op ran, but the bench items ``failed`` did not (``why``: the first one's finding)."""

    failed: tuple[str, ...]
    why: Finding


class BasicOpFailed(Code, frozen=True):
    """The basic op did not run, and said nothing."""


class OtherVendorBuild(Code, frozen=True):
    """The env's torch is built for the other vendor's GPUs (``build`` ``cuda``: CUDA ``version``)."""

    build: Literal["cuda", "rocm"]
    version: str


class GpuNotSeen(Code, frozen=True):
    """Torch in the env does not see a GPU the monitor knows."""


class ProbeHung(Code, frozen=True):
    on_device: bool  # it hung on this device (else before it reached any)
    after_s: float


class InterpreterGone(Code, frozen=True):
    python: str


class ProbeFailed(Code, frozen=True):
    """The probe could not run or answered nothing usable: its runner's words (``probe_runner``)."""

    message: str


class WhileProbing(Code, frozen=True):
    """``why``, read from a probe that crashed (``during``: what the runner said of the crash)."""

    why: Finding
    during: str


class NoKernelsCuda(Code, frozen=True):
    """The torch build has no kernels for ``sm`` (``sm_120``; None: this GPU)."""

    sm: str | None
    blackwell: bool  # RTX 50-series / Blackwell: CUDA 12.8+ needed


class NoKernelsRocm(Code, frozen=True):
    """The ROCm build has no kernels for ``arch`` (None: this GPU), as ``seen`` showed it; ``override``:
    the HSA_OVERRIDE_GFX_VERSION already set in the env."""

    seen: Literal["invalid_isa", "invalid_device_function", "no_code_object"]
    arch: str | None
    override: str | None = None


class OverrideMisfits(Code, frozen=True):
    """The ROCm runtime rejected the GPU code under HSA_OVERRIDE_GFX_VERSION=``value``."""

    value: str


class DriverTooOld(Code, frozen=True):
    cuda: str | None  # the torch build's CUDA
    supported: str | None  # the newest CUDA the driver supports


class NoNvidiaDriver(Code, frozen=True):
    pass


class CpuOnlyTorch(Code, frozen=True):
    pass


class NoTorch(Code, frozen=True):
    pass


class OutOfMemoryInProbe(Code, frozen=True):
    pass


class WrongResults(Code, frozen=True):
    pass


class TorchBroken(Code, frozen=True):
    lib: str  # the shared library that is missing


class ErrorLine(Code, frozen=True):
    """An error the doctor does not know: its own line, as torch (or the runtime) wrote it."""

    text: str


class WrongDevice(Code, frozen=True):
    """With the job's selection ``selection`` torch lands on another device (``sight``: what it saw)."""

    selection: str
    sight: str


class KernelFailsUnder(Code, frozen=True):
    selection: str
    error: str


class Written(Code, frozen=True):
    """A finding or a fix as an earlier gputray wrote it in its cache (English), shown as written."""

    text: str


class CheckRaised(Code, frozen=True):
    """The queue's own check of an env raised ``error`` (it is logged too)."""

    error: str


Finding = (
    Passed
    | RanUnder
    | WorksBut
    | BasicOpFailed
    | OtherVendorBuild
    | GpuNotSeen
    | ProbeHung
    | InterpreterGone
    | ProbeFailed
    | WhileProbing
    | NoKernelsCuda
    | NoKernelsRocm
    | OverrideMisfits
    | DriverTooOld
    | NoNvidiaDriver
    | CpuOnlyTorch
    | NoTorch
    | OutOfMemoryInProbe
    | WrongResults
    | TorchBroken
    | ErrorLine
    | WrongDevice
    | KernelFailsUnder
    | CheckRaised
    | Written
)

# -- fixes: what to do about it -----------------------------------------------------------------------


class InstallCu128(Code, frozen=True):
    """Install a cu128+ wheel in the env (``python``: its interpreter, as a shell takes it)."""

    python: str
    say_why: bool = True  # "install a cu128+ wheel in this env: …" (False: the command alone)


class UseCu128Env(Code, frozen=True):
    pass


class UseRocmEnv(Code, frozen=True):
    pass


class InstallRocm(Code, frozen=True):
    """Install a ROCm build of torch (that supports ``arch``; None: in this env)."""

    arch: str | None = None


class RocmWithArch(Code, frozen=True):
    arch: str | None  # None: this GPU


class TryOverride(Code, frozen=True):
    """Try HSA_OVERRIDE_GFX_VERSION=``value`` for this env only, with ``command``."""

    value: str
    command: str


class UseGfx1103Override(Code, frozen=True):
    pass


class CheckVisibleDevices(Code, frozen=True):
    pass


class ChangeOverride(Code, frozen=True):
    value: str


class RemoveOverride(Code, frozen=True):
    value: str


class RefreshWhenIdle(Code, frozen=True):
    pass


class ReAddEnv(Code, frozen=True):
    name: str
    real_python: bool  # the path is no Python (else it is gone)


class CheckInterpreter(Code, frozen=True):
    python: str


class UpdateDriver(Code, frozen=True):
    pass


class InstallDriver(Code, frozen=True):
    pass


class InstallTorch(Code, frozen=True):
    python: str


class FreeGpuMemory(Code, frozen=True):
    pass


class ReinstallTorch(Code, frozen=True):
    python: str


class NoSelectionLands(Code, frozen=True):
    """No selection gputray knows lands on this GPU: each one ``tried`` (its label and what it got)."""

    tried: tuple[str, ...]


Fix = (
    InstallCu128
    | UseCu128Env
    | UseRocmEnv
    | InstallRocm
    | RocmWithArch
    | TryOverride
    | UseGfx1103Override
    | CheckVisibleDevices
    | ChangeOverride
    | RemoveOverride
    | RefreshWhenIdle
    | ReAddEnv
    | CheckInterpreter
    | UpdateDriver
    | InstallDriver
    | InstallTorch
    | FreeGpuMemory
    | ReinstallTorch
    | NoSelectionLands
    | Written
)


# -- what a doctor run says as it goes (``gputray doctor``'s stderr, the tray's doctor tab) ------------


class ProbingEnv(Code, frozen=True):
    env: str
    python: str


class PairProbed(Code, frozen=True):
    """One env on one device, done: its verdict, how long the probe took there, whether it came from the
    cache, the bench figures that passed, and for a failure what the doctor found."""

    env: str
    device: str
    verdict: Literal["works", "limited", "fails"]
    took_s: float | None = None
    cached: bool = False
    figures: tuple[str, ...] = ()
    why: Finding | None = None


class PairSelected(Code, frozen=True):
    """How a job of ``env`` is pointed at ``device``, and what torch saw (``PairResult.selected_by``)."""

    env: str
    device: str
    selected_by: str


DoctorNews = ProbingEnv | PairProbed | PairSelected


def doctor_codes() -> tuple[type[Code], ...]:
    """Every kind of finding, fix and progress line (what each language must render)."""
    return tuple(dict.fromkeys((*Finding.__args__, *Fix.__args__, *DoctorNews.__args__)))
