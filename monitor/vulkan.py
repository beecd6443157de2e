"""Vulkan physical devices as the Vulkan loader itself enumerates them, read through ctypes (no SDK).

Two layers: :func:`enumerate_in_process` talks to ``libvulkan.so.1`` / ``vulkan-1.dll`` directly and is
only ever called inside the ``gputray.monitor.vulkan_enum`` worker process, because a broken ICD can
crash or hang whoever loads it; :func:`enumerate_devices` runs that worker with a job's environment
(Mesa's device-select layer, ``MESA_VK_DEVICE_SELECT`` and ``DRI_PRIME`` reorder devices, so an index
is only meaningful for the environment it was computed in) and a timeout, and never raises.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from gputray.monitor.interpreter import module_command
from gputray.monitor.process_group import kill_group, popen_own_group

VulkanDeviceType = Literal["integrated", "discrete", "virtual", "cpu", "other"]

LOADER_ENV = "GPUTRAY_VULKAN_LOADER"
"""Environment variable naming the Vulkan loader library to use instead of the system one."""

WORKER_MODULE = "gputray.monitor.vulkan_enum"

NVIDIA_VENDOR_ID = 0x10DE
AMD_VENDOR_ID = 0x1002
INTEL_VENDOR_ID = 0x8086

_DEVICE_TYPES: dict[int, VulkanDeviceType] = {
    0: "other",
    1: "integrated",
    2: "discrete",
    3: "virtual",
    4: "cpu",
}
# VkDriverId values worth naming when the driver leaves driverName empty.
DRIVER_IDS: dict[int, str] = {
    1: "amdvlk",
    2: "amd-proprietary",
    3: "radv",
    4: "nvidia",
    5: "intel-proprietary",
    6: "anv",
    10: "llvmpipe",
    13: "lavapipe",
    14: "moltenvk",
    24: "nvk",
}


@dataclass(frozen=True)
class VulkanDevice:
    """One entry of ``vkEnumeratePhysicalDevices``; ``index`` is its position in that order.

    ``uuid`` is ``deviceUUID`` as lower-case 8-4-4-4-12 hex; for NVIDIA it equals NVML's and CUDA's
    UUID without the ``GPU-`` prefix (see :attr:`nvidia_uuid`). ``luid`` is the Windows adapter LUID
    (``0x00000000_0x0000D1B5``, as PDH spells it) when the driver reports a valid one.
    """

    index: int
    name: str
    device_type: VulkanDeviceType
    vendor_id: int
    device_id: int
    uuid: str | None = None
    driver_name: str | None = None
    pci_bdf: str | None = None
    driver_id: int | None = None
    driver_info: str | None = None
    api_version: str | None = None
    luid: str | None = None

    @property
    def nvidia_uuid(self) -> str | None:
        """The UUID spelled like NVML / ``nvidia-smi -L`` / ``CUDA_VISIBLE_DEVICES``: ``GPU-xxxxxxxx-…``."""
        return None if self.uuid is None else f"GPU-{self.uuid}"


@dataclass(frozen=True)
class VulkanEnumeration:
    """What one enumeration found. ``reason`` says in words why Vulkan is not available (then no devices)."""

    devices: tuple[VulkanDevice, ...] = ()
    reason: str | None = None
    instance_version: str | None = None

    @property
    def available(self) -> bool:
        return self.reason is None


def format_uuid(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def parse_uuid(text: str) -> bytes | None:
    """``GPU-6d657361-…``, ``6d657361-…`` or 32 bare hex digits → 16 bytes; None if not a UUID."""
    t = text.strip().lower()
    for prefix in ("gpu-", "mig-"):
        if t.startswith(prefix):
            t = t[len(prefix) :]
    t = t.replace("-", "")
    if len(t) != 32:
        return None
    try:
        return bytes.fromhex(t)
    except ValueError:
        return None


def format_luid(high: int, low: int) -> str:
    """A Windows LUID as PDH instance names spell it: ``0x00000000_0x0000D1B5`` (HighPart, LowPart)."""
    return f"0x{high & 0xFFFFFFFF:08X}_0x{low & 0xFFFFFFFF:08X}"


def version_string(packed: int) -> str:
    """A ``VK_MAKE_API_VERSION`` value as ``1.3.239``."""
    return f"{(packed >> 22) & 0x7F}.{(packed >> 12) & 0x3FF}.{packed & 0xFFF}"


# --------------------------------------------------------------------------------------------------
# ctypes layouts, checked against vulkan_core.h 1.3.239 on x86-64: sizeof(VkPhysicalDeviceLimits) = 504,
# sizeof(VkPhysicalDeviceProperties) = 824, sizeof(VkPhysicalDeviceProperties2) = 840,
# VkPhysicalDeviceIDProperties = 64, VkPhysicalDevicePCIBusInfoPropertiesEXT = 32,
# VkPhysicalDeviceDriverProperties = 536 (tests assert these sizes).

_u32 = ctypes.c_uint32
_i32 = ctypes.c_int32
_f32 = ctypes.c_float
_u64 = ctypes.c_uint64
_size = ctypes.c_size_t
_u8 = ctypes.c_uint8

VK_SUCCESS = 0
VK_INCOMPLETE = 5
VK_UUID_SIZE = 16
VK_LUID_SIZE = 8
VK_MAX_PHYSICAL_DEVICE_NAME_SIZE = 256
VK_MAX_EXTENSION_NAME_SIZE = 256
VK_MAX_DRIVER_NAME_SIZE = 256
VK_MAX_DRIVER_INFO_SIZE = 256

VK_STRUCTURE_TYPE_APPLICATION_INFO = 0
VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO = 1
VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2 = 1000059001
VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES = 1000071004
VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES = 1000196000
VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT = 1000212000

VK_RESULTS: dict[int, str] = {
    0: "VK_SUCCESS",
    5: "VK_INCOMPLETE",
    -1: "VK_ERROR_OUT_OF_HOST_MEMORY",
    -2: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
    -3: "VK_ERROR_INITIALIZATION_FAILED",
    -4: "VK_ERROR_DEVICE_LOST",
    -6: "VK_ERROR_LAYER_NOT_PRESENT",
    -7: "VK_ERROR_EXTENSION_NOT_PRESENT",
    -9: "VK_ERROR_INCOMPATIBLE_DRIVER",
}


class VkPhysicalDeviceLimits(ctypes.Structure):
    _fields_ = [
        ("maxImageDimension1D", _u32),
        ("maxImageDimension2D", _u32),
        ("maxImageDimension3D", _u32),
        ("maxImageDimensionCube", _u32),
        ("maxImageArrayLayers", _u32),
        ("maxTexelBufferElements", _u32),
        ("maxUniformBufferRange", _u32),
        ("maxStorageBufferRange", _u32),
        ("maxPushConstantsSize", _u32),
        ("maxMemoryAllocationCount", _u32),
        ("maxSamplerAllocationCount", _u32),
        ("bufferImageGranularity", _u64),
        ("sparseAddressSpaceSize", _u64),
        ("maxBoundDescriptorSets", _u32),
        ("maxPerStageDescriptorSamplers", _u32),
        ("maxPerStageDescriptorUniformBuffers", _u32),
        ("maxPerStageDescriptorStorageBuffers", _u32),
        ("maxPerStageDescriptorSampledImages", _u32),
        ("maxPerStageDescriptorStorageImages", _u32),
        ("maxPerStageDescriptorInputAttachments", _u32),
        ("maxPerStageResources", _u32),
        ("maxDescriptorSetSamplers", _u32),
        ("maxDescriptorSetUniformBuffers", _u32),
        ("maxDescriptorSetUniformBuffersDynamic", _u32),
        ("maxDescriptorSetStorageBuffers", _u32),
        ("maxDescriptorSetStorageBuffersDynamic", _u32),
        ("maxDescriptorSetSampledImages", _u32),
        ("maxDescriptorSetStorageImages", _u32),
        ("maxDescriptorSetInputAttachments", _u32),
        ("maxVertexInputAttributes", _u32),
        ("maxVertexInputBindings", _u32),
        ("maxVertexInputAttributeOffset", _u32),
        ("maxVertexInputBindingStride", _u32),
        ("maxVertexOutputComponents", _u32),
        ("maxTessellationGenerationLevel", _u32),
        ("maxTessellationPatchSize", _u32),
        ("maxTessellationControlPerVertexInputComponents", _u32),
        ("maxTessellationControlPerVertexOutputComponents", _u32),
        ("maxTessellationControlPerPatchOutputComponents", _u32),
        ("maxTessellationControlTotalOutputComponents", _u32),
        ("maxTessellationEvaluationInputComponents", _u32),
        ("maxTessellationEvaluationOutputComponents", _u32),
        ("maxGeometryShaderInvocations", _u32),
        ("maxGeometryInputComponents", _u32),
        ("maxGeometryOutputComponents", _u32),
        ("maxGeometryOutputVertices", _u32),
        ("maxGeometryTotalOutputComponents", _u32),
        ("maxFragmentInputComponents", _u32),
        ("maxFragmentOutputAttachments", _u32),
        ("maxFragmentDualSrcAttachments", _u32),
        ("maxFragmentCombinedOutputResources", _u32),
        ("maxComputeSharedMemorySize", _u32),
        ("maxComputeWorkGroupCount", _u32 * 3),
        ("maxComputeWorkGroupInvocations", _u32),
        ("maxComputeWorkGroupSize", _u32 * 3),
        ("subPixelPrecisionBits", _u32),
        ("subTexelPrecisionBits", _u32),
        ("mipmapPrecisionBits", _u32),
        ("maxDrawIndexedIndexValue", _u32),
        ("maxDrawIndirectCount", _u32),
        ("maxSamplerLodBias", _f32),
        ("maxSamplerAnisotropy", _f32),
        ("maxViewports", _u32),
        ("maxViewportDimensions", _u32 * 2),
        ("viewportBoundsRange", _f32 * 2),
        ("viewportSubPixelBits", _u32),
        ("minMemoryMapAlignment", _size),
        ("minTexelBufferOffsetAlignment", _u64),
        ("minUniformBufferOffsetAlignment", _u64),
        ("minStorageBufferOffsetAlignment", _u64),
        ("minTexelOffset", _i32),
        ("maxTexelOffset", _u32),
        ("minTexelGatherOffset", _i32),
        ("maxTexelGatherOffset", _u32),
        ("minInterpolationOffset", _f32),
        ("maxInterpolationOffset", _f32),
        ("subPixelInterpolationOffsetBits", _u32),
        ("maxFramebufferWidth", _u32),
        ("maxFramebufferHeight", _u32),
        ("maxFramebufferLayers", _u32),
        ("framebufferColorSampleCounts", _u32),
        ("framebufferDepthSampleCounts", _u32),
        ("framebufferStencilSampleCounts", _u32),
        ("framebufferNoAttachmentsSampleCounts", _u32),
        ("maxColorAttachments", _u32),
        ("sampledImageColorSampleCounts", _u32),
        ("sampledImageIntegerSampleCounts", _u32),
        ("sampledImageDepthSampleCounts", _u32),
        ("sampledImageStencilSampleCounts", _u32),
        ("storageImageSampleCounts", _u32),
        ("maxSampleMaskWords", _u32),
        ("timestampComputeAndGraphics", _u32),
        ("timestampPeriod", _f32),
        ("maxClipDistances", _u32),
        ("maxCullDistances", _u32),
        ("maxCombinedClipAndCullDistances", _u32),
        ("discreteQueuePriorities", _u32),
        ("pointSizeRange", _f32 * 2),
        ("lineWidthRange", _f32 * 2),
        ("pointSizeGranularity", _f32),
        ("lineWidthGranularity", _f32),
        ("strictLines", _u32),
        ("standardSampleLocations", _u32),
        ("optimalBufferCopyOffsetAlignment", _u64),
        ("optimalBufferCopyRowPitchAlignment", _u64),
        ("nonCoherentAtomSize", _u64),
    ]


class VkPhysicalDeviceSparseProperties(ctypes.Structure):
    _fields_ = [
        ("residencyStandard2DBlockShape", _u32),
        ("residencyStandard2DMultisampleBlockShape", _u32),
        ("residencyStandard3DBlockShape", _u32),
        ("residencyAlignedMipSize", _u32),
        ("residencyNonResidentStrict", _u32),
    ]


class VkPhysicalDeviceProperties(ctypes.Structure):
    _fields_ = [
        ("apiVersion", _u32),
        ("driverVersion", _u32),
        ("vendorID", _u32),
        ("deviceID", _u32),
        ("deviceType", _i32),
        ("deviceName", ctypes.c_char * VK_MAX_PHYSICAL_DEVICE_NAME_SIZE),
        ("pipelineCacheUUID", _u8 * VK_UUID_SIZE),
        ("limits", VkPhysicalDeviceLimits),
        ("sparseProperties", VkPhysicalDeviceSparseProperties),
    ]


class VkPhysicalDeviceProperties2(ctypes.Structure):
    _fields_ = [
        ("sType", _i32),
        ("pNext", ctypes.c_void_p),
        ("properties", VkPhysicalDeviceProperties),
    ]


class VkPhysicalDeviceIDProperties(ctypes.Structure):
    _fields_ = [
        ("sType", _i32),
        ("pNext", ctypes.c_void_p),
        ("deviceUUID", _u8 * VK_UUID_SIZE),
        ("driverUUID", _u8 * VK_UUID_SIZE),
        ("deviceLUID", _u8 * VK_LUID_SIZE),
        ("deviceNodeMask", _u32),
        ("deviceLUIDValid", _u32),
    ]


class VkPhysicalDevicePCIBusInfoPropertiesEXT(ctypes.Structure):
    _fields_ = [
        ("sType", _i32),
        ("pNext", ctypes.c_void_p),
        ("pciDomain", _u32),
        ("pciBus", _u32),
        ("pciDevice", _u32),
        ("pciFunction", _u32),
    ]


class VkConformanceVersion(ctypes.Structure):
    _fields_ = [("major", _u8), ("minor", _u8), ("subminor", _u8), ("patch", _u8)]


class VkPhysicalDeviceDriverProperties(ctypes.Structure):
    _fields_ = [
        ("sType", _i32),
        ("pNext", ctypes.c_void_p),
        ("driverID", _i32),
        ("driverName", ctypes.c_char * VK_MAX_DRIVER_NAME_SIZE),
        ("driverInfo", ctypes.c_char * VK_MAX_DRIVER_INFO_SIZE),
        ("conformanceVersion", VkConformanceVersion),
    ]


class VkExtensionProperties(ctypes.Structure):
    _fields_ = [("extensionName", ctypes.c_char * VK_MAX_EXTENSION_NAME_SIZE), ("specVersion", _u32)]


class VkApplicationInfo(ctypes.Structure):
    _fields_ = [
        ("sType", _i32),
        ("pNext", ctypes.c_void_p),
        ("pApplicationName", ctypes.c_char_p),
        ("applicationVersion", _u32),
        ("pEngineName", ctypes.c_char_p),
        ("engineVersion", _u32),
        ("apiVersion", _u32),
    ]


class VkInstanceCreateInfo(ctypes.Structure):
    _fields_ = [
        ("sType", _i32),
        ("pNext", ctypes.c_void_p),
        ("flags", _u32),
        ("pApplicationInfo", ctypes.POINTER(VkApplicationInfo)),
        ("enabledLayerCount", _u32),
        ("ppEnabledLayerNames", ctypes.POINTER(ctypes.c_char_p)),
        ("enabledExtensionCount", _u32),
        ("ppEnabledExtensionNames", ctypes.POINTER(ctypes.c_char_p)),
    ]


def _make_version(major: int, minor: int, patch: int = 0) -> int:
    return (major << 22) | (minor << 12) | patch


VK_API_VERSION_1_1 = _make_version(1, 1)
VK_API_VERSION_1_2 = _make_version(1, 2)

# Vulkan commands use the platform calling convention: stdcall on 32-bit Windows, cdecl elsewhere.
_FUNCTYPE: Any = getattr(ctypes, "WINFUNCTYPE", ctypes.CFUNCTYPE)
_Handle = ctypes.c_void_p
_PFN_vkGetInstanceProcAddr = _FUNCTYPE(ctypes.c_void_p, _Handle, ctypes.c_char_p)
_PFN_vkEnumerateInstanceVersion = _FUNCTYPE(_i32, ctypes.POINTER(_u32))
_PFN_vkEnumerateInstanceExtensionProperties = _FUNCTYPE(
    _i32, ctypes.c_char_p, ctypes.POINTER(_u32), ctypes.POINTER(VkExtensionProperties)
)
_PFN_vkCreateInstance = _FUNCTYPE(
    _i32, ctypes.POINTER(VkInstanceCreateInfo), ctypes.c_void_p, ctypes.POINTER(_Handle)
)
_PFN_vkDestroyInstance = _FUNCTYPE(None, _Handle, ctypes.c_void_p)
_PFN_vkEnumeratePhysicalDevices = _FUNCTYPE(_i32, _Handle, ctypes.POINTER(_u32), ctypes.POINTER(_Handle))
_PFN_vkEnumerateDeviceExtensionProperties = _FUNCTYPE(
    _i32, _Handle, ctypes.c_char_p, ctypes.POINTER(_u32), ctypes.POINTER(VkExtensionProperties)
)
_PFN_vkGetPhysicalDeviceProperties2 = _FUNCTYPE(None, _Handle, ctypes.POINTER(VkPhysicalDeviceProperties2))


class VulkanError(Exception):
    """Raised inside the worker; its message becomes the enumeration's ``reason``."""


