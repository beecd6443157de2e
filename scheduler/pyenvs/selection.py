"""How a job's torch is pointed at one GPU, and whether what torch then sees is that GPU.

A ``Selection`` is what gputray sets for a job (``CUDA_VISIBLE_DEVICES=<uuid>``,
``HIP_VISIBLE_DEVICES=0`` …, the HSA override, and ``GPUTRAY_TORCH_DEVICE``, the torch device the job
uses). Which selection works is a fact of each build and OS, not of the vendor (issue 23: Windows has no
ROCr, TheRock's wheels number the iGPU differently, some builds ignore the variables), so
``candidates`` lists the ones worth trying in order and the doctor keeps the first whose read-back
(``SeenDevice``: what ``torch.cuda.get_device_properties`` says of the selected device) matches the
target (``match_seen``: PCI address first, then UUID, then name + memory).

Pure: no process is run here (``selection_learning`` runs the probes). docs/doctor.md, "Selected by".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from gputray.monitor.records import DeviceInfo
from gputray.monitor.sysfs import normalize_bdf

#: Variables that decide which GPU a job's libraries see; gputray has the last word on them.
GPU_SELECTION_VARS = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
)
#: The torch device a job should use (``torch.device(os.environ["GPUTRAY_TORCH_DEVICE"])``).
TORCH_DEVICE_VAR = "GPUTRAY_TORCH_DEVICE"
HSA_OVERRIDE_VAR = "HSA_OVERRIDE_GFX_VERSION"

SelectionStatus = Literal["proven", "wrong-device", "unprovable"]
Build = Literal["cuda", "rocm", "cpu"]


def _frozen(mapping: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(sorted(dict(mapping).items())))


@dataclass(frozen=True)
class Selection:
    """What a job on one device gets: ``variables`` set, ``unset`` removed (an env's own HSA override
    the read-back showed wrong), and the torch device it is told to use."""

    variables: Mapping[str, str] = field(default_factory=dict, hash=False)
    unset: tuple[str, ...] = ()
    torch_device: str = "cuda:0"

    def __post_init__(self) -> None:
        object.__setattr__(self, "variables", _frozen(self.variables))
        object.__setattr__(self, "unset", tuple(self.unset))

    def label(self) -> str:
        """``HIP_VISIBLE_DEVICES=0``; ``torch.device('cuda:1')`` when no variable selects; ``—`` for none."""
        shown = [f"{k}={v}" for k, v in self.variables.items() if k != "CUDA_DEVICE_ORDER"]
        shown += [f"{k} unset" for k in self.unset]
        if self.torch_device not in ("cuda:0", "cpu") or (not shown and self.torch_device != "cpu"):
            shown.append(f"{TORCH_DEVICE_VAR}={self.torch_device}")
        return " ".join(shown) or "—"

    def apply(self, env: dict[str, str]) -> None:
        """Put this selection into a job's environment (its selection variables already removed)."""
        for name in self.unset:
            env.pop(name, None)
        env.update(self.variables)
        env[TORCH_DEVICE_VAR] = self.torch_device

    def with_override(self, override: Override) -> Selection:
        return Selection(
            {**self.variables, **override.variables}, (*self.unset, *override.unset), self.torch_device
        )


CPU_SELECTION = Selection({}, (), "cpu")
STATUS_MARKS: Mapping[str, str] = {"proven": "✓", "wrong-device": "✗", "unprovable": "?"}


def selected_by(selection: Selection | None, status: SelectionStatus | None, seen_name: str | None) -> str:
    """``HIP_VISIBLE_DEVICES=0 ✓ Radeon 780M``: the selection, its verdict, and the name of what torch saw
    (``doctor``'s SELECTED BY column, the lines under each GPU in ``devices``); ``—`` when none."""
    if selection is None:
        return "—"
    return f"{selection.label()} {STATUS_MARKS.get(status or '', '?')} {seen_name or 'nothing'}"


@dataclass(frozen=True)
class Override:
    """One HSA override variant to try: variables set and removed on top of the env's own."""

    variables: Mapping[str, str] = field(default_factory=dict, hash=False)
    unset: tuple[str, ...] = ()
    why: str = "as the env sets it"

    def __post_init__(self) -> None:
        object.__setattr__(self, "variables", _frozen(self.variables))


