// Red-team tests of gpu-device-access (policy/evaluation/rules/gpu_device_access.cpp, policy/views/host_path.cpp):
// a tenant with namespace-owner rights trying to reach GPUs around the device plugin. Each class
// is tested as a class: every host path table entry with every spelling (trailing slash, "//",
// "/./", "..", /var/run for /run, relative), everything below it, every directory above it, and
// the neighbours that must stay allowed; every device env var in every container kind, literal
// or valueFrom; every envFrom prefix that can spell one; the hide-gpus `void` exception; and the
// policy's own gpuHostPaths and deviceAnnotationPrefixes (the default list, bare keys included).
// Volume mounts at the device list and spec.gpuEnvVars: test_device_list_mounts.cpp. The expected
// lists below are written from the rule's required path list and docs/design.md, not read from
// the implementation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <vector>

#include "policy/evaluation/decision.h"
#include "policy/views/host_path.h"
#include "policy/base/ids.h"
#include "test/policy/policy_judge.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;

namespace {

// hide-gpus is off so that pods are judged exactly as written (as /validate judges an unmutated pod).
const char* kRedTeamPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: red-team}
spec:
  gpuHostPaths: [/opt/gpu-stack, /var/run/site-gpu/, "/home/kubernetes//bin/./nvidia"]
  deviceAnnotationPrefixes: [cdi.k8s.io/, devices.example.com/]
  mutations: {hide-gpus: false}
)";

const char* kDefaultsPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: defaults}
spec: {}
)";

const policy::CompiledPolicy& load(const char* text, const char* name) {
  webhook::PolicyLoad load = webhook::load_policy_text(text, name);
  if (!load.ok()) FAIL(name << " does not load:\n" << load.report());
  static std::vector<webhook::PolicyLoad> keep;  // the policies live for the whole test run
  keep.reserve(8);
  keep.push_back(std::move(load));
  return *keep.back().policy;
}

const policy::CompiledPolicy& red_team() {
  static const policy::CompiledPolicy& p = load(kRedTeamPolicy, "red-team.yaml");
  return p;
}

const policy::CompiledPolicy& defaults() {
  static const policy::CompiledPolicy& p = load(kDefaultsPolicy, "defaults.yaml");
  return p;
}

// The required list: each entry with everything under it.
const std::vector<std::string> kSpecSubtrees = {
    "/dev/dri", "/dev/vfio", "/dev/char", "/var/run/nvidia-container-devices", "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/pod-resources", "/etc/cdi",
    "/var/run/cdi", "/etc/nvidia-container-runtime", "/etc/nvidia-container-toolkit", "/usr/local/nvidia", "/proc"};
// docs/design.md additions: sysfs (PCI BARs), /dev symlinks into /proc, container runtime sockets.
const std::vector<std::string> kAddedSubtrees = {
    "/sys/bus/pci", "/sys/devices", "/sys",           "/dev/fd",        "/dev/stdin",
    "/dev/stdout",  "/dev/stderr",  "/dev/core",      "/run/containerd", "/run/crio",
    "/run/docker.sock", "/run/docker", "/run/cri-dockerd.sock", "/run/k3s"};
// Name prefixes: /dev/nvidia* and /run/nvidia*.
const std::vector<std::string> kNamePrefixes = {"/dev/nvidia", "/run/nvidia"};
// The directories above the entries, denied as exact paths only.
const std::vector<std::string> kAncestors = {"/", "/dev", "/run", "/var", "/var/lib", "/var/lib/kubelet",
                                             "/etc", "/usr", "/usr/local"};
