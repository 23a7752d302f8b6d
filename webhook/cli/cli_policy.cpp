// `gpu-admission policy lint [--strict] FILE|-` and `policy show [--default|FILE]`; FILE may be a
// ConfigMap carrying the policy (webhook/io/policy_configmap.h).
#include <cstdio>

#include "policy/config/policy_loader.h"
#include "webhook/cli/cli_args.h"
#include "webhook/cli/commands.h"
#include "webhook/io/default_policy.h"
#include "webhook/io/policy_configmap.h"
#include "webhook/io/policy_file.h"
#include "webhook/io/yaml_json.h"

namespace gpu_admission::webhook {
namespace {

constexpr const char* kPolicyHelp = R"(Usage:
  gpu-admission policy lint [--strict] FILE|-   compile FILE; print errors and footgun warnings
  gpu-admission policy show --default           print the built-in default policy
  gpu-admission policy show FILE                print FILE's effective policy, every default spelled out

FILE is a GpuAdmissionPolicy, or a v1 ConfigMap that carries one (as the Helm chart and
deploy/policy-configmap.yaml install it: the data key holding a GpuAdmissionPolicy document,
normally policy.yaml). Problems in a ConfigMap's policy name the key and the line within it,
and point at the ConfigMap file's own line when the value is a literal block (`policy.yaml: |`).

lint exit codes: 0 the policy is valid (warnings allowed, unless --strict); 1 it has errors,
or warnings with --strict; 2 the file cannot be read, is not YAML, or is a ConfigMap with no
policy key (or several).
)";

int lint(const std::string& path, bool strict) {
  PolicyLoad load = load_policy_document(path);
  std::fputs(load.report().c_str(), stdout);
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

}  // namespace

int run_policy(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kPolicyHelp, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string& sub = args[0];
  ParsedArgs parsed = parse_args(Args(args.begin() + 1, args.end()), {{"--default", "", false}, {"--strict", "", false}, {"--help", "-h", false}});
  if (parsed.has("--help")) {
    std::fputs(kPolicyHelp, stdout);
    return 0;
  }
  if (parsed.error) {
    std::fprintf(stderr, "gpu-admission policy %s: %s\n", sub.c_str(), parsed.error->c_str());
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
