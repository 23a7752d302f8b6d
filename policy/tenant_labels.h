// Label, annotation and env names that gpu-admission writes.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

namespace gpu_admission::policy {

inline constexpr std::string_view kTenantLabelKey = "gpu-admission.io/tenant";
inline constexpr std::string_view kMigProfileAnnotation = "gpu-admission.io/mig-profile";
inline constexpr std::string_view kMigInjectedAnnotation = "gpu-admission.io/mig-injected";
// The annotations whose values rules and mutations read: the pod decoder decodes only these
// values (PodView::annotations). A rule that reads another annotation's value adds it here.
inline constexpr std::array<std::string_view, 1> kReadAnnotations = {kMigProfileAnnotation};
inline bool decoded_annotation(std::string_view key) {
  return std::find(kReadAnnotations.begin(), kReadAnnotations.end(), key) != kReadAnnotations.end();
}
inline constexpr std::string_view kGpuProductLabel = "nvidia.com/gpu.product";
// What hide-gpus sets in containers that ask for no GPU.
inline constexpr std::string_view kVisibleDevicesEnv = "NVIDIA_VISIBLE_DEVICES";
inline constexpr std::string_view kVisibleDevicesVoid = "void";

}  // namespace gpu_admission::policy