// Must stay allowed: beside an entry, below an ancestor but not below an entry.
const std::vector<std::string> kNeighbours = {
    "/var/log", "/var/lib/data", "/dev/null", "/dev/shm", "/etc/ssl", "/usr/share", "/var/lib/kubelet/pods",
    "/tmp", "/data/dev/nvidia0", "/home", "/opt", "/run/user/1000", "/run/lock", "/var/lib/docker",
    "/etc/cdi-backup", "/dev/drm", "/dev/dri2", "/usr/local/nvidia2", "/usr/local/cuda", "/usr/local/bin",
    "/var/lib/kubelet/plugins2", "/var/lib/kubelet-data", "/var/run-data", "/procfs", "/etc/nvidia",
    "/var/lib/kubelet/device-plugins-old", "/dev/infiniband", "/lib/modules", "/srv/run/nvidia", "/dev/vfio-x",
    "/mnt/sys", "/run/containerd-x", "/var/runx/cdi"};

// Every lexical spelling of the normalized absolute path `p` that the kernel resolves to `p`.
std::vector<std::string> spellings(const std::string& p) {
  std::vector<std::string> out = {p, p + "/", p + "//", p + "/.", p + "/./", "/" + p, "/." + p, "/.." + p,
                                  "/../.." + p};
  if (p != "/") out.push_back(p.substr(1));  // relative: taken as absolute
  for (size_t k = 0; k < p.size(); ++k) {
    if (p[k] != '/' || p == "/") continue;
    const std::string head = p.substr(0, k), tail = p.substr(k);
    out.push_back(head + "/" + tail);          // "//"
    out.push_back(head + "/." + tail);         // "/./"
    out.push_back(head + "/x/.." + tail);      // a detour
    out.push_back(head + "/x/y/../.." + tail);
  }
  for (std::string_view run : {"/run", "/var/run"}) {
    if (!(p == run || p.starts_with(std::string(run) + "/"))) continue;
    const std::string rest = p.substr(run.size());
    for (std::string alias : {"/run", "/var/run", "/var//run", "/var/./run", "/run/../var/run", "/var/run/../run",
                              "/var/run/../var/run"})
      out.push_back(alias + rest);
  }
  return out;
}

Json pod_with_host_path(const std::string& path, const std::string& ns = "sandbox") {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
      "spec": {"containers": [{"name": "main", "image": "registry.example.com/app:1"}],
               "volumes": [{"name": "host", "hostPath": {"path": ""}}]}})");
  pod["metadata"]["namespace"] = ns;
  pod["spec"]["volumes"][0]["hostPath"]["path"] = path;
  return pod;
}

std::vector<policy::Finding> findings_of(const policy::CompiledPolicy& p, const Json& object, policy::RuleId rule) {
  policy_test::Judged r = policy_test::judge(p, object, "sandbox");
  INFO(r.note);
  REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
  std::vector<policy::Finding> out;
  for (const auto& f : r.decision.findings)
    if (f.rule == rule) out.push_back(f);
  return out;
}

std::vector<policy::Finding> gda(const policy::CompiledPolicy& p, const Json& object) {
  return findings_of(p, object, policy::RuleId::GpuDeviceAccess);
}

// The message of the finding at `field`, or "" when there is none.
std::string finding_at(const std::vector<policy::Finding>& fs, const std::string& field) {
  for (const auto& f : fs)
    if (f.field == field) return f.message.empty() ? "(empty message)" : f.message;
  return "";
}

std::string all(const std::vector<policy::Finding>& fs) {
  std::string out;
  for (const auto& f : fs) out += f.field + ": " + f.message + "\n";
  return out.empty() ? "(no findings)" : out;
}

bool host_path_denied(const policy::CompiledPolicy& p, const std::string& path) {
  auto fs = gda(p, pod_with_host_path(path));
  INFO("hostPath " << path << " -> " << all(fs));
  CHECK(fs.size() <= 1);
  return !finding_at(fs, "spec.volumes[0].hostPath.path").empty();
}

void check_denied_in_every_spelling(const policy::CompiledPolicy& p, const std::string& path) {
  for (const auto& s : spellings(path)) {
    INFO("spelling " << s << " of " << path);
    CHECK(host_path_denied(p, s));
  }
}

}  // namespace

