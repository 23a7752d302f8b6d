// host-namespaces: hostPID, hostIPC or hostNetwork set to true.
#include "policy/evaluation/rules/rule.h"

namespace gpu_admission::policy {
namespace {

void check_host_namespaces(const RuleContext& ctx, RuleOutput& out) {
  struct Flag {
    bool set;
    std::string_view field;
  };
  for (Flag f : {Flag{ctx.pod.host_pid, "spec.hostPID"}, Flag{ctx.pod.host_ipc, "spec.hostIPC"},
                 Flag{ctx.pod.host_network, "spec.hostNetwork"}}) {
    if (!f.set) continue;
    std::string_view name = f.field.substr(5);
    out.report(ctx.field(f.field), std::string(name) + "=true shares the node's " +
                                       (name == "hostPID" ? "process" : name == "hostIPC" ? "IPC" : "network") +
                                       " namespace");
  }
}

}  // namespace

constinit const RuleEntry kHostNamespacesRule = rule_entry({
    .pod = check_host_namespaces,
    .refuses = "a pod with `hostPID`, `hostIPC` or `hostNetwork` set to true",
});

}  // namespace gpu_admission::policy
