// Env lists as the pod decoder reads them: an entry whose JSON text names no variable a rule reads
// (kDeviceEnvVars, kMpsEnvPrefix, and the policy's own spec.gpuEnvVars) and holds no backslash is
// skipped unread; the others are read, with their index in the list. The scan (env_may_name_read)
// is tested as a class: every name read, and every backslash, at every offset of texts of every
// length around its 32-byte blocks, and the neighbouring names that must not count; the policy's
// names likewise, with and without "A_"; the decoder with every name at every position of a
// long list, in plain and escaped spellings, with blanks, and with a repeated key.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "policy/decoding/env_names.h"
#include "policy/evaluation/evaluator.h"
#include "policy/decoding/pod_decoder.h"
#include "policy/base/tenant_labels.h"
#include "test/policy/decoded_pod.h"
#include "webhook/io/policy_file.h"

namespace policy = gpu_admission::policy;

namespace {

// `text` followed by 64 bytes that continue `tail` (the padding a document has): a scan reading
// past the text's end would see them.
bool scan(const std::string& text, const std::string& tail = "SSSS") {
  std::string padded = text;
  while (padded.size() < text.size() + 64) padded += tail;
  return policy::env_may_name_read(std::string_view(padded.data(), text.size()));
}

// The same with a policy's own names.
bool scan_with(const std::string& text, const std::vector<std::string>& extra, const std::string& tail = "SSSS") {
  std::string padded = text;
  while (padded.size() < text.size() + 64) padded += tail;
  return policy::env_may_name_read(std::string_view(padded.data(), text.size()), extra);
}

const std::string kFiller = R"({"name":"ENV_VAR_NUMBER_0","value":"some-configuration-value-0"},)";

// Filler text of `length` bytes.
std::string filler(size_t length) {
  std::string out;
  while (out.size() < length) out += kFiller;
  out.resize(length);
  return out;
}

std::vector<std::string> names_read() {
  std::vector<std::string> names(policy::kDeviceEnvVars.begin(), policy::kDeviceEnvVars.end());
  names.emplace_back(policy::kMpsEnvPrefix);
  names.push_back(std::string(policy::kMpsEnvPrefix) + "PIPE_DIRECTORY");
  return names;
}

// A pod whose one container has env `env` (JSON text, written as is).
std::string pod_with_env(const std::string& env) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"research"},)"
         R"("spec":{"containers":[{"name":"main","image":"cuda","env":)" +
         env + "}]}}";
}

struct Decoded : DecodedPod {
  using DecodedPod::DecodedPod;
  const policy::ContainerView& container() const { return view.containers.at(0); }
};

std::string harmless_entries(int count) {
  std::string out;
  for (int i = 0; i < count; ++i)
    out += (i ? "," : "") + std::string(R"({"name":"SETTING_)") + std::to_string(i) + R"(","value":"v)" +
           std::to_string(i) + R"("})";
  return out;
}

// The gpu-device-access findings of the default policy for a decoded pod.
std::vector<std::string> device_access_fields(policy::PodView& view) {
  static const auto loaded = gpu_admission::webhook::load_policy_file("");
  REQUIRE(loaded.policy);
  policy::Decision decision;
  policy::evaluate(*loaded.policy, view, policy::EvalOptions{}, decision);
  std::vector<std::string> fields;
  for (const auto& f : decision.findings)
    if (f.rule == policy::RuleId::GpuDeviceAccess) fields.push_back(f.field);
  return fields;
}

}  // namespace

TEST_CASE("env scan: every name read is found at every offset, up to the text's last byte") {
  for (const std::string& name : names_read()) {
    for (size_t before = 0; before <= 70; ++before) {
      for (size_t after : {size_t{0}, size_t{1}, size_t{31}, size_t{32}, size_t{33}}) {
        INFO(name << " after " << before << " bytes, " << after << " bytes before the end");
        CHECK(scan(filler(before) + name + filler(after)));
      }
    }
  }
}

TEST_CASE("env scan: a backslash anywhere counts (an escape can spell a name)") {
  for (size_t length = 1; length <= 100; ++length) {
    for (size_t at = 0; at < length; ++at) {
      std::string text = filler(length);
      text[at] = '\\';
      INFO("length " << length << ", backslash at " << at);
      CHECK(scan(text));
    }
  }
}

