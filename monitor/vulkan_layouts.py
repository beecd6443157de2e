"""The Vulkan structures and entry points gputray reads, as ctypes layouts (no SDK): the constants,
the ``VkPhysicalDevice*`` structures and the function prototypes. Moved out of ``vulkan.py`` whole.

Checked against vulkan_core.h 1.3.239 on x86-64: sizeof(VkPhysicalDeviceLimits) = 504,
sizeof(VkPhysicalDeviceProperties) = 824, sizeof(VkPhysicalDeviceProperties2) = 840,
VkPhysicalDeviceIDProperties = 64, VkPhysicalDevicePCIBusInfoPropertiesEXT = 32,
VkPhysicalDeviceDriverProperties = 536 (tests assert these sizes).
"""

from __future__ import annotations

import ctypes
from typing import Any

u32 = ctypes.c_uint32
i32 = ctypes.c_int32
f32 = ctypes.c_float
u64 = ctypes.c_uint64
size_t = ctypes.c_size_t
u8 = ctypes.c_uint8

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
        ("maxImageDimension1D", u32),
        ("maxImageDimension2D", u32),
        ("maxImageDimension3D", u32),
        ("maxImageDimensionCube", u32),
        ("maxImageArrayLayers", u32),
        ("maxTexelBufferElements", u32),
        ("maxUniformBufferRange", u32),
        ("maxStorageBufferRange", u32),
        ("maxPushConstantsSize", u32),
        ("maxMemoryAllocationCount", u32),
        ("maxSamplerAllocationCount", u32),
        ("bufferImageGranularity", u64),
        ("sparseAddressSpaceSize", u64),
        ("maxBoundDescriptorSets", u32),
        ("maxPerStageDescriptorSamplers", u32),
        ("maxPerStageDescriptorUniformBuffers", u32),
        ("maxPerStageDescriptorStorageBuffers", u32),
        ("maxPerStageDescriptorSampledImages", u32),
        ("maxPerStageDescriptorStorageImages", u32),
        ("maxPerStageDescriptorInputAttachments", u32),
        ("maxPerStageResources", u32),
        ("maxDescriptorSetSamplers", u32),
        ("maxDescriptorSetUniformBuffers", u32),
        ("maxDescriptorSetUniformBuffersDynamic", u32),
        ("maxDescriptorSetStorageBuffers", u32),
        ("maxDescriptorSetStorageBuffersDynamic", u32),
        ("maxDescriptorSetSampledImages", u32),
        ("maxDescriptorSetStorageImages", u32),
        ("maxDescriptorSetInputAttachments", u32),
        ("maxVertexInputAttributes", u32),
        ("maxVertexInputBindings", u32),
        ("maxVertexInputAttributeOffset", u32),
        ("maxVertexInputBindingStride", u32),
        ("maxVertexOutputComponents", u32),
        ("maxTessellationGenerationLevel", u32),
        ("maxTessellationPatchSize", u32),
        ("maxTessellationControlPerVertexInputComponents", u32),
        ("maxTessellationControlPerVertexOutputComponents", u32),
        ("maxTessellationControlPerPatchOutputComponents", u32),
        ("maxTessellationControlTotalOutputComponents", u32),
        ("maxTessellationEvaluationInputComponents", u32),
        ("maxTessellationEvaluationOutputComponents", u32),
        ("maxGeometryShaderInvocations", u32),
        ("maxGeometryInputComponents", u32),
        ("maxGeometryOutputComponents", u32),
        ("maxGeometryOutputVertices", u32),
        ("maxGeometryTotalOutputComponents", u32),
        ("maxFragmentInputComponents", u32),
        ("maxFragmentOutputAttachments", u32),
        ("maxFragmentDualSrcAttachments", u32),
        ("maxFragmentCombinedOutputResources", u32),
        ("maxComputeSharedMemorySize", u32),
        ("maxComputeWorkGroupCount", u32 * 3),
        ("maxComputeWorkGroupInvocations", u32),
        ("maxComputeWorkGroupSize", u32 * 3),
        ("subPixelPrecisionBits", u32),
        ("subTexelPrecisionBits", u32),
        ("mipmapPrecisionBits", u32),
        ("maxDrawIndexedIndexValue", u32),
        ("maxDrawIndirectCount", u32),
        ("maxSamplerLodBias", f32),
        ("maxSamplerAnisotropy", f32),
        ("maxViewports", u32),
        ("maxViewportDimensions", u32 * 2),
        ("viewportBoundsRange", f32 * 2),
        ("viewportSubPixelBits", u32),
        ("minMemoryMapAlignment", size_t),
        ("minTexelBufferOffsetAlignment", u64),
        ("minUniformBufferOffsetAlignment", u64),
        ("minStorageBufferOffsetAlignment", u64),
        ("minTexelOffset", i32),
        ("maxTexelOffset", u32),
        ("minTexelGatherOffset", i32),
        ("maxTexelGatherOffset", u32),
        ("minInterpolationOffset", f32),
        ("maxInterpolationOffset", f32),
        ("subPixelInterpolationOffsetBits", u32),
        ("maxFramebufferWidth", u32),
        ("maxFramebufferHeight", u32),
        ("maxFramebufferLayers", u32),
        ("framebufferColorSampleCounts", u32),
        ("framebufferDepthSampleCounts", u32),
        ("framebufferStencilSampleCounts", u32),
        ("framebufferNoAttachmentsSampleCounts", u32),
        ("maxColorAttachments", u32),
        ("sampledImageColorSampleCounts", u32),
        ("sampledImageIntegerSampleCounts", u32),
        ("sampledImageDepthSampleCounts", u32),
        ("sampledImageStencilSampleCounts", u32),
        ("storageImageSampleCounts", u32),
        ("maxSampleMaskWords", u32),
        ("timestampComputeAndGraphics", u32),
        ("timestampPeriod", f32),
        ("maxClipDistances", u32),
        ("maxCullDistances", u32),
        ("maxCombinedClipAndCullDistances", u32),
        ("discreteQueuePriorities", u32),
        ("pointSizeRange", f32 * 2),
        ("lineWidthRange", f32 * 2),
        ("pointSizeGranularity", f32),
        ("lineWidthGranularity", f32),
        ("strictLines", u32),
        ("standardSampleLocations", u32),
        ("optimalBufferCopyOffsetAlignment", u64),
        ("optimalBufferCopyRowPitchAlignment", u64),
        ("nonCoherentAtomSize", u64),
    ]