TEST_CASE("normalize_host_path: every spelling of a path, /var/run folded as the kernel resolves it",
          "[gpu-device-access][host-path]") {
  using policy::normalize_host_path;
  CHECK(normalize_host_path("/dev/../dev//nvidia0") == "/dev/nvidia0");
  CHECK(normalize_host_path("/dev/nvidia0/") == "/dev/nvidia0");
  CHECK(normalize_host_path("/./dev/./nvidia0") == "/dev/nvidia0");
  CHECK(normalize_host_path("/var/run/nvidia/driver") == "/run/nvidia/driver");
  CHECK(normalize_host_path("/var//run/cdi") == "/run/cdi");
  CHECK(normalize_host_path("/var/./run/../run/cdi") == "/run/cdi");
  CHECK(normalize_host_path("/run/../var/run/cdi") == "/run/cdi");
  CHECK(normalize_host_path("dev/nvidia0") == "/dev/nvidia0");
  CHECK(normalize_host_path("/proc/1/root") == "/proc/1/root");
  CHECK(normalize_host_path("/proc/self/root/etc/cdi") == "/proc/self/root/etc/cdi");
  CHECK(normalize_host_path("") == "/");
  CHECK(normalize_host_path("//") == "/");
  CHECK(normalize_host_path("/var/run") == "/run");
  CHECK(normalize_host_path("/var/runx") == "/var/runx");
  CHECK(normalize_host_path("/x/var/run") == "/x/var/run");
  // /var/run is a symlink to /run, whose parent is /: the kernel resolves "/var/run/.." to "/".
  CHECK(normalize_host_path("/var/run/..") == "/");
  CHECK(normalize_host_path("/var/run/../etc/cdi") == "/etc/cdi");
  CHECK(normalize_host_path("/var/run/../var/lib/kubelet") == "/var/lib/kubelet");
  // A NUL ends the path for mount(2) (JSON can carry one as \u0000).
  CHECK(normalize_host_path(std::string("/dev\0/data", 10)) == "/dev");
  CHECK(normalize_host_path(std::string("/etc/cdi\0", 9)) == "/etc/cdi");
  for (const std::string p : {"/dev/nvidia0", "/run/cdi", "/", "/var/lib/kubelet/plugins"})
    for (const auto& s : spellings(p)) {
      INFO(s);
      CHECK(normalize_host_path(s) == p);
    }
}

TEST_CASE("the host path table is the SPEC's list, its additions, and their derived ancestors",
          "[gpu-device-access][host-path]") {
  std::set<std::string> expected_subtrees;
  for (const auto& p : kSpecSubtrees) expected_subtrees.insert(policy::normalize_host_path(p));
  for (const auto& p : kAddedSubtrees) expected_subtrees.insert(p);
  std::set<std::string> subtrees, prefixes, exact;
  for (const auto& e : defaults().gpu_host_paths().entries()) {
    INFO(e.display << ": " << e.reason);
    CHECK_FALSE(e.reason.empty());
    CHECK(e.path == policy::normalize_host_path(e.path));
    auto& bucket = e.match == policy::HostPathMatch::Subtree      ? subtrees
                   : e.match == policy::HostPathMatch::NamePrefix ? prefixes
                                                                  : exact;
    bucket.insert(e.path);
  }
  CHECK(subtrees == expected_subtrees);
  CHECK(prefixes == std::set<std::string>(kNamePrefixes.begin(), kNamePrefixes.end()));
  CHECK(exact == std::set<std::string>(kAncestors.begin(), kAncestors.end()));
  // An ancestor's reason names what it contains.
  const auto* root = defaults().gpu_host_paths().find("/");
  REQUIRE(root);
  CHECK(root->reason.find("contains /dev/nvidia*") != std::string::npos);
}