TEST_CASE("env scan: neighbouring names do not count, nor names cut by the text's end") {
  for (const std::string name :
       {"NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_REQUIRE_CUDA", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICE",
        "NVIDIA_MIG_CONFIG", "NVIDIA_IMEX_CHANNEL", "NVIDIA_", "CUDA_MPS", "CUDA_MP_S", "nvidia_visible_devices",
        "cuda_mps_pipe", "DATA_DIR", "JAVA_HOME", "A_", "_A", "NVIDIA_GD", "NVIDIA_GDRCOP", "NVIDIA_MOFE",
        "NVIDIA_NVSWITC", "NVIDIA_NV", "CUDA_DISABLE", "CUDA_DISABLE_CONTRO", "CUDA_", "nvidia_gds",
        "cuda_disable_control", "NVIDIA-GDS", "CUDA-DISABLE_CONTROL"}) {
    for (size_t before = 0; before <= 40; ++before) {
      INFO(name << " after " << before << " bytes");
      CHECK_FALSE(scan(filler(before) + name + filler(7)));
      CHECK_FALSE(scan(filler(before) + name));
    }
  }
  // The padding after the text spells the rest of a name: it is not part of the text.
  std::vector<std::string> whole(policy::kDeviceEnvVars.begin(), policy::kDeviceEnvVars.end());
  whole.emplace_back(policy::kMpsEnvPrefix);
  for (const std::string& name : whole) {
    for (size_t cut = 1; cut < name.size(); ++cut) {
      for (size_t before : {size_t{0}, size_t{20}, size_t{31}, size_t{57}}) {
        const std::string text = filler(before) + name.substr(0, name.size() - cut);
        INFO(text << " | " << name.substr(name.size() - cut));
        CHECK_FALSE(scan(text, name.substr(name.size() - cut)));
      }
    }
  }
  CHECK_FALSE(scan(""));
  CHECK_FALSE(scan(filler(5000)));
}

TEST_CASE("env: entries naming no variable a rule reads are skipped; the list still exists") {
  Decoded d(pod_with_env("[" + harmless_entries(40) + "]"));
  REQUIRE_FALSE(d.error);
  CHECK(d.container().has_env);
  CHECK(d.container().env_size == 40);
  CHECK(d.container().env.empty());
  CHECK(device_access_fields(d.view).empty());

  Decoded empty(pod_with_env("[]"));
  REQUIRE_FALSE(empty.error);
  CHECK(empty.container().has_env);
}

TEST_CASE("env: a name read at any position of a long list, in any spelling, is read with its index") {
  const std::vector<std::string> spellings = {
      R"("NVIDIA_VISIBLE_DEVICES")", R"("\u004eVIDIA_VISIBLE_DEVICES")", R"("NVIDIA\u005fVISIBLE_DEVICES")",
      R"("NVIDIA_VISIBLE_DEVICE\u0053")", R"("NVIDIA\/VISIBLE_DEVICES")"};
  for (size_t s = 0; s < spellings.size(); ++s) {
    for (int position : {0, 1, 7, 19}) {
      for (const std::string blank : {"", " ", "\n  "}) {
        const std::string entry =
            "{" + blank + R"("name":)" + blank + spellings[s] + "," + blank + R"("value":"all"})";
        std::string env = "[" + harmless_entries(position) + (position ? "," : "") + entry;
        env += "," + harmless_entries(20 - position) + "]";
        INFO(env);
        Decoded d(pod_with_env(env));
        REQUIRE_FALSE(d.error);
        const auto& list = d.container().env;
        CHECK(d.container().env_size == 21);
        REQUIRE(list.size() == 1);  // the one entry that could name a variable read
        CHECK(list[0].index == static_cast<uint32_t>(position));
        const bool device = s != 4;  // "NVIDIA/VISIBLE_DEVICES" is another name (read, since it has an escape)
        CHECK((list[0].name == policy::kVisibleDevicesEnv) == device);
        CHECK(list[0].value == "all");
        const auto fields = device_access_fields(d.view);
        if (device) {
          REQUIRE(fields.size() == 1);
          CHECK(fields[0] == "spec.containers[0].env[" + std::to_string(position) + "]");
        } else {
          CHECK(fields.empty());
        }
      }
    }
  }
  for (const std::string& name : names_read()) {
    Decoded d(pod_with_env("[" + harmless_entries(12) + R"(,{"name":")" + name + R"(","valueFrom":{}}])"));
    REQUIRE_FALSE(d.error);
    REQUIRE(d.container().env.size() == 1);
    CHECK(d.container().env[0].index == 12);
    CHECK(d.container().env[0].name == name);
    CHECK(d.container().env[0].value_from);
  }
}

