// Pod templates of objects, in CEL; see pod_sources.h.
#include "webhook/backstop/pod_sources.h"

#include <set>

#include "policy/config/template_paths.h"
#include "webhook/backstop/cel_text.h"

namespace gpu_admission::webhook::backstop {
namespace {

using policy::PathStep;

std::string field_has(const std::string& e, const std::string& f) {
  return is_cel_identifier(f) ? "has(" + e + "." + f + ")" : "(" + quote(f) + " in " + e + ")";
}
std::string field_get(const std::string& e, const std::string& f) {
  return is_cel_identifier(f) ? e + "." + f : e + "[" + quote(f) + "]";
}

// The fields of `steps` [from, to) below `e`: their presence, and the value they lead to.
struct FieldRun {
  std::string guard;  // "" when there are none
  std::string value;
};
FieldRun fields(const std::string& e, const std::vector<PathStep>& steps, size_t from, size_t to) {
  FieldRun r{"", e};
  for (size_t i = from; i < to; ++i) {
    r.guard += (r.guard.empty() ? "" : " && ") + field_has(r.value, steps[i].name);
    r.value = field_get(r.value, steps[i].name);
  }
  return r;
}

// The items a wildcard step goes over.
std::string items(const std::string& value, const PathStep& step, const std::string& var) {
  if (step.kind == PathStep::Kind::MapValues) return value + ".map(" + var + ", " + value + "[" + var + "])";
  return value;
}

// `.filter(v, guard).map(v, value)` for the fields after a wildcard, and the wrap of a pod spec.
std::string select(const std::vector<PathStep>& steps, size_t from, size_t to, const std::string& var, bool pod_spec) {
  FieldRun r = fields(var, steps, from, to);
  std::string out = r.guard.empty() ? "" : ".filter(" + var + ", " + r.guard + ")";
  std::string value = pod_spec ? "{'spec': " + r.value + "}" : r.value;
  if (value != var) out += ".map(" + var + ", " + value + ")";
  return out;
}

std::string guarded(const std::string& guard, const std::string& list) {
  return guard.empty() ? list : "(" + guard + " ? " + list + " : [])";
}

// A list(list(map)) expression of one template path below `root`; "" when it has more than two
// wildcards.
std::string path_groups(const std::string& root, const policy::TemplatePath& path) {
  const auto& steps = path.steps;
  std::vector<size_t> wild;
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].kind != PathStep::Kind::Field) wild.push_back(i);
  if (wild.empty()) {
    FieldRun r = fields(root, steps, 0, steps.size());
    std::string value = path.pod_spec ? "{'spec': " + r.value + "}" : r.value;
    return guarded(r.guard, "[[" + value + "]]");
  }
  FieldRun head = fields(root, steps, 0, wild[0]);
  if (wild.size() == 1) {
    return guarded(head.guard, "[" + items(head.value, steps[wild[0]], "k0") +
                                   select(steps, wild[0] + 1, steps.size(), "x0", path.pod_spec) + "]");
  }
  if (wild.size() > 2) return "";
  // Two wildcards: one group per outer item.
  FieldRun middle = fields("x0", steps, wild[0] + 1, wild[1]);
  std::string inner = items(middle.value, steps[wild[1]], "k1") +
                      select(steps, wild[1] + 1, steps.size(), "x1", path.pod_spec);
  std::string outer = items(head.value, steps[wild[0]], "k0");
  if (!middle.guard.empty()) outer += ".filter(x0, " + middle.guard + ")";
  return guarded(head.guard, outer + ".map(x0, " + inner + ")");
}

std::string group_is(const std::string& group) {
  if (group.empty()) return "!variables.apiVersion.contains('/')";
  return "variables.apiVersion.startsWith(" + quote(group + "/") + ")";
}

// The kinds judged by template paths, in the webhook's order: spec.workloads, then the built-in ones.
std::vector<const policy::WorkloadKindDef*> path_kinds(const policy::CompiledPolicy& policy) {
  std::vector<const policy::WorkloadKindDef*> out;
  auto known = [&](const policy::WorkloadKindDef& d) {
    for (auto* k : out)
      if (k->group == d.group && k->kind == d.kind) return true;
    return false;
  };
  for (const auto& d : policy.policy_workload_kinds())
    if (!known(d)) out.push_back(&d);
  for (const auto& d : policy::builtin_ml_kinds())
    if (!known(d)) out.push_back(&d);
  return out;
}

// The core kinds by name (policy/decoding/pod_decoder.cpp), after the path kinds.
constexpr const char* kTemplateKinds = "['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', "
                                       "'ReplicationController', 'Job']";

}  // namespace

std::string kind_expr() {
  return "has(object.kind) ? object.kind : (has(request.kind) && has(request.kind.kind) ? request.kind.kind : '')";
}

std::string api_version_expr() {
  return "has(object.apiVersion) ? object.apiVersion : (has(request.kind) && has(request.kind.version) ? "
         "(has(request.kind.group) && request.kind.group != '' ? request.kind.group + '/' : '') + request.kind.version : '')";
}

std::string template_groups(const policy::CompiledPolicy& policy, const std::string& root,
                            std::vector<std::string>& notes) {
  std::string out;
  for (const policy::WorkloadKindDef* def : path_kinds(policy)) {
    std::string groups;
    for (const auto& path : def->templates) {
      std::string g = path_groups(root, path);
      if (g.empty()) {
        notes.push_back(def->kind + " (" + def->group + ") template path " + path.text +
                        ": more than two wildcards, not followed");
        continue;
      }
      groups += (groups.empty() ? "" : " + ") + g;
    }
    if (groups.empty()) groups = "[]";
    out += group_is(def->group) + " && variables.kind == " + quote(def->kind) + " ? " + groups + " :\n";
  }
  out += "variables.kind == 'Pod' ? [[" + root + "]] :\n";
  out += "variables.kind in " + std::string(kTemplateKinds) + " ? " +
         guarded(has_path(root, "spec.template"), "[[" + root + ".spec.template]]") + " :\n";
  out += "variables.kind == 'CronJob' ? " +
         guarded(has_path(root, "spec.jobTemplate.spec.template"), "[[" + root + ".spec.jobTemplate.spec.template]]") +
         " :\n[]";
  return out;
}

Json template_resource_rules(const policy::CompiledPolicy& policy, const std::vector<std::string>& pod_updates) {
  auto rule = [](Json groups, Json operations, Json resources) {
    return Json{{"apiGroups", std::move(groups)},
                {"apiVersions", Json::array({"*"})},
                {"operations", std::move(operations)},
                {"resources", std::move(resources)}};
  };
  Json out = Json::array();
  out.push_back(rule({""}, {"CREATE"}, {"pods", "replicationcontrollers", "podtemplates"}));
  if (!pod_updates.empty()) out.push_back(rule({""}, {"UPDATE"}, pod_updates));
  out.push_back(rule({"apps"}, {"CREATE"}, {"deployments", "statefulsets", "daemonsets", "replicasets"}));
  out.push_back(rule({"batch"}, {"CREATE"}, {"jobs", "cronjobs"}));
  std::set<std::string> groups;
  for (const policy::WorkloadKindDef* def : path_kinds(policy))
    if (!def->group.empty() && def->group != "apps" && def->group != "batch") groups.insert(def->group);
  // Every resource of the ML groups: the expressions tell the kinds apart.
  Json names = Json::array();
  for (const auto& g : groups) names.push_back(g);
  if (!names.empty()) out.push_back(rule(names, {"CREATE"}, {"*"}));
  return out;
}

}  // namespace gpu_admission::webhook::backstop