class VkPhysicalDeviceSparseProperties(ctypes.Structure):
    _fields_ = [
        ("residencyStandard2DBlockShape", u32),
        ("residencyStandard2DMultisampleBlockShape", u32),
        ("residencyStandard3DBlockShape", u32),
        ("residencyAlignedMipSize", u32),
        ("residencyNonResidentStrict", u32),
    ]


class VkPhysicalDeviceProperties(ctypes.Structure):
    _fields_ = [
        ("apiVersion", u32),
        ("driverVersion", u32),
        ("vendorID", u32),
        ("deviceID", u32),
        ("deviceType", i32),
        ("deviceName", ctypes.c_char * VK_MAX_PHYSICAL_DEVICE_NAME_SIZE),
        ("pipelineCacheUUID", u8 * VK_UUID_SIZE),
        ("limits", VkPhysicalDeviceLimits),
        ("sparseProperties", VkPhysicalDeviceSparseProperties),
    ]


class VkPhysicalDeviceProperties2(ctypes.Structure):
    _fields_ = [
        ("sType", i32),
        ("pNext", ctypes.c_void_p),
        ("properties", VkPhysicalDeviceProperties),
    ]


class VkPhysicalDeviceIDProperties(ctypes.Structure):
    _fields_ = [
        ("sType", i32),
        ("pNext", ctypes.c_void_p),
        ("deviceUUID", u8 * VK_UUID_SIZE),
        ("driverUUID", u8 * VK_UUID_SIZE),
        ("deviceLUID", u8 * VK_LUID_SIZE),
        ("deviceNodeMask", u32),
        ("deviceLUIDValid", u32),
    ]