TEST_CASE("env: several entries naming variables read, among others, keep their indices") {
  std::string env = "[";
  const int at[] = {0, 5, 19};
  for (int i = 0; i < 20; ++i) {
    const bool read = i == at[0] || i == at[1] || i == at[2];
    env += (i ? "," : "") + (read ? R"({"name":"NVIDIA_IMEX_CHANNELS","value":")" + std::to_string(i) + R"("})"
                                  : harmless_entries(1));
  }
  Decoded d(pod_with_env(env + "]"));
  REQUIRE_FALSE(d.error);
  const auto& list = d.container().env;
  REQUIRE(list.size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    CHECK(list[k].index == static_cast<uint32_t>(at[k]));
    CHECK(list[k].value == std::to_string(at[k]));
  }
  const auto fields = device_access_fields(d.view);
  CHECK(fields == std::vector<std::string>{"spec.containers[0].env[0]", "spec.containers[0].env[5]",
                                           "spec.containers[0].env[19]"});
}

TEST_CASE("env: entries that are read are checked as before; the others only as objects") {
  // A repeated key that makes the name a device variable is refused.
  Decoded repeated(pod_with_env(R"([{"name":"HARMLESS","name":"NVIDIA_VISIBLE_DEVICES","value":"all"}])"));
  REQUIRE(repeated.error);
  CHECK(repeated.error->message.find("duplicate key \"name\"") != std::string::npos);
  // An entry of a read list that is not an object is located.
  Decoded wrong(pod_with_env(R"([{"name":"NVIDIA_IMEX_CHANNELS","value":"0"},5])"));
  REQUIRE(wrong.error);
  CHECK(wrong.error->field == "spec.containers[0].env[1]");
  // An entry naming no variable read is not read: no rule can judge it (the API server refuses
  // these). Every entry must still be an object.
  Decoded skipped(pod_with_env(R"([{"name":7},{"value":[1],"value":2}])"));
  CHECK_FALSE(skipped.error);
  Decoded not_object(pod_with_env(R"([{"name":"A"},5])"));
  REQUIRE(not_object.error);
  CHECK(not_object.error->field == "spec.containers[0].env[1]");
  // It must still be a list.
  Decoded not_list(pod_with_env(R"({"name":"A"})"));
  REQUIRE(not_list.error);
  CHECK(not_list.error->message.find("must be a list") != std::string::npos);
}

