// Label, annotation and env names that gpu-admission writes or reads.
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
// The env entry hide-gpus adds, as it writes it and as the API server serialises it back: the pod
// decoder knows an entry of exactly these bytes without reading it.
inline constexpr std::string_view kHiddenGpusEnvEntry = R"({"name":"NVIDIA_VISIBLE_DEVICES","value":"void"})";

// The env var names rules and mutations read: the names gpu-device-access denies (hide-gpus
// writes the first): the NVIDIA container runtime hands out GPUs, MIG control, IMEX channels,
// InfiniBand (MOFED), NVSwitch, GPUDirect Storage and GDRCopy devices by them, and
// CUDA_DISABLE_CONTROL turns off HAMi's in-container limits; and the CUDA_MPS_ prefix
// (mps-adversarial). The pod decoder reads an env entry only when its JSON text could name one of
// them (policy/decoding/env_names.h), so each must hold "A_": a rule that reads another env name
// adds it here (the policy's own spec.gpuEnvVars reach the decoder through the decode call).
inline constexpr std::array<std::string_view, 9> kDeviceEnvVars = {
    kVisibleDevicesEnv, "NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES", "NVIDIA_IMEX_CHANNELS",
    "NVIDIA_MOFED",     "NVIDIA_NVSWITCH",           "NVIDIA_GDS",                 "NVIDIA_GDRCOPY",
    "CUDA_DISABLE_CONTROL"};
inline constexpr std::string_view kMpsEnvPrefix = "CUDA_MPS_";

}  // namespace gpu_admission::policy
