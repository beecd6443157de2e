"""Vulkan enumerated in *this* process, through the loader library (``libvulkan.so.1`` /
``vulkan-1.dll``) and ctypes: :func:`enumerate_in_process`. Only the ``gputray.monitor.vulkan_enum``
worker calls it, because a broken ICD can crash or hang whoever loads it (``vulkan.py``'s docstring).
Moved out of ``vulkan.py`` whole."""

from __future__ import annotations

import ctypes
import itertools
import os
import sys
from collections.abc import Mapping
from typing import Any

from gputray.monitor import vulkan_why as w
from gputray.monitor.vulkan import (
    DEVICE_TYPES,
    DRIVER_IDS,
    LOADER_ENV,
    VulkanDevice,
    VulkanEnumeration,
    format_luid,
    format_uuid,
    version_string,
)
from gputray.monitor.vulkan_layouts import (
    VK_API_VERSION_1_1,
    VK_API_VERSION_1_2,
    VK_INCOMPLETE,
    VK_RESULTS,
    VK_STRUCTURE_TYPE_APPLICATION_INFO,
    VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES,
    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT,
    VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
    VK_SUCCESS,
    PFN_vkCreateInstance,
    PFN_vkDestroyInstance,
    PFN_vkEnumerateDeviceExtensionProperties,
    PFN_vkEnumerateInstanceExtensionProperties,
    PFN_vkEnumerateInstanceVersion,
    PFN_vkEnumeratePhysicalDevices,
    PFN_vkGetInstanceProcAddr,
    PFN_vkGetPhysicalDeviceProperties2,
    VkApplicationInfo,
    VkExtensionProperties,
    VkHandle,
    VkInstanceCreateInfo,
    VkPhysicalDeviceDriverProperties,
    VkPhysicalDeviceIDProperties,
    VkPhysicalDevicePCIBusInfoPropertiesEXT,
    VkPhysicalDeviceProperties2,
    make_version,
    u32,
)


class VulkanError(Exception):
    """Raised inside the worker; ``why`` becomes the enumeration's."""

    def __init__(self, why: w.VulkanWhy) -> None:
        super().__init__(why)
        self.why = why


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
    raise VulkanError(w.NoLoader(tried=tuple(errors)))


def _result_name(code: int) -> str:
    return VK_RESULTS.get(code, f"VkResult {code}")


def _cstr(raw: bytes) -> str:
    return raw.split(b"\x00", 1)[0].decode("utf-8", errors="replace")


class _Loader:
    """The handful of entry points we need, resolved through vkGetInstanceProcAddr."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        try:
            self.gipa = PFN_vkGetInstanceProcAddr(("vkGetInstanceProcAddr", lib))
        except AttributeError as exc:
            raise VulkanError(w.LoaderLacks(entry="vkGetInstanceProcAddr")) from exc

    def proc(self, instance: int | None, name: str, proto: Any) -> Any:
        addr = self.gipa(instance, name.encode())
        return None if not addr else proto(addr)

    def instance_version(self) -> int:
        fn = self.proc(None, "vkEnumerateInstanceVersion", PFN_vkEnumerateInstanceVersion)
        if fn is None:
            return make_version(1, 0)
        version = u32(0)
        if fn(ctypes.byref(version)) != VK_SUCCESS:
            return make_version(1, 0)
        return int(version.value)

    def instance_extensions(self) -> set[str]:
        fn = self.proc(
            None, "vkEnumerateInstanceExtensionProperties", PFN_vkEnumerateInstanceExtensionProperties
        )
        if fn is None:
            return set()
        return _extensions(lambda count, arr: int(fn(None, count, arr)))


def _extensions(call: Any) -> set[str]:
    count = u32(0)
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
        return VulkanEnumeration(why=exc.why)


def _enumerate(lib: ctypes.CDLL) -> VulkanEnumeration:
    loader = _Loader(lib)
    inst_version = loader.instance_version()
    inst_exts = loader.instance_extensions()
    use_khr = inst_version < VK_API_VERSION_1_1
    enabled: list[bytes] = []
    if use_khr:
        if "VK_KHR_get_physical_device_properties2" not in inst_exts:
            raise VulkanError(w.OldLoader())
        enabled.append(b"VK_KHR_get_physical_device_properties2")

    app = VkApplicationInfo(
        sType=VK_STRUCTURE_TYPE_APPLICATION_INFO,
        pApplicationName=b"gputray",
        applicationVersion=1,
        pEngineName=b"gputray",
        engineVersion=1,
        apiVersion=make_version(1, 0) if use_khr else VK_API_VERSION_1_1,
    )
    ext_array = (ctypes.c_char_p * max(len(enabled), 1))(*enabled)
    info = VkInstanceCreateInfo(
        sType=VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        pApplicationInfo=ctypes.pointer(app),
        enabledExtensionCount=len(enabled),
        ppEnabledExtensionNames=ext_array,
    )
    create = loader.proc(None, "vkCreateInstance", PFN_vkCreateInstance)
    if create is None:
        raise VulkanError(w.LoaderLacks(entry="vkCreateInstance"))
    instance = VkHandle()
    res = int(create(ctypes.byref(info), None, ctypes.byref(instance)))
    if res != VK_SUCCESS:
        raise VulkanError(
            w.CallFailed(call="vkCreateInstance", result=_result_name(res), no_driver=res == -9)
        )
    try:
        devices = _devices(loader, instance.value, use_khr)
    finally:
        destroy = loader.proc(instance.value, "vkDestroyInstance", PFN_vkDestroyInstance)
        if destroy is not None:
            destroy(instance, None)
    return VulkanEnumeration(devices=devices, instance_version=version_string(inst_version))


def _devices(loader: _Loader, instance: int | None, use_khr: bool) -> tuple[VulkanDevice, ...]:
    enum_pd = loader.proc(instance, "vkEnumeratePhysicalDevices", PFN_vkEnumeratePhysicalDevices)
    enum_ext = loader.proc(
        instance, "vkEnumerateDeviceExtensionProperties", PFN_vkEnumerateDeviceExtensionProperties
    )
    props2 = loader.proc(
        instance,
        "vkGetPhysicalDeviceProperties2KHR" if use_khr else "vkGetPhysicalDeviceProperties2",
        PFN_vkGetPhysicalDeviceProperties2,
    )
    if enum_pd is None or enum_ext is None or props2 is None:
        raise VulkanError(w.LoaderLacks(entry="physical-device"))
    count = u32(0)
    res = int(enum_pd(instance, ctypes.byref(count), None))
    if res != VK_SUCCESS:
        raise VulkanError(w.CallFailed(call="vkEnumeratePhysicalDevices", result=_result_name(res)))
    handles = (VkHandle * max(count.value, 1))()
    res = int(enum_pd(instance, ctypes.byref(count), handles))
    if res not in (VK_SUCCESS, VK_INCOMPLETE):
        raise VulkanError(w.CallFailed(call="vkEnumeratePhysicalDevices", result=_result_name(res)))
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
        device_type=DEVICE_TYPES.get(int(p.deviceType), "other"),
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
