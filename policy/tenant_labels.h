// Label and annotation keys owned by gpu-admission.
#pragma once

#include <string_view>

namespace gpu_admission::policy {

inline constexpr std::string_view kTenantLabelKey = "gpu-admission.io/tenant";
inline constexpr std::string_view kMigProfileAnnotation = "gpu-admission.io/mig-profile";
inline constexpr std::string_view kMigInjectedAnnotation = "gpu-admission.io/mig-injected";
inline constexpr std::string_view kGpuProductLabel = "nvidia.com/gpu.product";

}  // namespace gpu_admission::policy
