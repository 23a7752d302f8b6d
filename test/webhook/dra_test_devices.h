// The spec.devices of the DRA claims the allocation tests swap under a pod: one MIG slice pinned
// to 1g.10gb, whole GPUs, the slice with the NVIDIA driver asked for MPS or time-slicing, and a
// share of a slice (consumable capacity).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dra_test {

inline nlohmann::json one_mig_slice() {
  return nlohmann::json::parse(R"({"requests":[{"name":"gpu","exactly":{"deviceClassName":"mig.nvidia.com",
    "selectors":[{"cel":{"expression":"device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]}}]})");
}

inline nlohmann::json whole_gpus(int count) {
  return nlohmann::json::parse(R"({"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":)" +
                               std::to_string(count) + "}}]}");
}

inline nlohmann::json mps_mig_slice() {
  nlohmann::json devices = one_mig_slice();
  devices["config"] = nlohmann::json::parse(R"([{"opaque":{"driver":"gpu.nvidia.com","parameters":{
    "apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS"}}}}])");
  return devices;
}

inline nlohmann::json time_sliced_mig_slice() {
  nlohmann::json devices = mps_mig_slice();
  devices["config"][0]["opaque"]["parameters"]["sharing"]["strategy"] = "TimeSlicing";
  return devices;
}

inline nlohmann::json shared_mig_slice() {
  nlohmann::json devices = one_mig_slice();
  devices["requests"][0]["exactly"]["capacity"] = {{"requests", {{"memory", "5Gi"}}}};
  return devices;
}

}  // namespace dra_test
