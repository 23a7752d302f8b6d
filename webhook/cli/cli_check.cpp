// `gpu-admission check`: evaluate manifests offline with the policy engine, as the webhook
// would, and print the decisions for a person (text), a program (json), kubectl (yaml: the
// mutated objects) or a CI system (junit).
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "policy/dra/gpu_request.h"
#include "policy/base/ids.h"
#include "policy/evaluation/rules/rule.h"
#include "webhook/cli/cli_args.h"
#include "webhook/cli/commands.h"
#include "webhook/cli/input_claims.h"
#include "webhook/cli/input_namespaces.h"
#include "webhook/cli/junit.h"
#include "webhook/cli/offline.h"
#include "webhook/io/policy_file.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {
namespace {

constexpr const char* kCheckHelp = R"(Usage: gpu-admission check [--policy FILE] [--namespace NS] [--output text|json|yaml|junit]
                           [--no-mutate] [--namespace-labels k=v,...] FILE...|-

Evaluates Pods and the pod templates of Deployments, StatefulSets, DaemonSets, ReplicaSets,
ReplicationControllers, Jobs and CronJobs offline, as the API server's chain would on CREATE:
a Pod passes /mutate, then /validate judges the mutated pod; a template is judged as the pod
it will create. ML workloads (PyTorchJob, MPIJob, JobSet, RayCluster, ... and the policy's
spec.workloads) are judged template by template, one result per template named by its path.
ResourceClaims and ResourceClaimTemplates are judged too, and resolve the claims
of the pods among the same inputs; Namespace objects give their labels to tenant selection. An AdmissionReview is judged exactly as /validate judges it (its operation,
user, namespace and oldObject). Reads multi-document YAML, JSON, `kind: List` and
AdmissionReview JSON; `-` reads standard input; a directory is searched recursively for .yaml,
.yml and .json files. Other kinds are skipped with a note.

Flags:
  -p, --policy FILE      policy file (default: the built-in policy; see `policy show --default`)
  -n, --namespace NS     namespace for objects that name none (default: "default")
  -o, --output FORMAT    text (default), json, yaml (the mutated objects) or junit
      --no-mutate        judge Pods as they are, without /mutate: what /validate alone would say
      --namespace-labels k=v,...
                         labels of the namespaces that have no Namespace object among the inputs
                         (for tenants chosen by namespaceSelector)

Exit codes: 0 every object allowed, 1 some object denied, 2 unusable input.
)";

std::string object_title(const OfflineResult& r) {
  std::string out = r.kind.empty() ? "object" : r.kind;
  out += ' ';
  out += r.namespace_name.empty() ? "" : r.namespace_name + "/";
  out += r.name.empty() ? "(unnamed)" : r.name;
  if (!r.template_path.empty()) out += " [" + r.template_path + "]";
  return out;
}


void print_text(const std::vector<OfflineResult>& results) {
  for (const auto& r : results) {
    if (r.status == OfflineResult::Status::Skipped) {
      std::printf("%s %s: skipped (%s)  [%s]\n\n", r.kind.empty() ? "object" : r.kind.c_str(),
                  r.name.empty() ? "(unnamed)" : r.name.c_str(), r.note.c_str(), r.source.c_str());
      continue;
    }
    if (r.status == OfflineResult::Status::Error) {
      std::printf("%s: ERROR  [%s]\n  %s\n\n", object_title(r).c_str(), r.source.c_str(), r.note.c_str());
      continue;
    }
    const auto& d = r.decision;
    std::printf("%s: %s  [%s]\n", object_title(r).c_str(),
                d.exempt ? "ALLOWED (exempt)" : d.allowed ? "ALLOWED" : "DENIED", r.source.c_str());
    if (d.exempt) {
      std::printf("  exempt by %.*s: no rule or mutation applies\n\n", static_cast<int>(d.exempt_by.size()),
                  d.exempt_by.data());
      continue;
    }
    std::string context = "  tenant: " + (d.tenant ? d.tenant->name : std::string("(none)")) +
                          ", pool: " + (d.pool ? d.pool->name : std::string("(none)"));
    if (d.gpu_slices > 0 || !d.gpu_sources.empty()) {
      context += ", GPUs: " + policy::gpus_text(d.gpu_slices, d.slices_per_gpu);
      if (!d.gpu_sources.empty()) context += " (" + d.gpu_sources + ")";
    }
    std::printf("%s\n", context.c_str());
    for (const auto& f : d.findings) {
      std::printf("  %-5s [%s] %s\n", std::string(policy::name_of(f.action)).c_str(),
                  std::string(policy::name_of(f.rule)).c_str(), f.message.c_str());
      std::printf("        at %s\n", f.field.c_str());
    }
    if (!d.patch.empty()) {
      std::printf("  mutations (%zu patch operations):\n", d.patch.size());
      for (const auto& op : d.patch) {
        const int path_len = static_cast<int>(op.path.size()), value_len = static_cast<int>(op.value.size());
        if (op.kind == policy::PatchOp::Kind::Remove) std::printf("    remove %.*s\n", path_len, op.path.data());
        else std::printf("    add    %.*s = %.*s\n", path_len, op.path.data(), value_len, op.value.data());
      }
    }
    std::printf("\n");
  }
}

