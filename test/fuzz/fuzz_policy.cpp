// Fuzz target: the policy loader and compiler on arbitrary text. Errors are data: nothing may
// crash, and a policy that compiles must evaluate a GPU pod.
#include <cstdint>
#include <string>

#include <simdjson.h>

#include "policy/evaluation/evaluator.h"
#include "policy/decoding/pod_decoder.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  webhook::PolicyLoad load = webhook::load_policy_text(text, "fuzz.yaml");
  (void)load.report();
  if (!load.ok()) return 0;
  static const std::string pod = R"({"kind":"Pod","metadata":{"name":"p","namespace":"team-alpha","labels":{"x":"y"}},
    "spec":{"nodeSelector":{"gpu.example.com/pool":"a100-secure"},"containers":[{"name":"c",
    "resources":{"limits":{"nvidia.com/gpu":"2","nvidia.com/mig-1g.10gb":"1"}}}]}})";
  static policy::PodDocument document;
  policy::PodView view;
  if (!policy::decode_pod_json(pod, false, view, document)) {
    policy::Decision d = policy::evaluate(*load.policy, view, {});
    (void)d;
  }
  return 0;
}