def _loader_candidates(env: Mapping[str, str]) -> list[str]:
    explicit = env.get(LOADER_ENV)
    if explicit:
        return [explicit]
    if sys.platform == "win32":
        return ["vulkan-1.dll"]
    if sys.platform == "darwin":
        return ["libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib"]
    return ["libvulkan.so.1", "libvulkan.so"]


def load_loader(env: Mapping[str, str] | None = None) -> ctypes.CDLL:
    """Load the Vulkan loader library, or raise :class:`VulkanError` saying which names were tried."""
    names = _loader_candidates(os.environ if env is None else env)
    errors: list[str] = []
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError as exc:
            errors.append(f"{name}: {exc}")
    raise VulkanError("Vulkan not available: no Vulkan loader could be loaded (" + "; ".join(errors) + ")")


def _result_name(code: int) -> str:
    return VK_RESULTS.get(code, f"VkResult {code}")


def _cstr(raw: bytes) -> str:
    return raw.split(b"\x00", 1)[0].decode("utf-8", errors="replace")


class _Loader:
    """The handful of entry points we need, resolved through vkGetInstanceProcAddr."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        try:
            self.gipa = _PFN_vkGetInstanceProcAddr(("vkGetInstanceProcAddr", lib))
        except AttributeError as exc:
            raise VulkanError(
                "Vulkan not available: the loader library has no vkGetInstanceProcAddr"
            ) from exc

    def proc(self, instance: int | None, name: str, proto: Any) -> Any:
        addr = self.gipa(instance, name.encode())
        return None if not addr else proto(addr)

    def instance_version(self) -> int:
        fn = self.proc(None, "vkEnumerateInstanceVersion", _PFN_vkEnumerateInstanceVersion)
        if fn is None:
            return _make_version(1, 0)
        version = _u32(0)
        if fn(ctypes.byref(version)) != VK_SUCCESS:
            return _make_version(1, 0)
        return int(version.value)

    def instance_extensions(self) -> set[str]:
        fn = self.proc(
            None, "vkEnumerateInstanceExtensionProperties", _PFN_vkEnumerateInstanceExtensionProperties
        )
        if fn is None:
            return set()
        return _extensions(lambda count, arr: int(fn(None, count, arr)))


def _extensions(call: Any) -> set[str]:
    count = _u32(0)
    if call(ctypes.byref(count), None) not in (VK_SUCCESS, VK_INCOMPLETE):
        return set()
    for _ in range(3):  # the list may grow between the two calls
        arr = (VkExtensionProperties * max(count.value, 1))()
        res = call(ctypes.byref(count), arr)
        if res == VK_SUCCESS:
            return {_cstr(bytes(arr[i].extensionName)) for i in range(count.value)}
        if res != VK_INCOMPLETE:
            return set()
    return set()


def enumerate_in_process(env: Mapping[str, str] | None = None) -> VulkanEnumeration:
    """Enumerate through the loader in *this* process. Only the worker should call this (see module doc)."""
    try:
        return _enumerate(load_loader(env))
    except VulkanError as exc:
        return VulkanEnumeration(reason=str(exc))


def _enumerate(lib: ctypes.CDLL) -> VulkanEnumeration:
    loader = _Loader(lib)
    inst_version = loader.instance_version()
    inst_exts = loader.instance_extensions()
    use_khr = inst_version < VK_API_VERSION_1_1
    enabled: list[bytes] = []
    if use_khr:
        if "VK_KHR_get_physical_device_properties2" not in inst_exts:
            raise VulkanError(
                "Vulkan not available: the loader is Vulkan 1.0 "
                "without VK_KHR_get_physical_device_properties2"
            )
        enabled.append(b"VK_KHR_get_physical_device_properties2")

    app = VkApplicationInfo(
        sType=VK_STRUCTURE_TYPE_APPLICATION_INFO,
        pApplicationName=b"gputray",
        applicationVersion=1,
        pEngineName=b"gputray",
        engineVersion=1,
        apiVersion=_make_version(1, 0) if use_khr else VK_API_VERSION_1_1,
    )
    ext_array = (ctypes.c_char_p * max(len(enabled), 1))(*enabled)
    info = VkInstanceCreateInfo(
        sType=VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        pApplicationInfo=ctypes.pointer(app),
        enabledExtensionCount=len(enabled),
        ppEnabledExtensionNames=ext_array,
    )
    create = loader.proc(None, "vkCreateInstance", _PFN_vkCreateInstance)
    if create is None:
        raise VulkanError("Vulkan not available: the loader has no vkCreateInstance")
    instance = _Handle()
    res = int(create(ctypes.byref(info), None, ctypes.byref(instance)))
    if res != VK_SUCCESS:
        hint = " (no Vulkan driver/ICD found)" if res == -9 else ""
        raise VulkanError(f"Vulkan not available: vkCreateInstance failed with {_result_name(res)}{hint}")
    try:
        devices = _devices(loader, instance.value, use_khr)
    finally:
        destroy = loader.proc(instance.value, "vkDestroyInstance", _PFN_vkDestroyInstance)
        if destroy is not None:
            destroy(instance, None)
    return VulkanEnumeration(devices=devices, instance_version=version_string(inst_version))


def _devices(loader: _Loader, instance: int | None, use_khr: bool) -> tuple[VulkanDevice, ...]:
    enum_pd = loader.proc(instance, "vkEnumeratePhysicalDevices", _PFN_vkEnumeratePhysicalDevices)
    enum_ext = loader.proc(
        instance, "vkEnumerateDeviceExtensionProperties", _PFN_vkEnumerateDeviceExtensionProperties
    )
    props2 = loader.proc(
        instance,
        "vkGetPhysicalDeviceProperties2KHR" if use_khr else "vkGetPhysicalDeviceProperties2",
        _PFN_vkGetPhysicalDeviceProperties2,
    )
    if enum_pd is None or enum_ext is None or props2 is None:
        raise VulkanError("Vulkan not available: the loader lacks a physical-device entry point")
    count = _u32(0)
    res = int(enum_pd(instance, ctypes.byref(count), None))
    if res != VK_SUCCESS:
        raise VulkanError(f"Vulkan not available: vkEnumeratePhysicalDevices failed with {_result_name(res)}")
    handles = (_Handle * max(count.value, 1))()
    res = int(enum_pd(instance, ctypes.byref(count), handles))
    if res not in (VK_SUCCESS, VK_INCOMPLETE):
        raise VulkanError(f"Vulkan not available: vkEnumeratePhysicalDevices failed with {_result_name(res)}")
    return tuple(_describe(i, handles[i], enum_ext, props2) for i in range(count.value))


def _describe(index: int, handle: int | None, enum_ext: Any, props2: Any) -> VulkanDevice:
    base = VkPhysicalDeviceProperties2(sType=VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2)
    # First pass without a chain: apiVersion decides whether VkPhysicalDeviceDriverProperties is core.
    props2(handle, ctypes.byref(base))
    api = int(base.properties.apiVersion)
    exts = _extensions(lambda count, arr: int(enum_ext(handle, None, count, arr)))

    ids = VkPhysicalDeviceIDProperties(sType=VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES)
    chain: list[ctypes.Structure] = [ids]
    pci: VkPhysicalDevicePCIBusInfoPropertiesEXT | None = None
    if "VK_EXT_pci_bus_info" in exts:
        pci = VkPhysicalDevicePCIBusInfoPropertiesEXT(
            sType=VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT
        )
        chain.append(pci)
    drv: VkPhysicalDeviceDriverProperties | None = None
    if api >= VK_API_VERSION_1_2 or "VK_KHR_driver_properties" in exts:
        drv = VkPhysicalDeviceDriverProperties(sType=VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES)
        chain.append(drv)
    for a, b in itertools.pairwise(chain):
        a.pNext = ctypes.addressof(b)
    full = VkPhysicalDeviceProperties2(
        sType=VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=ctypes.addressof(chain[0])
    )
    props2(handle, ctypes.byref(full))
    p = full.properties

    uuid_raw = bytes(ids.deviceUUID)
    luid: str | None = None
    if ids.deviceLUIDValid:
        raw = bytes(ids.deviceLUID)
        luid = format_luid(int.from_bytes(raw[4:8], "little"), int.from_bytes(raw[0:4], "little"))
    driver_id = int(drv.driverID) if drv is not None else None
    driver_name = _cstr(bytes(drv.driverName)) if drv is not None else ""
    if not driver_name and driver_id is not None:
        driver_name = DRIVER_IDS.get(driver_id, "")
    return VulkanDevice(
        index=index,
        name=_cstr(bytes(p.deviceName)),
        device_type=_DEVICE_TYPES.get(int(p.deviceType), "other"),
        vendor_id=int(p.vendorID),
        device_id=int(p.deviceID),
        uuid=format_uuid(uuid_raw) if any(uuid_raw) else None,
        driver_name=driver_name or None,
        pci_bdf=(
            f"{pci.pciDomain:04x}:{pci.pciBus:02x}:{pci.pciDevice:02x}.{pci.pciFunction:x}"
            if pci is not None
            else None
        ),
        driver_id=driver_id,
        driver_info=(_cstr(bytes(drv.driverInfo)) or None) if drv is not None else None,
        api_version=version_string(api),
        luid=luid,
    )


# --------------------------------------------------------------------------------------------------
# JSON wire format between the worker and the parent.


def to_json(enum: VulkanEnumeration) -> dict[str, Any]:
    return {
        "reason": enum.reason,
        "instance_version": enum.instance_version,
        "devices": [asdict(d) for d in enum.devices],
    }


_TYPES = set(_DEVICE_TYPES.values())


def _opt_str(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def from_json(data: object) -> VulkanEnumeration:
    """Parse the worker's JSON; raises ValueError on anything malformed."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    raw_devices = data.get("devices", [])
    if not isinstance(raw_devices, list):
        raise ValueError("'devices' must be a list")
    devices: list[VulkanDevice] = []
    for raw in raw_devices:
        if not isinstance(raw, dict):
            raise ValueError("each device must be an object")
        dtype = raw.get("device_type")
        if dtype not in _TYPES:
            raise ValueError(f"unknown device_type {dtype!r}")
        driver_id = raw.get("driver_id")
        devices.append(
            VulkanDevice(
                index=_int(raw.get("index")),
                name=_opt_str(raw.get("name")) or "",
                device_type=dtype,
                vendor_id=_int(raw.get("vendor_id")),
                device_id=_int(raw.get("device_id")),
                uuid=_opt_str(raw.get("uuid")),
                driver_name=_opt_str(raw.get("driver_name")),
                pci_bdf=_opt_str(raw.get("pci_bdf")),
                driver_id=None if driver_id is None else _int(driver_id),
                driver_info=_opt_str(raw.get("driver_info")),
                api_version=_opt_str(raw.get("api_version")),
                luid=_opt_str(raw.get("luid")),
            )
        )
    return VulkanEnumeration(
        devices=tuple(devices),
        reason=_opt_str(data.get("reason")),
        instance_version=_opt_str(data.get("instance_version")),
    )