TEST_CASE("every host path entry is denied in every spelling, with everything under it",
          "[gpu-device-access][host-path]") {
  std::vector<std::string> entries = kSpecSubtrees;
  entries.insert(entries.end(), kAddedSubtrees.begin(), kAddedSubtrees.end());
  entries.push_back("/run/nvidia-container-devices");  // /var/run/... is /run/...
  entries.push_back("/run/cdi");
  for (const auto& e : entries) {
    check_denied_in_every_spelling(red_team(), e);
    check_denied_in_every_spelling(red_team(), e + "/child");
    check_denied_in_every_spelling(red_team(), e + "/a/b/c.sock");
  }
  for (const auto& prefix : kNamePrefixes) {
    for (const std::string suffix : {"", "0", "7", "ctl", "-uvm", "-uvm-tools", "-modeset", "-caps/nvidia-cap1",
                                     "-caps-imex-channels/channel0", "/driver", "/mps", "-persistenced/socket",
                                     "-fabricmanager", "-container-devices/GPU-1234"})
      check_denied_in_every_spelling(red_team(), prefix + suffix);
  }
  // The SPEC's examples of what lies under /proc and /sys.
  for (const std::string p : {"/proc/1/root", "/proc/self/root/etc/cdi", "/proc/1/root/dev/nvidia0",
                              "/sys/bus/pci/devices/0000:3b:00.0/resource0",
                              "/sys/class/drm/card0/device/resource1", "/sys/dev/char/226:0/device",
                              "/sys/kernel/iommu_groups/12/devices/0000:3b:00.0", "/sys/module/nvidia/drivers"})
    check_denied_in_every_spelling(red_team(), p);
}

TEST_CASE("every directory above an entry is denied, its other children are not",
          "[gpu-device-access][host-path]") {
  for (const auto& a : kAncestors) {
    check_denied_in_every_spelling(red_team(), a);
    const std::string child = (a == "/" ? "" : a) + "/unrelated-child";
    INFO("a child of " << a << " that is no entry");
    CHECK_FALSE(host_path_denied(red_team(), child));
  }
  // An ancestor's message says what it contains.
  std::string message = finding_at(gda(red_team(), pod_with_host_path("/var/lib")), "spec.volumes[0].hostPath.path");
  CHECK(message.find("contains /var/lib/kubelet/device-plugins") != std::string::npos);
  message = finding_at(gda(red_team(), pod_with_host_path("/var/run/")), "spec.volumes[0].hostPath.path");
  CHECK(message.find("(/run)") != std::string::npos);
}

TEST_CASE("neighbours of the entries stay allowed", "[gpu-device-access][host-path]") {
  for (const auto& n : kNeighbours) {
    CHECK_FALSE(host_path_denied(red_team(), n));
    CHECK_FALSE(host_path_denied(defaults(), n));
    CHECK_FALSE(host_path_denied(red_team(), n + "/"));
    CHECK_FALSE(host_path_denied(red_team(), n + "/child"));
  }
  // Appending to an entry's last name makes a different path, except under a name prefix.
  for (const auto& e : kSpecSubtrees) {
    const std::string p = policy::normalize_host_path(e) + "-other";
    if (p.starts_with("/run/nvidia")) continue;  // /run/nvidia* covers it
    CHECK_FALSE(host_path_denied(red_team(), p));
  }
}

TEST_CASE("spec.gpuHostPaths entries are denied with everything under them, their parents are not",
          "[gpu-device-access][host-path]") {
  for (const std::string p : {"/opt/gpu-stack", "/run/site-gpu", "/home/kubernetes/bin/nvidia"}) {
    check_denied_in_every_spelling(red_team(), p);
    check_denied_in_every_spelling(red_team(), p + "/lib64/libcuda.so");
    CHECK_FALSE(host_path_denied(red_team(), p + "2"));
    CHECK_FALSE(host_path_denied(defaults(), p));  // only this policy lists them
    const std::string message = finding_at(gda(red_team(), pod_with_host_path(p)), "spec.volumes[0].hostPath.path");
    CHECK(message.find("spec.gpuHostPaths") != std::string::npos);
  }
  for (const std::string parent : {"/opt", "/home/kubernetes/bin", "/home/kubernetes", "/home"})
    CHECK_FALSE(host_path_denied(red_team(), parent));
  // "/run" is denied as an ancestor of the built-in entries, not because of /run/site-gpu.
  CHECK(host_path_denied(defaults(), "/run"));
}

