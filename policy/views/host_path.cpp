// Host path normalization and the host path tables of gpu-device-access and mps-adversarial
// (see host_path.h; the reasoning behind each entry is in docs/design.md).
#include "policy/views/host_path.h"

namespace gpu_admission::policy {
namespace {

using M = HostPathMatch;

// The GPU stack on a node: device nodes, runtime state and device lists, kubelet sockets that
// hand out devices, CDI specs, runtime configuration. Most specific first: the first entry that
// matches gives the reason. Ancestors are derived (add_ancestors_of_first), never listed.
const std::vector<HostPathSpec> kGpuHostPaths = {
    // The required list: paths gpu-device-access must refuse.
    {"/dev/nvidia", M::NamePrefix, "NVIDIA device nodes"},
    {"/dev/dri", M::Subtree, "DRI GPU device nodes"},
    {"/dev/vfio", M::Subtree, "VFIO device nodes (GPUs bound for passthrough)"},
    {"/dev/char", M::Subtree, "symlinks to every character device node, GPUs included"},
    {"/var/run/nvidia-container-devices", M::Subtree, "the NVIDIA container runtime's device lists"},
    {"/run/nvidia", M::NamePrefix, "NVIDIA driver root, runtime state and daemon sockets"},
    {"/var/lib/kubelet/device-plugins", M::Subtree, "device plugin sockets, where the kubelet allocates GPUs"},
    {"/var/lib/kubelet/plugins_registry", M::Subtree, "kubelet plugin registration sockets"},
    {"/var/lib/kubelet/plugins", M::Subtree, "DRA and CSI driver sockets"},
    {"/var/lib/kubelet/pod-resources", M::Subtree, "the kubelet pod-resources API (which pod holds which GPU)"},
    {"/etc/cdi", M::Subtree, "CDI device specifications"},
    {"/var/run/cdi", M::Subtree, "CDI device specifications"},
    {"/etc/nvidia-container-runtime", M::Subtree, "NVIDIA container runtime configuration"},
    {"/etc/nvidia-container-toolkit", M::Subtree, "NVIDIA container toolkit configuration"},
    {"/usr/local/nvidia", M::Subtree, "the NVIDIA driver and toolkit installation"},
    {"/proc", M::Subtree, "host processes: /proc/1/root is the host's /"},
    // Additions (docs/design.md). sysfs: PCI resource files map GPU BAR memory, and every sysfs
    // tree reaches them through symlinks the kernel follows when it resolves the mount source
    // (/sys/class/drm/card0/device/resource0), so all of /sys is an entry.
    {"/sys/bus/pci", M::Subtree, "PCI devices: their resource files map GPU BAR memory"},
    {"/sys/devices", M::Subtree, "the sysfs device tree: PCI resource files map GPU BAR memory"},
    {"/sys", M::Subtree, "sysfs, whose symlinks lead into /sys/devices (PCI resource files map GPU BAR memory)"},
    // Symlinks into /proc.
    {"/dev/fd", M::Subtree, "a symlink to /proc/self/fd"},
    {"/dev/stdin", M::Subtree, "a symlink into /proc/self/fd"},
    {"/dev/stdout", M::Subtree, "a symlink into /proc/self/fd"},
    {"/dev/stderr", M::Subtree, "a symlink into /proc/self/fd"},
    {"/dev/core", M::Subtree, "a symlink to /proc/kcore"},
    // Container runtime sockets: whoever reaches one starts containers with any device.
    {"/run/containerd", M::Subtree, "the containerd socket, which starts containers with any GPU"},
    {"/run/crio", M::Subtree, "the CRI-O socket, which starts containers with any GPU"},
    {"/run/docker.sock", M::Subtree, "the Docker socket, which starts containers with any GPU"},
    {"/run/docker", M::Subtree, "Docker runtime state and sockets"},
    {"/run/cri-dockerd.sock", M::Subtree, "the cri-dockerd socket, which starts containers with any GPU"},
    {"/run/k3s", M::Subtree, "k3s's containerd socket, which starts containers with any GPU"},
};

// MPS: the control daemon's pipe directory, on the host or the device plugin's.
const std::vector<HostPathSpec> kMpsPipeDirs = {
    {"/tmp/nvidia-mps", M::Subtree, "the MPS pipe directory"},
    {"/run/nvidia/mps", M::Subtree, "the device plugin's MPS pipe and shared memory directory"},
};

bool entry_matches(const HostPathEntry& e, std::string_view p) {
  switch (e.match) {
    case M::Exact: return p == e.path;
    case M::NamePrefix: return p.starts_with(e.path);
    case M::Subtree: return path_within(p, e.path);
  }
  return false;
}

// "/a/b" -> "/a"; "/a" -> "/"; "/" -> "" (no parent).
std::string_view parent_of(std::string_view p) {
  if (p == "/") return {};
  size_t slash = p.rfind('/');
  return slash == 0 ? std::string_view("/") : p.substr(0, slash);
}

HostPathTable table_of(const std::vector<HostPathSpec>& specs) {
  HostPathTable t;
  for (const auto& s : specs) t.add(s.path, s.match, std::string(s.reason));
  return t;
}

}  // namespace

std::string normalize_host_path(std::string_view path) {
  path = path.substr(0, path.find('\0'));
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
      // /var/run is a symlink to /run: fold it as soon as it appears, so that a later ".."
      // climbs out of /run as the kernel would ("/var/run/../etc" is "/etc").
      if (parts.size() == 2 && parts[0] == "var" && parts[1] == "run") parts.erase(parts.begin());
    }
    i = j + 1;
  }
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

bool path_within(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  if (!path.starts_with(dir)) return false;
  return path.size() == dir.size() || path[dir.size()] == '/';
}

void HostPathTable::add(std::string_view path, HostPathMatch match, std::string reason) {
  HostPathEntry e;
  e.path = normalize_host_path(path);
  e.display = match == M::NamePrefix ? e.path + "*" : e.path;
  e.match = match;
  e.reason = std::move(reason);
  entries_.push_back(std::move(e));
}

void HostPathTable::add_ancestors_of_first(size_t count) {
  for (size_t i = 0; i < count && i < entries_.size(); ++i) {
    // Copies: add() may reallocate entries_.
    const std::string below = entries_[i].display + " (" + entries_[i].reason + ")";
    const std::string path = entries_[i].path;
    for (std::string_view dir = parent_of(path); !dir.empty(); dir = parent_of(dir)) {
      if (matches(dir)) continue;
      add(dir, M::Exact, "a directory that contains " + below);
    }
  }
}

const HostPathEntry* HostPathTable::find(std::string_view normalized) const {
  for (const auto& e : entries_)
    if (entry_matches(e, normalized)) return &e;
  return nullptr;
}

const std::vector<HostPathSpec>& builtin_gpu_host_path_specs() { return kGpuHostPaths; }

HostPathTable make_gpu_host_path_table(const std::vector<std::string>& policy_paths) {
  HostPathTable t = table_of(kGpuHostPaths);
  const size_t builtin = t.entries().size();
  for (const auto& p : policy_paths) t.add(p, M::Subtree, "listed in the policy's spec.gpuHostPaths");
  t.add_ancestors_of_first(builtin);
  return t;
}

const HostPathTable& mps_pipe_host_paths() {
  static const HostPathTable table = [] {
    HostPathTable t = table_of(kMpsPipeDirs);
    t.add_ancestors_of_first(t.entries().size());
    return t;
  }();
  return table;
}

}  // namespace gpu_admission::policy