@dataclass(frozen=True)
class SeenDevice:
    """What torch reported for the device a selection gave the job (``torch_device``), and how many
    devices it saw in all. Fields the build does not have are None."""

    torch_device: str
    name: str | None = None
    pci_bus_id: int | None = None
    pci_device_id: int | None = None
    pci_domain_id: int | None = None
    uuid: str | None = None
    gcn_arch_name: str | None = None
    total_memory_bytes: int | None = None
    device_count: int | None = None

    def pci_address(self) -> str | None:
        """``0000:01:00.0`` when torch gave a bus or device number, else None."""
        bus, dev = self.pci_bus_id, self.pci_device_id
        if bus is None or dev is None or not (bus or dev):
            return None
        return f"{self.pci_domain_id or 0:04x}:{self.pci_bus_id:02x}:{self.pci_device_id:02x}.0"

    def describe(self) -> str:
        parts = [self.name or "a device with no name"]
        if self.pci_address():
            parts.append(f"at {self.pci_address()}")
        if self.gcn_arch_name:
            parts.append(f"({self.gcn_arch_name})")
        return " ".join(parts)


CPU_SEEN = SeenDevice("cpu", name="cpu")


@dataclass(frozen=True)
class SelectionVerdict:
    """Whether a read-back is the target: ``proven`` (``by`` says how), ``wrong-device`` (``reason`` says
    what it got) or ``unprovable`` (torch gave nothing that tells the GPUs apart)."""

    status: SelectionStatus
    reason: str
    by: str | None = None


# ---------------------------------------------------------------------------------------------------
# Matching a read-back against the target.


def _hex(text: str | None) -> str:
    if not text:
        return ""
    text = text.strip().lower().removeprefix("gpu-").removeprefix("mig-")
    return re.sub(r"[^0-9a-f]", "", text)


_NAME_NOISE = re.compile(r"\b(amd|nvidia|geforce|radeon|graphics|\(tm\)|\(r\)|gpu)\b")


def _name_words(name: str | None) -> str:
    return " ".join(_NAME_NOISE.sub(" ", (name or "").lower()).split())


def _same_name(seen: str | None, info: DeviceInfo) -> bool:
    a, b = _name_words(seen), _name_words(info.name)
    return bool(a and b) and (a in b or b in a)


def _memory_fits(seen: SeenDevice, info: DeviceInfo) -> bool:
    """Torch's total memory is the device's VRAM, a little less, or for an iGPU its carve-out plus GTT:
    only a difference of more than half rules a device out."""
    totals = [t for t in (info.vram_total_bytes, info.shared_total_bytes) if t]
    if not seen.total_memory_bytes or not totals:
        return True
    return any(0.5 <= seen.total_memory_bytes / t <= 2.0 for t in totals)


def _bdf_of(info: DeviceInfo) -> str | None:
    if info.pci_bdf:
        return normalize_bdf(info.pci_bdf)
    if info.key.startswith("pci:"):
        return normalize_bdf(info.key[4:])
    return None


def match_seen(seen: SeenDevice | None, target: DeviceInfo, known: Sequence[DeviceInfo]) -> SelectionVerdict:
    """PCI address first, then UUID, then name + memory (only when no other GPU would match as well)."""
    if seen is None:
        return SelectionVerdict("wrong-device", "torch saw no device with this selection")
    others = [d for d in known if d.key != target.key and d.kind != "cpu"]
    got = seen.describe()
    address, want_address = seen.pci_address(), _bdf_of(target)
    if address and want_address:
        if address == want_address:
            return SelectionVerdict("proven", f"torch sees {got}", by="PCI address")
        return SelectionVerdict("wrong-device", f"torch sees {got}, not {target.name} at {want_address}")
    uuid, want_uuid = _hex(seen.uuid), _hex(target.uuid)
    if uuid.strip("0") and want_uuid:
        if uuid == want_uuid:
            return SelectionVerdict("proven", f"torch sees {got} (UUID {seen.uuid})", by="UUID")
        if any(_hex(d.uuid) == uuid for d in others) or len(uuid) == len(want_uuid):
            return SelectionVerdict("wrong-device", f"torch sees {got} (UUID {seen.uuid}), not {target.name}")
    if _same_name(seen.name, target) and _memory_fits(seen, target):
        if any(_same_name(seen.name, d) and _memory_fits(seen, d) for d in others):
            return SelectionVerdict(
                "unprovable", f"torch sees {got}; another GPU here has the same name and memory"
            )
        return SelectionVerdict("proven", f"torch sees {got}", by="name + memory")
    if any(_same_name(seen.name, d) for d in others):
        return SelectionVerdict("wrong-device", f"torch sees {got}, not {target.name}")
    return SelectionVerdict(
        "unprovable", f"torch sees {got}: no PCI address, UUID or name tells it is {target.name}"
    )


# ---------------------------------------------------------------------------------------------------
# What to try.


def build_of(cuda_version: str | None, hip_version: str | None) -> Build:
    if hip_version:
        return "rocm"
    if cuda_version:
        return "cuda"
    return "cpu"