TEST_CASE("env: hide-gpus' entry is known by its exact bytes; any other spelling of it is read") {
  // What hide-gpus writes is those bytes.
  {
    Decoded d(pod_with_env("[" + harmless_entries(2) + "]"));
    REQUIRE_FALSE(d.error);
    static const auto loaded = gpu_admission::webhook::load_policy_file("");
    policy::Decision decision;
    policy::evaluate(*loaded.policy, d.view, policy::EvalOptions{}, decision);
    bool written = false;
    for (const auto& op : decision.patch)
      if (op.path == "/spec/containers/0/env/-") written = op.value == policy::kHiddenGpusEnvEntry;
    CHECK(written);
  }
  const std::string gpu = R"(,"resources":{"limits":{"nvidia.com/gpu":1}})";
  const auto with_gpu = [&](std::string pod) { return pod.insert(pod.find(R"("env":)") - 1, gpu), pod; };
  const std::string known(policy::kHiddenGpusEnvEntry);
  for (const bool asks_for_gpu : {false, true}) {
    Decoded d(asks_for_gpu ? with_gpu(pod_with_env("[" + harmless_entries(3) + "," + known + "]"))
                           : pod_with_env("[" + harmless_entries(3) + "," + known + "]"));
    REQUIRE_FALSE(d.error);
    REQUIRE(d.container().env.size() == 1);
    CHECK(d.container().env[0].index == 3);
    CHECK(d.container().env[0].name == policy::kVisibleDevicesEnv);
    CHECK(d.container().env[0].value == "void");
    CHECK_FALSE(d.container().env[0].value_from);
    const auto fields = device_access_fields(d.view);
    INFO("asks for a GPU: " << asks_for_gpu);
    CHECK(fields == (asks_for_gpu ? std::vector<std::string>{"spec.containers[0].env[3]"} : std::vector<std::string>{}));
  }
  // Near spellings are read as what they are.
  struct Near {
    std::string entry;
    bool denied;  // in a container that asks for no GPU
  } nears[] = {
      {R"({"name":"NVIDIA_VISIBLE_DEVICES","value":"void "})", true},
      {R"({"name":"NVIDIA_VISIBLE_DEVICES","value":"void","valueFrom":{"configMapKeyRef":{"name":"a","key":"b"}}})", true},
      {R"({"value":"all","name":"NVIDIA_VISIBLE_DEVICES","value":"void"})", false},  // refused: repeated key
      {R"({"name":"NVIDIA_VISIBLE_DEVICES", "value":"all"})", true},
      {R"({"name":"NVIDIA_VISIBLE_DEVICES","value":"\u0076oid"})", false},
      {R"({ "name":"NVIDIA_VISIBLE_DEVICES","value":"void"})", false},
  };
  for (const auto& near : nears) {
    INFO(near.entry);
    Decoded d(pod_with_env("[" + harmless_entries(1) + "," + near.entry + "]"));
    if (near.entry.find(R"("value":"all","name")") != std::string::npos) {
      REQUIRE(d.error);
      CHECK(d.error->message.find("duplicate key") != std::string::npos);
      continue;
    }
    REQUIRE_FALSE(d.error);
    REQUIRE(d.container().env.size() == 1);
    CHECK(d.container().env[0].index == 1);
    CHECK(device_access_fields(d.view).size() == (near.denied ? 1u : 0u));
  }
}

TEST_CASE("env scan: the built-in names include the device and isolation variables of the runtimes") {
  // SPEC's list, written out here: the scan's table comes from kDeviceEnvVars, so a name dropped
  // there would drop out of every test above without this one.
  const std::vector<std::string> expected = {"NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES",
                                             "NVIDIA_MIG_MONITOR_DEVICES", "NVIDIA_IMEX_CHANNELS",
                                             "NVIDIA_MOFED", "NVIDIA_NVSWITCH", "NVIDIA_GDS", "NVIDIA_GDRCOPY",
                                             "CUDA_DISABLE_CONTROL"};
  CHECK(std::vector<std::string>(policy::kDeviceEnvVars.begin(), policy::kDeviceEnvVars.end()) == expected);
  for (const std::string& name : expected) {
    INFO(name);
    CHECK(scan(R"({"name":")" + name + R"(","value":"1"})"));
  }
}

TEST_CASE("env scan: a policy's own names are found at every offset, with or without A_") {
  const std::vector<std::string> extra = {"SITE_GPU_DEVICES", "X", "HAMI_RESOURCE_NAME", "GPU\"ODD"};
  for (const std::string& name : {std::string("SITE_GPU_DEVICES"), std::string("HAMI_RESOURCE_NAME")}) {
    for (size_t before = 0; before <= 70; ++before) {
      for (size_t after : {size_t{0}, size_t{1}, size_t{31}, size_t{32}, size_t{33}}) {
        INFO(name << " after " << before << " bytes, " << after << " bytes before the end");
        const std::string text = filler(before) + name + filler(after);
        CHECK(scan_with(text, extra));
        CHECK_FALSE(scan_with(text, {}));  // not a built-in name: found only as the policy's
      }
    }
  }
  // A one-letter name is in nearly every text; the filler holds none of the others.
  CHECK(scan_with(filler(40) + "X", {"X"}));
  CHECK_FALSE(scan_with(filler(40), {"SITE_GPU_DEVICES", "HAMI_RESOURCE_NAME"}));
  // A name JSON must escape ('"', '\\') is written with a backslash, found by the first test.
  CHECK(scan_with(filler(10) + R"(GPU\"ODD)", {"GPU\"ODD"}));
  CHECK(scan_with(filler(10) + R"(SITE\u005fGPU_DEVICES)", {"SITE_GPU_DEVICES"}));
  // Cut by the text's end: the padding spells the rest, which is not part of the text.
  const std::string name = "SITE_GPU_DEVICES";
  for (size_t cut = 1; cut < name.size(); ++cut) {
    for (size_t before : {size_t{0}, size_t{20}, size_t{31}, size_t{57}}) {
      INFO("cut " << cut << " after " << before);
      CHECK_FALSE(scan_with(filler(before) + name.substr(0, name.size() - cut), {name}, name.substr(name.size() - cut)));
    }
  }
  // Near names do not count.
  for (const std::string near : {"SITE_GPU_DEVICE", "site_gpu_devices", "SITE-GPU_DEVICES", "ITE_GPU_DEVICES"})
    CHECK_FALSE(scan_with(filler(33) + near + filler(5), {name}));
}

