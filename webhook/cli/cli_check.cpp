// `gpu-admission check`: evaluate manifests offline with the policy engine, as the webhook
// would: flags, reading the inputs and evaluating them. What is printed (text for a person,
// json for a program, yaml for kubectl, junit for CI, PolicyReports) is check_report.h's.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "webhook/cli/check_report.h"
#include "webhook/cli/cli_args.h"
#include "webhook/cli/commands.h"
#include "webhook/cli/input_claims.h"
#include "webhook/cli/input_groups.h"
#include "webhook/cli/input_namespaces.h"
#include "webhook/cli/offline.h"
#include "webhook/io/policy_configmap.h"
#include "webhook/io/terminal_text.h"

namespace gpu_admission::webhook {
namespace {

constexpr const char* kCheckHelp = R"(Usage: gpu-admission check [--policy FILE] [--namespace NS]
                           [--output text|json|yaml|junit|policyreport|openreports] [--no-mutate]
                           [--namespace-labels k=v,...] [--fail-on deny|warn|none] [--only-denied]
                           [--color auto|always|never] [--verbose] FILE...|-

Evaluates Pods and the pod templates of Deployments, StatefulSets, DaemonSets, ReplicaSets,
ReplicationControllers, Jobs and CronJobs offline, as the API server's chain would on CREATE:
a Pod passes /mutate, then /validate judges the mutated pod; a template is judged as the pod
it will create. ML workloads (PyTorchJob, MPIJob, JobSet, RayCluster, ... and the policy's
spec.workloads) are judged template by template, one result per template named by its path.
ResourceClaims and ResourceClaimTemplates are judged too, and resolve the claims of the pods
among the same inputs; Namespace objects give their labels to tenant selection. An
AdmissionReview is judged exactly as /validate judges it (its operation, user, namespace and
oldObject). Reads multi-document YAML, JSON, `kind: List` and AdmissionReview JSON; `-` reads
standard input; a directory is searched recursively for .yaml, .yml and .json files. Other
kinds are skipped.

The text output ends with the policy judged with and a summary line:
  policy: examples/policy.yaml
  12 objects: 9 allowed, 3 denied; 2 warned, 1 audited; 4 skipped
("policy: built-in default" without --policy; then objects judged, by verdict; those with
warn / audit findings; objects of other kinds, listed with --verbose; "; N errors" is added
when some could not be judged). -o json has the same as "policy" and "summary", -o junit as
the testsuite's property "policy". An object without metadata.namespace gets a note naming
the namespace it was judged in.

Flags:
  -p, --policy FILE      policy file, or a ConfigMap carrying it (default: the built-in policy;
                         see `policy show --default`)
  -n, --namespace NS     namespace for objects that name none (default: "default")
  -o, --output FORMAT    text (default), json, yaml (the mutated objects), junit,
                         policyreport (one wgpolicyk8s.io/v1alpha2 PolicyReport per namespace,
                         a YAML stream for `kubectl apply -f -`), or openreports (the same as
                         openreports.io/v1alpha1 Reports)
      --no-mutate        judge Pods as they are, without /mutate: what /validate alone would say
      --namespace-labels k=v,...
                         labels of the namespaces that have no Namespace object among the inputs
                         (for tenants chosen by namespaceSelector)
      --fail-on WHAT     deny (default): exit 1 when an object is denied; warn: also when an
                         object has a warn finding (audit findings never fail); none: exit 0
                         whatever is found (for publishing reports; 2 still means unusable input)
      --only-denied      print only denied objects (and errors; with --fail-on warn, warned
                         objects too: what fails the run); the summary counts all
      --color WHEN       auto (default: colour a terminal unless NO_COLOR is set), always, never
  -v, --verbose          text: also list each skipped object and why

Exit codes: 0 every object allowed (or anything, with --fail-on none), 1 some object denied
(or warned, with --fail-on warn), 2 unusable input (whatever --fail-on says).
)";

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

// The output formats and their printers.
struct OutputFormat {
  std::string_view name;
  void (*print)(const std::vector<OfflineResult>&, const CheckPrintOptions&);
};
constexpr std::array<OutputFormat, 6> kOutputs = {{{"text", print_text},
                                                   {"json", print_json},
                                                   {"yaml", print_yaml},
                                                   {"junit", print_junit},
                                                   {"policyreport", print_policy_reports},
                                                   {"openreports", print_open_reports}}};

const OutputFormat* output_named(std::string_view name) {
  for (const auto& o : kOutputs)
    if (o.name == name) return &o;
  return nullptr;
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "gpu-admission check: %s\n\n%s", message.c_str(), kCheckHelp);
  return 2;
}

// What the flags ask for; `error` set when they are unusable.
struct CheckFlags {
  const OutputFormat* output = nullptr;
  FailOn fail_on = FailOn::Deny;
  CheckPrintOptions print;
  bool mutate = true;
  std::string policy_path;
  std::optional<std::string> namespace_labels;
  std::vector<std::string> inputs;
  std::optional<std::string> error;
};