Json result_json(const OfflineResult& r) {
  Json out = {{"kind", r.kind}, {"namespace", r.namespace_name}, {"name", r.name}, {"allowed", r.allowed()}};
  if (!r.template_path.empty()) out["template"] = r.template_path;
  Json violations = Json::array();
  Json warnings = Json::array();
  for (const auto& f : r.decision.findings) {
    violations.push_back({{"rule", std::string(policy::name_of(f.rule))},
                          {"action", std::string(policy::name_of(f.action))},
                          {"message", f.message},
                          {"field", f.field}});
    if (f.action == policy::Action::Warn) warnings.push_back("[" + std::string(policy::name_of(f.rule)) + "] " + f.message);
  }
  out["violations"] = violations;
  out["warnings"] = warnings;
  out["patch"] = r.patch;
  out["object"] = r.mutated.is_null() ? Json::object() : r.mutated;
  out["source"] = r.source;
  out["exempt"] = r.decision.exempt;
  out["tenant"] = r.decision.tenant ? Json(r.decision.tenant->name) : Json(nullptr);
  out["pool"] = r.decision.pool ? Json(r.decision.pool->name) : Json(nullptr);
  // The effective GPU request as the text output shows it ("2", "1 3/4"), and where it comes from
  // when that is not plain from the resources (DRA claims and extended resources).
  if (!r.decision.exempt) out["gpus"] = policy::gpus_text(r.decision.gpu_slices, r.decision.slices_per_gpu);
  if (!r.decision.gpu_sources.empty()) out["gpuSources"] = r.decision.gpu_sources;
  return out;
}

void print_json(const std::vector<OfflineResult>& results) {
  Json doc = {{"results", Json::array()}, {"skipped", Json::array()}, {"errors", Json::array()}};
  for (const auto& r : results) {
    if (r.status == OfflineResult::Status::Evaluated) doc["results"].push_back(result_json(r));
    else
      doc[r.status == OfflineResult::Status::Skipped ? "skipped" : "errors"].push_back(
          {{"kind", r.kind}, {"namespace", r.namespace_name}, {"name", r.name}, {"source", r.source}, {"reason", r.note}});
  }
  std::printf("%s\n", to_json_text(doc, 2).c_str());
}

void print_yaml(const std::vector<OfflineResult>& results) {
  bool first = true;
  for (const auto& r : results) {
    if (r.status != OfflineResult::Status::Evaluated) {
      std::fprintf(stderr, "%s: %s (%s)\n", r.source.c_str(), object_title(r).c_str(), r.note.c_str());
      continue;
    }
    if (!r.allowed()) {
      for (const auto& f : r.decision.findings)
        if (f.action == policy::Action::Deny)
          std::fprintf(stderr, "%s: %s denied: [%s] %s\n", r.source.c_str(), object_title(r).c_str(),
                       std::string(policy::name_of(f.rule)).c_str(), f.message.c_str());
    }
    if (r.repeat) continue;  // another template of the object printed just before
    if (!first) std::printf("---\n");
    first = false;
    std::printf("%s", to_yaml(r.mutated).c_str());
  }
}