TEST_CASE("hostPath findings name the volume's field, also in workload templates and with several volumes",
          "[gpu-device-access][host-path]") {
  Json pod = pod_with_host_path("/data");
  pod["spec"]["volumes"].push_back({{"name", "scratch"}, {"emptyDir", Json::object()}});
  pod["spec"]["volumes"].push_back({{"name", "gpu"}, {"hostPath", {{"path", "/dev//nvidia0/"}}}});
  auto fs = gda(red_team(), pod);
  INFO(all(fs));
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].field == "spec.volumes[2].hostPath.path");
  CHECK(fs[0].message.find("\"/dev//nvidia0/\" (/dev/nvidia0)") != std::string::npos);

  Json deployment = Json::parse(R"({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
      "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}}}})");
  deployment["metadata"]["namespace"] = "sandbox";
  deployment["spec"]["template"]["spec"] = pod_with_host_path("/var/run/../etc/cdi")["spec"];
  fs = gda(red_team(), deployment);
  INFO(all(fs));
  CHECK_FALSE(finding_at(fs, "spec.template.spec.volumes[0].hostPath.path").empty());
}

namespace {

constexpr std::array<const char*, 9> kDeviceVars = {
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES",
    "NVIDIA_IMEX_CHANNELS",   "NVIDIA_MOFED",              "NVIDIA_NVSWITCH",
    "NVIDIA_GDS",             "NVIDIA_GDRCOPY",            "CUDA_DISABLE_CONTROL"};

struct ContainerKindCase {
  const char* list;  // where the container under test is: always index 0 of that list
  bool sidecar;
};
const std::vector<ContainerKindCase> kKinds = {
    {"containers", false}, {"initContainers", false}, {"initContainers", true}, {"ephemeralContainers", false}};

// A pod whose container under test (index 0 of `kind.list`) has env [HARMLESS, var] and envFrom
// [{configMapRef} (no prefix), {prefix}] when `prefix` is given.
Json pod_with_env(const ContainerKindCase& kind, const Json& var, const Json& resources = nullptr,
                  const char* prefix = nullptr) {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "sandbox"},
      "spec": {"containers": []}})");
  Json c = {{"name", "under-test"}, {"image", "registry.example.com/app:1"}};
  c["env"] = Json::array({{{"name", "HARMLESS"}, {"value", "1"}}});
  if (!var.is_null()) c["env"].push_back(var);
  if (prefix) {
    c["envFrom"] = Json::array({{{"configMapRef", {{"name", "plain"}}}}});
    c["envFrom"].push_back({{"prefix", prefix}, {"configMapRef", {{"name", "keys"}}}});
  }
  if (!resources.is_null()) c["resources"] = resources;
  if (kind.sidecar) c["restartPolicy"] = "Always";
  pod["spec"][kind.list] = Json::array({c});
  if (std::string(kind.list) != "containers")
    pod["spec"]["containers"].push_back({{"name", "main"}, {"image", "registry.example.com/app:1"}});
  return pod;
}

std::string env_field(const ContainerKindCase& kind, int index) {
  return std::string("spec.") + kind.list + "[0].env[" + std::to_string(index) + "]";
}

Json env_var(const char* name, const Json& how) {
  Json v = {{"name", name}};
  for (auto& [k, val] : how.items()) v[k] = val;
  return v;
}