# --------------------------------------------------------------------------------------------------
# The parent side: run the worker in the job's environment.

DEFAULT_TIMEOUT_S = 20.0


def worker_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The job's environment, except that Python itself must find *our* gputray, not the job's packages."""
    merged = dict(os.environ if env is None else env)
    for var in ("PYTHONHOME", "PYTHONPATH"):
        merged.pop(var, None)
        if var in os.environ:
            merged[var] = os.environ[var]
    merged["PYTHONIOENCODING"] = "utf-8"
    return merged


def enumerate_devices(
    env: Mapping[str, str] | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    python: str | None = None,
) -> VulkanEnumeration:
    """Enumerate Vulkan devices as a job started with ``env`` would see them. Never raises.

    The worker runs in its own process group (own session on POSIX) so a hung driver is killed with
    everything it started.
    """
    cmd = module_command(WORKER_MODULE, python=python)
    try:
        proc = popen_own_group(
            cmd,
            env=worker_env(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        return VulkanEnumeration(reason=f"Vulkan enumeration could not start {cmd[0]}: {exc}")
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):  # a process it started may hold the pipes
            proc.communicate(timeout=5)
        return VulkanEnumeration(
            reason=f"Vulkan enumeration hung for {timeout_s:g} s and was killed (a broken Vulkan driver?)"
        )
    except BaseException:  # Ctrl+C: the worker is in its own group and would not get it
        kill_group(proc)
        raise
    tail = err.decode("utf-8", errors="replace").strip().splitlines()[-3:]
    detail = (": " + " | ".join(tail)) if tail else ""
    if proc.returncode != 0:
        how = (
            f"was killed by signal {-proc.returncode}"
            if proc.returncode < 0
            else f"exited with status {proc.returncode}"
        )
        return VulkanEnumeration(reason=f"Vulkan enumeration {how} (a broken Vulkan driver?){detail}")
    if not out.strip():
        hint = ""
        if (env or os.environ).get("MESA_VK_DEVICE_SELECT", "").strip() == "list":
            hint = " (MESA_VK_DEVICE_SELECT=list makes Mesa's device-select layer list devices and exit)"
        return VulkanEnumeration(reason=f"Vulkan enumeration exited without a result{hint}{detail}")
    try:
        return from_json(json.loads(out.decode("utf-8")))
    except (ValueError, UnicodeDecodeError) as exc:
        return VulkanEnumeration(reason=f"Vulkan enumeration printed something unreadable ({exc}){detail}")