void print_junit(const std::vector<OfflineResult>& results) {
  JUnitSuite suite{"gpu-admission check", {}};
  for (const auto& r : results) {
    JUnitCase c;
    c.name = object_title(r);
    c.classname = r.source;
    if (r.status == OfflineResult::Status::Skipped) {
      c.skipped = true;
      c.failure_message = r.note;
    } else if (r.status == OfflineResult::Status::Error) {
      c.failed = true;
      c.failure_message = r.note;
      c.failure_text = r.note;
    } else if (!r.decision.allowed) {
      c.failed = true;
      std::string rules;
      for (const auto& f : r.decision.findings) {
        if (f.action != policy::Action::Deny) continue;
        if (!rules.empty()) rules += ", ";
        rules += policy::name_of(f.rule);
        c.failure_text += "[" + std::string(policy::name_of(f.rule)) + "] " + f.message + " (at " + f.field + ")\n";
      }
      c.failure_message = "denied by " + rules;
    }
    suite.cases.push_back(std::move(c));
  }
  std::printf("%s", junit_xml({suite}).c_str());
}

// Files to read: each argument, with directories expanded (recursively) to their
// .yaml, .yml and .json files in name order.
std::vector<std::string> expand_inputs(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& arg : args) {
    std::error_code ec;
    if (arg == "-" || !fs::is_directory(arg, ec)) {
      out.push_back(arg);
      continue;
    }
    std::vector<std::string> found;
    for (fs::recursive_directory_iterator it(arg, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      std::string ext = it->path().extension().string();
      if (ext == ".yaml" || ext == ".yml" || ext == ".json") found.push_back(it->path().string());
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace

int run_check(const Args& args) {
  ParsedArgs parsed = parse_args(args, {{"--policy", "-p"}, {"--namespace", "-n"}, {"--output", "-o"},
                                        {"--no-mutate", "", false}, {"--namespace-labels", ""},
                                        {"--help", "-h", false}});
  if (parsed.has("--help")) {
    std::fputs(kCheckHelp, stdout);
    return 0;
  }
  if (parsed.error) {
    std::fprintf(stderr, "gpu-admission check: %s\n\n%s", parsed.error->c_str(), kCheckHelp);
    return 2;
  }
  const std::string output = parsed.get("--output", "text");
  if (output != "text" && output != "json" && output != "yaml" && output != "junit") {
    std::fprintf(stderr, "gpu-admission check: --output must be text, json, yaml or junit (got \"%s\")\n", output.c_str());
    return 2;
  }
  if (parsed.positional.empty()) {
    std::fprintf(stderr, "gpu-admission check: no input files (use - for standard input)\n\n%s", kCheckHelp);
    return 2;
  }
  PolicyLoad load = load_policy_file(parsed.get("--policy"));
  if (!load.ok()) {
    std::fprintf(stderr, "%sgpu-admission check: the policy is invalid\n", load.report().c_str());
    return 2;
  }
  const std::string default_namespace = parsed.get("--namespace", "default");

  // Every file first: claims and templates among the inputs resolve the pods' claims.
  std::vector<ManifestObject> objects;
  bool unusable = false;
  for (const auto& path : expand_inputs(parsed.positional)) {
    ManifestRead read = read_manifest_file(path);
    if (read.error) {
      std::fprintf(stderr, "gpu-admission check: %s\n", read.error->c_str());
      unusable = true;
      continue;
    }
    for (auto& object : read.objects) objects.push_back(std::move(object));
  }
  InputClaims claims;
  InputNamespaces namespaces;
  if (parsed.has("--namespace-labels")) {
    std::string error;
    auto labels = parse_label_list(parsed.get("--namespace-labels"), error);
    if (!labels) {
      std::fprintf(stderr, "gpu-admission check: --namespace-labels: %s\n", error.c_str());
      return 2;
    }
    namespaces.set_fallback(std::move(*labels));
  }
  for (const auto& object : objects) {
    claims.add(object.object, default_namespace);
    namespaces.add(object.object);
  }
  const policy::ExternalFacts facts{&claims, &namespaces, nullptr, unix_now()};

  std::vector<OfflineResult> results;
  for (const auto& object : objects) {
    for (auto& one : split_templates(
             evaluate_offline(*load.policy, object, default_namespace, !parsed.has("--no-mutate"), facts)))
      results.push_back(std::move(one));
    if (results.back().status == OfflineResult::Status::Error) {
      const auto& r = results.back();
      std::fprintf(stderr, "gpu-admission check: %s: %s: %s\n", r.source.c_str(), object_title(r).c_str(), r.note.c_str());
      unusable = true;
    }
  }

  if (output == "json") print_json(results);
  else if (output == "yaml") print_yaml(results);
  else if (output == "junit") print_junit(results);
  else print_text(results);

  if (unusable) return 2;
  for (const auto& r : results)
    if (!r.allowed()) return 1;
  return 0;
}

}  // namespace gpu_admission::webhook
