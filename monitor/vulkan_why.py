"""Why the Vulkan enumeration gave no device list, and why a Vulkan device is not one of the GPUs, as data:
one Struct per case, its facts typed.

Made where it is found: inside the worker (``vulkan_loader``: no loader, a call that failed), by the
parent that runs it (``vulkan.enumerate_devices``: the worker could not start, hung, died, said nothing
readable) and by the mapping (``device_map``: a software renderer, a second driver). The worker hands its
code to the parent in its JSON. The monitor words none of them: the scheduler's reason catalogues do
(``reasons/en/monitor.py``, ``reasons/ja/monitor.py``), for ``gputray devices`` in English and anyone
who shows them in Japanese. What a driver or the OS says (a ``dlopen`` error, the worker's last stderr
lines, a JSON parser's complaint) rides in a field and is shown as written.
"""

from __future__ import annotations

from typing import Literal

from gputray.monitor.busy_why import Why

# -- inside the worker: the loader and its calls ---------------------------------------------------


class NoLoader(Why, frozen=True):
    """No Vulkan loader library could be loaded; ``tried``: each name with the OS's words for it."""

    tried: tuple[str, ...]


class LoaderLacks(Why, frozen=True):
    """The loader library has no ``entry`` (``physical-device``: one of the physical-device entry points)."""

    entry: Literal["vkGetInstanceProcAddr", "vkCreateInstance", "physical-device"]


class OldLoader(Why, frozen=True):
    """The loader is Vulkan 1.0 without VK_KHR_get_physical_device_properties2."""


class CallFailed(Why, frozen=True):
    """A Vulkan call failed with ``result`` (its VkResult name); ``no_driver``: the result says no driver
    (ICD) was found."""

    call: str
    result: str
    no_driver: bool = False


# -- the parent: running the worker ----------------------------------------------------------------


class WorkerNotStarted(Why, frozen=True):
    """The worker could not be started: ``program``, the OS's words in ``error``."""

    program: str
    error: str


class WorkerHung(Why, frozen=True):
    """The worker gave no answer within ``timeout_s`` and was killed with what it started."""

    timeout_s: float


class WorkerDied(Why, frozen=True):
    """The worker was killed by ``signal`` or exited with ``status``; ``stderr``: its last lines."""

    signal: int | None = None
    status: int | None = None
    stderr: tuple[str, ...] = ()


class NoResult(Why, frozen=True):
    """The worker exited without printing its result; ``list_mode``: ``MESA_VK_DEVICE_SELECT=list`` was
    set, which makes Mesa's device-select layer list devices and exit."""

    list_mode: bool = False
    stderr: tuple[str, ...] = ()


class UnreadableResult(Why, frozen=True):
    """The worker printed something that is not its result; ``error``: the JSON reader's words."""

    error: str
    stderr: tuple[str, ...] = ()


class NotEnumerated(Why, frozen=True):
    """Not enumerated: the demo shows simulated GPUs (``gputray devices --demo``)."""


VulkanWhy = (
    NoLoader | LoaderLacks | OldLoader | CallFailed | WorkerNotStarted | WorkerHung | WorkerDied | NoResult
    | UnreadableResult | NotEnumerated
)  # fmt: skip

# -- the mapping: why a Vulkan device is not (only) one of the GPUs --------------------------------


class BacksSimulated(Why, frozen=True):
    """It backs the simulated ``device`` (the demo scenario's ``[[vulkan]]``)."""

    device: str


class SoftwareRenderer(Why, frozen=True):
    """A software renderer on the CPU (lavapipe, llvmpipe), not a GPU."""


class NoMatch(Why, frozen=True):
    """No PCI address, and its UUID matches no known GPU; ``no_gpus``: there was no GPU list to match."""

    no_gpus: bool = False


class SecondDriver(Why, frozen=True):
    """The same GPU as Vulkan device ``first_index`` (driven by ``first_driver``): a second driver,
    ``driver``, for it."""

    first_index: int
    first_driver: str
    driver: str


MappingWhy = BacksSimulated | SoftwareRenderer | NoMatch | SecondDriver


def vulkan_codes() -> tuple[type[Why], ...]:
    """Every Vulkan reason (what each language must render)."""
    return (*VulkanWhy.__args__, *MappingWhy.__args__)