CheckFlags check_flags(const ParsedArgs& parsed) {
  CheckFlags f;
  f.output = output_named(parsed.get("--output", "text"));
  if (!f.output) f.error = "--output must be text, json, yaml, junit, policyreport or openreports (got \"" + parsed.get("--output") + "\")";
  const std::string fail_on = parsed.get("--fail-on", "deny");
  if (fail_on == "warn") f.fail_on = FailOn::Warn;
  else if (fail_on == "none") f.fail_on = FailOn::None;
  else if (fail_on != "deny") f.error = "--fail-on must be deny, warn or none (got \"" + fail_on + "\")";
  f.print.fail_on = f.fail_on;
  auto colour = colour_wanted(parsed.get("--color", "auto"), isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR"),
                              std::getenv("TERM"));
  if (!colour) f.error = "--color must be auto, always or never (got \"" + parsed.get("--color") + "\")";
  f.print.colour = colour.value_or(false);
  f.print.only_denied = parsed.has("--only-denied");
  f.print.verbose = parsed.has("--verbose");
  f.print.default_namespace = parsed.get("--namespace", "default");
  f.mutate = !parsed.has("--no-mutate");
  f.policy_path = parsed.get("--policy");
  if (parsed.has("--namespace-labels")) f.namespace_labels = parsed.get("--namespace-labels");
  f.inputs = parsed.positional;
  if (f.inputs.empty() && !f.error) f.error = "no input files (use - for standard input)";
  return f;
}

// Every object of every input file; false when a file cannot be read (said on stderr).
bool read_inputs(const std::vector<std::string>& inputs, std::vector<ManifestObject>& objects) {
  bool ok = true;
  for (const auto& path : expand_inputs(inputs)) {
    ManifestRead read = read_manifest_file(path);
    if (read.error) {
      std::fprintf(stderr, "gpu-admission check: %s\n", terminal_text(*read.error).c_str());
      ok = false;
      continue;
    }
    for (auto& object : read.objects) objects.push_back(std::move(object));
  }
  return ok;
}

}  // namespace

int run_check(const Args& args) {
  ParsedArgs parsed = parse_args(args, {{"--policy", "-p"}, {"--namespace", "-n"}, {"--output", "-o"},
                                        {"--no-mutate", "", false}, {"--namespace-labels", ""},
                                        {"--fail-on", ""}, {"--only-denied", "", false}, {"--color", ""},
                                        {"--verbose", "-v", false}, {"--help", "-h", false}});
  if (parsed.has("--help")) {
    std::fputs(kCheckHelp, stdout);
    return 0;
  }
  if (parsed.error) return usage_error(*parsed.error);
  CheckFlags flags = check_flags(parsed);
  if (flags.error) return usage_error(*flags.error);
  PolicyLoad load = load_policy_document(flags.policy_path);
  if (!load.ok()) {
    std::fprintf(stderr, "%sgpu-admission check: the policy is invalid\n", load.report().c_str());
    return 2;
  }
  flags.print.policy = policy_title(flags.policy_path, load.carrier);
  const std::string& default_namespace = flags.print.default_namespace;

  // Every file first: claims, templates and PodGroups among the inputs resolve the pods' claims.
  std::vector<ManifestObject> objects;
  bool unusable = !read_inputs(flags.inputs, objects);
  InputClaims claims;
  InputGroups groups;
  InputNamespaces namespaces;
  if (flags.namespace_labels) {
    std::string error;
    auto labels = parse_label_list(*flags.namespace_labels, error);
    if (!labels) {
      std::fprintf(stderr, "gpu-admission check: --namespace-labels: %s\n", error.c_str());
      return 2;
    }
    namespaces.set_fallback(std::move(*labels));
  }
  for (const auto& object : objects) {
    claims.add(object.object, default_namespace);
    groups.add(object.object, default_namespace);
    namespaces.add(object.object);
  }
  const policy::ExternalFacts facts{&claims, &namespaces, nullptr, unix_now(), &groups};

  std::vector<OfflineResult> results;
  for (const auto& object : objects) {
    for (auto& one : split_templates(evaluate_offline(*load.policy, object, default_namespace, flags.mutate, facts)))
      results.push_back(std::move(one));
    if (results.back().status == OfflineResult::Status::Error) {
      const auto& r = results.back();
      std::fprintf(stderr, "gpu-admission check: %s: %s: %s\n", terminal_text(r.source).c_str(),
                   terminal_text(object_title(r)).c_str(), terminal_text(r.note).c_str());
      unusable = true;
    }
  }

  flags.output->print(results, flags.print);
  if (unusable) return 2;
  return check_exit_code(summarize(results), flags.fail_on);
}

}  // namespace gpu_admission::webhook
