// `gpu-admission policy lint [--strict] FILE|-`, `policy show [--default|FILE]` and
// `policy export --format vap [--policy FILE]`; FILE may be a ConfigMap carrying the policy
// (webhook/io/policy_configmap.h).
#include <cstdio>

#include "policy/config/lint.h"
#include "policy/config/policy_loader.h"
#include "webhook/backstop/backstop.h"
#include "webhook/cli/cli_args.h"
#include "webhook/cli/commands.h"
#include "webhook/io/default_policy.h"
#include "webhook/io/policy_configmap.h"
#include "webhook/io/policy_file.h"
#include "webhook/io/yaml_json.h"
#include "webhook/io/clock.h"

namespace gpu_admission::webhook {
namespace {

constexpr const char* kPolicyHelp = R"(Usage:
  gpu-admission policy lint [--strict] FILE|-   compile FILE; print errors, footgun warnings and notes
  gpu-admission policy show --default           print the built-in default policy
  gpu-admission policy show FILE                print FILE's effective policy, every default spelled out
  gpu-admission policy export --format vap [--policy FILE] [--output yaml|json]
                                                print the policy as ValidatingAdmissionPolicies and bindings
                                                (the backstop the API server runs while the webhook is down);
                                                what they leave to the webhook is listed on stderr

FILE is a GpuAdmissionPolicy, or a v1 ConfigMap that carries one (as the Helm chart and
deploy/policy-configmap.yaml install it: the data key holding a GpuAdmissionPolicy document,
normally policy.yaml). Problems in a ConfigMap's policy name the key and the line within it,
and point at the ConfigMap file's own line when the value is a literal block (`policy.yaml: |`).

lint exit codes: 0 the policy is valid (warnings allowed, unless --strict; notes never count);
1 it has errors, or warnings with --strict; 2 the file cannot be read, is not YAML, or is a ConfigMap with no
policy key (or several).
export exit codes: 0 written; 2 bad flags, or a policy that cannot be read or compiled.
Without --policy, export uses the built-in default policy.
)";

int lint(const std::string& path, bool strict) {
  PolicyLoad load = load_policy_document(path);
  std::fputs(load.report().c_str(), stdout);
  if (load.ok()) {  // notes: never counted, never fail --strict
    policy::Issues notes;
    policy::lint_notes(load.policy->config(), notes);
    for (const auto& note : notes) std::printf("%s\n", policy::format_issue(note, load.source).c_str());
  }
  size_t errors = 0, warnings = 0;
  for (const auto& issue : load.issues) (issue.severity == policy::Issue::Severity::Error ? errors : warnings)++;
  const std::string source = load.source + (load.carrier.empty() ? "" : " (" + load.carrier + ")");
  if (load.ok()) {
    std::printf("%s: policy \"%s\" is valid (%zu warning%s%s)\n", source.c_str(), load.policy->name().c_str(),
                warnings, warnings == 1 ? "" : "s", strict && warnings ? "; --strict fails on them" : "");
    return strict && warnings ? 1 : 0;
  }
  std::printf("%s: %zu error%s, %zu warning%s\n", source.c_str(), errors, errors == 1 ? "" : "s", warnings,
              warnings == 1 ? "" : "s");
  return load.unusable ? 2 : 1;
}

int show(const std::string& path) {
  if (path.empty()) {
    std::fputs(std::string(default_policy_yaml()).c_str(), stdout);
    return 0;
  }
  PolicyLoad load = load_policy_document(path);
  if (!load.ok()) {
    std::fputs(load.report().c_str(), stderr);
    return 2;
  }
  const std::string source = path + (load.carrier.empty() ? "" : " (" + load.carrier + ")");
  std::printf("# effective policy of %s (hash %s)\n%s", source.c_str(), load.policy->hash().c_str(),
              to_yaml(policy::policy_config_to_json(load.policy->config())).c_str());
  return 0;
}

// policy export --format vap [--policy FILE]: the objects on stdout, the parts not expressed on
// stderr (also in the YAML's header comment).
int export_backstop(const ParsedArgs& parsed) {
  if (!parsed.positional.empty()) {
    std::fprintf(stderr, "gpu-admission policy export: unexpected argument \"%s\" (the policy is --policy FILE)\n",
                 parsed.positional[0].c_str());
    return 2;
  }
  const std::string format = parsed.get("--format");
  if (format != "vap") {
    std::fprintf(stderr, "gpu-admission policy export: --format %s: expected --format vap (ValidatingAdmissionPolicy)\n",
                 format.empty() ? "is required" : ("\"" + format + "\" is not a format").c_str());
    return 2;
  }
  const std::string output = parsed.get("--output", "yaml");
  if (output != "yaml" && output != "json") {
    std::fprintf(stderr, "gpu-admission policy export: --output must be yaml or json\n");
    return 2;
  }
  const std::string path = parsed.get("--policy");
  PolicyLoad load = load_policy_document(path);
  if (!load.ok()) {
    std::fputs(load.report().c_str(), stderr);
    std::fprintf(stderr, "gpu-admission policy export: %s is not a valid policy\n", load.source.c_str());
    return 2;
  }
  backstop::ExportOptions options;
  options.now = unix_now();
  options.source = path.empty() ? "the built-in default policy" : load.source;
  const backstop::Export out = backstop::export_policy(*load.policy, options);
  if (output == "json") {
    // A v1 List, as kubectl prints several objects (JSON has no comments: the notes are on stderr).
    const Json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", out.objects}};
    std::fputs((to_json_text(list, 2) + "\n").c_str(), stdout);
  } else {
    std::fputs(backstop::export_yaml(out, *load.policy, options).c_str(), stdout);
  }
  std::fprintf(stderr, "gpu-admission policy export: %zu ValidatingAdmissionPolicies; not expressed (left to the webhook):\n",
               out.objects.size() / 2);
  for (const auto& n : out.not_expressed) std::fprintf(stderr, "  - %s\n", n.c_str());
  return 0;
}

}  // namespace