class VkPhysicalDevicePCIBusInfoPropertiesEXT(ctypes.Structure):
    _fields_ = [
        ("sType", i32),
        ("pNext", ctypes.c_void_p),
        ("pciDomain", u32),
        ("pciBus", u32),
        ("pciDevice", u32),
        ("pciFunction", u32),
    ]


class VkConformanceVersion(ctypes.Structure):
    _fields_ = [("major", u8), ("minor", u8), ("subminor", u8), ("patch", u8)]


class VkPhysicalDeviceDriverProperties(ctypes.Structure):
    _fields_ = [
        ("sType", i32),
        ("pNext", ctypes.c_void_p),
        ("driverID", i32),
        ("driverName", ctypes.c_char * VK_MAX_DRIVER_NAME_SIZE),
        ("driverInfo", ctypes.c_char * VK_MAX_DRIVER_INFO_SIZE),
        ("conformanceVersion", VkConformanceVersion),
    ]


class VkExtensionProperties(ctypes.Structure):
    _fields_ = [("extensionName", ctypes.c_char * VK_MAX_EXTENSION_NAME_SIZE), ("specVersion", u32)]


class VkApplicationInfo(ctypes.Structure):
    _fields_ = [
        ("sType", i32),
        ("pNext", ctypes.c_void_p),
        ("pApplicationName", ctypes.c_char_p),
        ("applicationVersion", u32),
        ("pEngineName", ctypes.c_char_p),
        ("engineVersion", u32),
        ("apiVersion", u32),
    ]


class VkInstanceCreateInfo(ctypes.Structure):
    _fields_ = [
        ("sType", i32),
        ("pNext", ctypes.c_void_p),
        ("flags", u32),
        ("pApplicationInfo", ctypes.POINTER(VkApplicationInfo)),
        ("enabledLayerCount", u32),
        ("ppEnabledLayerNames", ctypes.POINTER(ctypes.c_char_p)),
        ("enabledExtensionCount", u32),
        ("ppEnabledExtensionNames", ctypes.POINTER(ctypes.c_char_p)),
    ]


def make_version(major: int, minor: int, patch: int = 0) -> int:
    return (major << 22) | (minor << 12) | patch


VK_API_VERSION_1_1 = make_version(1, 1)
VK_API_VERSION_1_2 = make_version(1, 2)

# Vulkan commands use the platform calling convention: stdcall on 32-bit Windows, cdecl elsewhere.
FUNCTYPE: Any = getattr(ctypes, "WINFUNCTYPE", ctypes.CFUNCTYPE)
VkHandle = ctypes.c_void_p
PFN_vkGetInstanceProcAddr = FUNCTYPE(ctypes.c_void_p, VkHandle, ctypes.c_char_p)
PFN_vkEnumerateInstanceVersion = FUNCTYPE(i32, ctypes.POINTER(u32))
PFN_vkEnumerateInstanceExtensionProperties = FUNCTYPE(
    i32, ctypes.c_char_p, ctypes.POINTER(u32), ctypes.POINTER(VkExtensionProperties)
)
PFN_vkCreateInstance = FUNCTYPE(
    i32, ctypes.POINTER(VkInstanceCreateInfo), ctypes.c_void_p, ctypes.POINTER(VkHandle)
)
PFN_vkDestroyInstance = FUNCTYPE(None, VkHandle, ctypes.c_void_p)
PFN_vkEnumeratePhysicalDevices = FUNCTYPE(i32, VkHandle, ctypes.POINTER(u32), ctypes.POINTER(VkHandle))
PFN_vkEnumerateDeviceExtensionProperties = FUNCTYPE(
    i32, VkHandle, ctypes.c_char_p, ctypes.POINTER(u32), ctypes.POINTER(VkExtensionProperties)
)
PFN_vkGetPhysicalDeviceProperties2 = FUNCTYPE(None, VkHandle, ctypes.POINTER(VkPhysicalDeviceProperties2))