const std::vector<Json> kDeniedValues = {
    {{"value", "all"}}, {{"value", "0"}}, {{"value", "GPU-8f6c1a2e"}}, {{"value", ""}}, {{"value", "none"}},
    {{"value", "VOID"}}, {{"value", "void "}}, {{"value", "void,0"}},
    {{"valueFrom", {{"configMapKeyRef", {{"name", "gpus"}, {"key", "devices"}}}}}},
    {{"valueFrom", {{"secretKeyRef", {{"name", "gpus"}, {"key", "devices"}}}}}},
    {{"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.annotations['devices']"}}}}}},
    {{"value", "void"}, {"valueFrom", {{"configMapKeyRef", {{"name", "gpus"}, {"key", "devices"}}}}}}};

// Resources that make a container ask for a GPU.
const std::vector<Json> kGpuResources = {
    {{"limits", {{"nvidia.com/gpu", 1}}}},           {{"requests", {{"nvidia.com/gpu", "1"}}}},
    {{"limits", {{"nvidia.com/mig-1g.10gb", 1}}}},   {{"limits", {{"nvidia.com/gpu.shared", 2}}}},
    {{"limits", {{"nvidia.com/gpu", "0.5"}}}},       {{"limits", {{"nvidia.com/gpu", "1k"}}}},
    {{"limits", {{"nvidia.com/gpu", "500m"}}}}};

}  // namespace

TEST_CASE("every device env var is denied in every container kind, as a value or through valueFrom",
          "[gpu-device-access][env]") {
  for (const auto& kind : kKinds) {
    for (const char* var : kDeviceVars) {
      for (const auto& how : kDeniedValues) {
        INFO(kind.list << (kind.sidecar ? " (sidecar) " : " ") << var << " " << how.dump());
        auto fs = gda(red_team(), pod_with_env(kind, env_var(var, how)));
        INFO(all(fs));
        CHECK(fs.size() == 1);
        CHECK_FALSE(finding_at(fs, env_field(kind, 1)).empty());
      }
      // "void" is the one exception, and only for NVIDIA_VISIBLE_DEVICES in a container without GPUs.
      auto fs = gda(red_team(), pod_with_env(kind, env_var(var, {{"value", "void"}})));
      INFO(kind.list << " " << var << "=void: " << all(fs));
      CHECK(fs.empty() == (std::string(var) == "NVIDIA_VISIBLE_DEVICES"));
    }
  }
}

TEST_CASE("NVIDIA_VISIBLE_DEVICES=void is denied in a container that asks for a GPU", "[gpu-device-access][env]") {
  const Json void_var = env_var("NVIDIA_VISIBLE_DEVICES", {{"value", "void"}});
  for (const auto& kind : kKinds) {
    if (std::string(kind.list) == "ephemeralContainers") continue;  // they have no resources
    for (const auto& resources : kGpuResources) {
      INFO(kind.list << (kind.sidecar ? " (sidecar) " : " ") << resources.dump());
      auto fs = gda(red_team(), pod_with_env(kind, void_var, resources));
      INFO(all(fs));
      CHECK_FALSE(finding_at(fs, env_field(kind, 1)).empty());
    }
    // Zero GPUs and other resources ask for none.
    for (const Json& resources : {Json{{"limits", {{"nvidia.com/gpu", 0}}}}, Json{{"limits", {{"cpu", "2"}}}},
                                 Json{{"limits", {{"nvidia.com/gpu", "0"}, {"memory", "1Gi"}}}}}) {
      auto fs = gda(red_team(), pod_with_env(kind, void_var, resources));
      INFO(kind.list << " " << resources.dump() << ": " << all(fs));
      CHECK(fs.empty());
    }
  }
  // A second entry with another value is judged on its own (the last entry wins in the kubelet).
  Json pod = pod_with_env(kKinds[0], void_var);
  pod["spec"]["containers"][0]["env"].push_back(env_var("NVIDIA_VISIBLE_DEVICES", {{"value", "all"}}));
  auto fs = gda(red_team(), pod);
  INFO(all(fs));
  CHECK(fs.size() == 1);
  CHECK_FALSE(finding_at(fs, "spec.containers[0].env[2]").empty());
}