int run_policy(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kPolicyHelp, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string& sub = args[0];
  ParsedArgs parsed = parse_args(Args(args.begin() + 1, args.end()), {{"--default", "", false},
                                                                        {"--strict", "", false},
                                                                        {"--format", "", true},
                                                                        {"--policy", "", true},
                                                                        {"--output", "-o", true},
                                                                        {"--help", "-h", false}});
  if (parsed.has("--help")) {
    std::fputs(kPolicyHelp, stdout);
    return 0;
  }
  if (parsed.error) {
    std::fprintf(stderr, "gpu-admission policy %s: %s\n", sub.c_str(), parsed.error->c_str());
    return 2;
  }
  if (sub == "export") {
    if (parsed.has("--default") || parsed.has("--strict")) {
      std::fprintf(stderr, "gpu-admission policy export: takes --format vap, --policy FILE and --output yaml|json only\n");
      return 2;
    }
    return export_backstop(parsed);
  }
  if (parsed.has("--format") || parsed.has("--policy") || parsed.has("--output")) {
    std::fprintf(stderr, "gpu-admission policy %s: --format, --policy and --output are flags of policy export\n",
                 sub.c_str());
    return 2;
  }
  if (sub == "lint") {
    if (parsed.positional.size() != 1) {
      std::fprintf(stderr, "gpu-admission policy lint: expected exactly one FILE\n");
      return 2;
    }
    return lint(parsed.positional[0], parsed.has("--strict"));
  }
  if (sub == "show") {
    if (parsed.has("--strict")) {
      std::fprintf(stderr, "gpu-admission policy show: --strict is a flag of policy lint\n");
      return 2;
    }
    if (parsed.has("--default") == !parsed.positional.empty() || parsed.positional.size() > 1) {
      std::fprintf(stderr, "gpu-admission policy show: expected --default or one FILE\n");
      return 2;
    }
    return show(parsed.has("--default") ? "" : parsed.positional[0]);
  }
  std::fprintf(stderr, "gpu-admission policy: unknown subcommand \"%s\"\n\n%s", sub.c_str(), kPolicyHelp);
  return 2;
}

}  // namespace gpu_admission::webhook