def serves(build: Build, info: DeviceInfo) -> bool:
    """Whether a build can drive this GPU at all (a CUDA build counts NVIDIA GPUs only, ROCm AMD ones)."""
    return (build == "cuda" and info.vendor == "nvidia") or (build == "rocm" and info.vendor == "amd")


def is_windows(platform: str | None) -> bool:
    return (platform or "").startswith(("win", "cygwin"))


def rocr_index(target: DeviceInfo, known: Sequence[DeviceInfo], rocm_index: int | None) -> int:
    """The runtime's index of an AMD GPU: KFD's when known, else its rank among AMD GPUs (PCI order)."""
    return rocm_index if rocm_index is not None else _rank(target, known)[0]


def _rank(info: DeviceInfo, known: Sequence[DeviceInfo]) -> list[int]:
    """The target's index among its vendor's GPUs first (PCI order), then every other index."""
    same = sorted({d.key for d in known if d.vendor == info.vendor and d.kind != "cpu"} | {info.key})
    first = same.index(info.key)
    return [first, *(i for i in range(len(same)) if i != first)]


def candidates(
    target: DeviceInfo,
    known: Sequence[DeviceInfo],
    *,
    build: Build,
    platform: str | None,
    rocm_index: int | None = None,
) -> list[Selection]:
    """The selections to try for ``target`` in an env of ``build`` on ``platform`` (``sys.platform`` of
    the env's interpreter), best first. Indexes the runtime may number differently are all tried: the
    read-back decides, not the order."""
    if not serves(build, target):
        return []
    indexes = _rank(target, known)
    out: list[Selection] = []
    if build == "cuda":
        if target.uuid:
            out.append(Selection({"CUDA_VISIBLE_DEVICES": target.uuid}))
        first = target.nvml_index if target.nvml_index is not None else indexes[0]
        order = [first, *(i for i in indexes if i != first)]
        out += [Selection({"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": str(i)}) for i in order]
        out += [Selection({"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, (), f"cuda:{i}") for i in order]
        return out
    if rocm_index is not None and rocm_index in indexes:
        indexes = [rocm_index, *(i for i in indexes if i != rocm_index)]
    if is_windows(platform):  # no ROCr runtime: ROCR_VISIBLE_DEVICES does nothing there
        out += [Selection({"HIP_VISIBLE_DEVICES": str(i)}) for i in indexes]
        out += [Selection({"CUDA_VISIBLE_DEVICES": str(i)}) for i in indexes]
    else:
        out += [Selection({"ROCR_VISIBLE_DEVICES": str(i)}) for i in indexes]
        out += [Selection({"HIP_VISIBLE_DEVICES": str(i)}) for i in indexes]
    out += [Selection({}, (), f"cuda:{i}") for i in indexes]
    return out


def family_override(gfx_target: str | None) -> str | None:
    """``gfx1103`` → ``11.0.0`` (its family's first member, whose kernels the runtime then loads); None
    when the target is already a family's first member or unknown."""
    m = re.fullmatch(r"gfx(\d+)([0-9a-f])([0-9a-f])", (gfx_target or "").lower())
    if m is None or (m.group(2) == "0" and m.group(3) == "0"):
        return None
    major, minor = int(m.group(1)), int(m.group(2), 16)
    if m.group(3) == "0":
        return None
    return f"{major}.{minor}.0"


def override_variants(
    target: DeviceInfo, env_extra: Mapping[str, str], *, build: Build, platform: str | None, node: int
) -> list[Override]:
    """The HSA override variants for an AMD GPU on Linux: as the env sets it, none, the family value, the
    per-GPU form ``HSA_OVERRIDE_GFX_VERSION_<node>`` (ROCT-Thunk-Interface#104: ``<node>`` is the GPU's
    KFD topology node number, CPU nodes included). Elsewhere: as it is (no thunk reads it on Windows)."""
    variants = [Override()]
    family = family_override(target.gfx_target)
    if build != "rocm" or is_windows(platform) or family is None:
        return variants
    own = {k for k in env_extra if k.startswith(HSA_OVERRIDE_VAR)}
    if own:
        variants.append(Override({}, tuple(sorted(own)), "without the env's override"))
    if env_extra.get(HSA_OVERRIDE_VAR) != family:
        variants.append(Override({HSA_OVERRIDE_VAR: family}, (), f"the {target.gfx_target} family value"))
    per_gpu = f"{HSA_OVERRIDE_VAR}_{node}"
    if env_extra.get(per_gpu) != family:
        others = tuple(sorted(own - {per_gpu}))
        variants.append(Override({per_gpu: family}, others, "the per-GPU form"))
    return variants