TEST_CASE("env vars that are not device vars are allowed", "[gpu-device-access][env]") {
  for (const char* name : {"CUDA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_REQUIRE_CUDA",
                           "NVIDIA_VISIBLE_DEVICE", "NVIDIA_VISIBLE_DEVICES_", "nvidia_visible_devices",
                           "XNVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG", "NVIDIA_IMEX_CHANNEL", "NVIDIA_"}) {
    for (const auto& kind : kKinds) {
      auto fs = gda(red_team(), pod_with_env(kind, env_var(name, {{"value", "all"}})));
      INFO(name << " in " << kind.list << ": " << all(fs));
      CHECK(fs.empty());
    }
  }
}

TEST_CASE("an envFrom prefix that can spell a device var with a non-empty key is denied",
          "[gpu-device-access][env]") {
  std::set<std::string> prefixes;
  for (std::string var : kDeviceVars)
    for (size_t k = 1; k < var.size(); ++k) prefixes.insert(var.substr(0, k));  // N, NV, ..., NVIDIA_IMEX_CHANNEL
  CHECK(prefixes.count("NVIDIA_"));
  CHECK(prefixes.count("NVIDIA_VISIBLE_"));
  for (const auto& kind : kKinds) {
    const std::string field = std::string("spec.") + kind.list + "[0].envFrom[1].prefix";
    for (const auto& prefix : prefixes) {
      auto fs = gda(red_team(), pod_with_env(kind, nullptr, nullptr, prefix.c_str()));
      INFO(kind.list << " prefix " << prefix << ": " << all(fs));
      CHECK(fs.size() == 1);
      CHECK_FALSE(finding_at(fs, field).empty());
    }
    // No key is empty, so a whole name (or more) as the prefix spells another name; an empty
    // prefix is not judged (the keys live in the ConfigMap or Secret).
    for (const char* prefix : {"", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES_", "NVIDIA_IMEX_CHANNELS",
                               "nvidia_", "n", "X", "MY_NVIDIA_", "NVIDIA_DRIVER_", "CUDA_X",
                               "NVIDIA_VISIBLE_DEVICESX", "NVIDIA_GDS", "CUDA_DISABLE_CONTROL", "CUDA_M"}) {
      auto fs = gda(red_team(), pod_with_env(kind, nullptr, nullptr, prefix));
      INFO(kind.list << " prefix \"" << prefix << "\": " << all(fs));
      CHECK(fs.empty());
    }
  }
}

TEST_CASE("with hide-gpus on, a pod without GPUs passes and what hide-gpus cannot fix is still denied",
          "[gpu-device-access][env]") {
  // defaults() runs hide-gpus: validation sees the NVIDIA_VISIBLE_DEVICES=void it adds.
  for (const auto& kind : kKinds) {
    auto fs = gda(defaults(), pod_with_env(kind, nullptr));
    INFO(kind.list << ": " << all(fs));
    CHECK(fs.empty());
    fs = gda(defaults(), pod_with_env(kind, env_var("NVIDIA_VISIBLE_DEVICES", {{"value", "all"}})));
    CHECK_FALSE(finding_at(fs, env_field(kind, 1)).empty());
    fs = gda(defaults(), pod_with_env(kind, nullptr, nullptr, "NVIDIA_MIG_"));
    CHECK_FALSE(finding_at(fs, std::string("spec.") + kind.list + "[0].envFrom[1].prefix").empty());
  }
}