namespace {

// A pod decoded with the policy's own env names.
struct DecodedWith {
  policy::PodDocument document;
  policy::PodView view;
  std::string text;
  std::vector<std::string> names;
  std::optional<policy::DecodeError> error;
  DecodedWith(std::string json, std::vector<std::string> extra) : text(std::move(json)), names(std::move(extra)) {
    error = policy::decode_pod_json(text, false, view, document, names);
  }
};

const policy::CompiledPolicy& site_policy() {
  static const auto loaded = gpu_admission::webhook::load_policy_text(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: site}
spec:
  gpuEnvVars: [SITE_GPU_DEVICES, HAMI_OFF]
)",
                                                                        "site.yaml");
  if (!loaded.ok()) FAIL(loaded.report());
  return *loaded.policy;
}

std::vector<std::string> device_access_messages(const policy::CompiledPolicy& p, policy::PodView& view) {
  policy::Decision decision;
  policy::evaluate(p, view, policy::EvalOptions{}, decision);
  std::vector<std::string> out;
  for (const auto& f : decision.findings)
    if (f.rule == policy::RuleId::GpuDeviceAccess) out.push_back(f.field + ": " + f.message);
  return out;
}

}  // namespace

TEST_CASE("env: entries naming a policy's own name are read only when the decode is given the names") {
  const policy::CompiledPolicy& p = site_policy();
  const std::string env = "[" + harmless_entries(9) + R"(,{"name":"SITE_GPU_DEVICES","value":"all"},)" +
                          harmless_entries(3) + R"(,{"name":"HAMI_OFF","valueFrom":{"fileKeyRef":{}}}])";
  DecodedWith with(pod_with_env(env), p.gpu_env_vars());
  REQUIRE_FALSE(with.error);
  const auto& list = with.view.containers.at(0).env;
  REQUIRE(list.size() == 2);
  CHECK(list[0].index == 9);
  CHECK(list[0].name == "SITE_GPU_DEVICES");
  CHECK(list[1].index == 13);
  CHECK(list[1].value_from);
  // Judged: both denied, at their indices.
  DecodedWith judged(pod_with_env(env), std::vector<std::string>(p.gpu_env_vars()));
  const auto messages = device_access_messages(p, judged.view);
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].starts_with("spec.containers[0].env[9]: container \"main\" sets SITE_GPU_DEVICES to \"all\""));
  CHECK(messages[1].starts_with("spec.containers[0].env[13]: container \"main\" sets HAMI_OFF through valueFrom"));

  // Without the names, the decoder skips the entries: the policy refuses to judge such a view.
  Decoded without(pod_with_env(env));
  REQUIRE_FALSE(without.error);
  CHECK(without.container().env.empty());
  const auto refused = device_access_messages(p, without.view);
  REQUIRE(refused.size() == 1);
  CHECK(refused[0] == "spec: cannot judge env vars against spec.gpuEnvVars: the pod was decoded without them");
  // Decoded with the same names in another list (a copy): judged as usual.
  DecodedWith copy(pod_with_env("[" + harmless_entries(2) + "]"), {"HAMI_OFF", "SITE_GPU_DEVICES", "OTHER"});
  CHECK(device_access_messages(p, copy.view).empty());
}
