// Label, annotation and env names that gpu-admission writes.
#pragma once

#include <string_view>

namespace gpu_admission::policy {

inline constexpr std::string_view kTenantLabelKey = "gpu-admission.io/tenant";
inline constexpr std::string_view kMigProfileAnnotation = "gpu-admission.io/mig-profile";
inline constexpr std::string_view kMigInjectedAnnotation = "gpu-admission.io/mig-injected";
inline constexpr std::string_view kGpuProductLabel = "nvidia.com/gpu.product";
// What hide-gpus sets in containers that ask for no GPU.
inline constexpr std::string_view kVisibleDevicesEnv = "NVIDIA_VISIBLE_DEVICES";
inline constexpr std::string_view kVisibleDevicesVoid = "void";

}  // namespace gpu_admission::policy