TEST_CASE("pod annotations with a prefix from deviceAnnotationPrefixes are denied",
          "[gpu-device-access][annotations]") {
  auto with_annotation = [](const std::string& key) {
    Json pod = pod_with_host_path("/data");
    pod["metadata"]["annotations"] = {{"harmless", "1"}, {key, "nvidia.com/gpu=all"}};
    return pod;
  };
  auto denied = [&](const policy::CompiledPolicy& p, const std::string& key) {
    auto fs = gda(p, with_annotation(key));
    INFO(key << ": " << all(fs));
    CHECK(fs.size() <= 1);
    return !finding_at(fs, "metadata.annotations[\"" + key + "\"]").empty();
  };
  // A key under a prefix, or the prefix itself without its trailing '/'.
  for (const std::string key : {"cdi.k8s.io/gpu", "cdi.k8s.io/nvidia.com_gpu.all", "devices.example.com/x",
                                "cdi.k8s.io", "devices.example.com", "cdi.k8s.io/"})
    CHECK(denied(red_team(), key));
  // Prefixes match from the start, case-sensitively (as containerd's CDI annotation parser does).
  for (const std::string key : {"example.com/cdi.k8s.io/gpu", "CDI.K8S.IO/gpu", "gpu-admission.io/mig-profile",
                                "cdi.k8s.iox/gpu", "cdi.k8s.i", "cdi.k8s.iox", "devices.example.comx",
                                "nvidia.cdi.k8s.io/pod"})  // not in red-team's own list
    CHECK_FALSE(denied(red_team(), key));
  // The default list; a policy's own list replaces it.
  const std::vector<std::string> kDefaultPrefixes = {
      "cdi.k8s.io/",     "nvidia.cdi.k8s.io/", "devices.noderesource.dev/", "cdi-devices.noderesource.dev/",
      "devices.nri.io/", "cdi-devices.nri.io/", "mounts.noderesource.dev/", "mounts.nri.io/",
      "io.kubernetes.cri-o.Devices"};
  CHECK(defaults().device_annotation_prefixes() == kDefaultPrefixes);
  for (const std::string& prefix : kDefaultPrefixes) {
    INFO(prefix);
    if (!prefix.ends_with('/')) continue;  // CRI-O's key, below
    CHECK(denied(defaults(), prefix + "container.main"));
    CHECK(denied(defaults(), prefix + "pod"));
    CHECK(denied(defaults(), prefix.substr(0, prefix.size() - 1)));             // the bare key
    CHECK_FALSE(denied(defaults(), prefix.substr(0, prefix.size() - 1) + "x"));  // another key
    CHECK_FALSE(denied(defaults(), prefix.substr(0, prefix.size() - 1) + ".example/x"));
    CHECK_FALSE(denied(defaults(), "example.com/" + prefix + "x"));
  }
  // NRI's device injector mounts any host path from these; a domain that merely begins with one is another key.
  for (const std::string key : {"mounts.noderesource.dev/container.main", "mounts.nri.io/pod", "mounts.nri.io",
                                "mounts.noderesource.dev"})
    CHECK(denied(defaults(), key));
  for (const std::string key : {"mounts.nri.io.example.com/x", "mounts.noderesource.dev.example.com/x",
                                "example.com/mounts.nri.io", "mounts.nri.iox/pod"})
    CHECK_FALSE(denied(defaults(), key));
  // CRI-O's device list: an entry without a trailing '/' matches keys that begin with it, as
  // written (CRI-O compares the key exactly, so other cases are other keys).
  for (const std::string key : {"io.kubernetes.cri-o.Devices", "io.kubernetes.cri-o.Devices/x"})
    CHECK(denied(defaults(), key));
  for (const std::string key : {"io.kubernetes.cri-o.devices", "io.kubernetes.cri-o.Device",
                                "io.kubernetes.cri-o.TrustedSandbox", "io.kubernetes.cri-o"})
    CHECK_FALSE(denied(defaults(), key));
  CHECK_FALSE(denied(defaults(), "devices.example.com/x"));
}
