// gpu-admission: one binary, one policy engine; subcommands serve, check, test, policy, certs,
// and version (what this binary is and how it was built).
#include <pthread.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <string_view>

#include "policy/base/json.h"
#include "webhook/cli/cli_args.h"
#include "webhook/cli/commands.h"
#include "webhook/ops/build_info.h"
#include "webhook/ops/logger.h"

namespace {

constexpr const char* kUsage = R"(gpu-admission: admission control for multi-tenant Kubernetes GPU clusters

Usage:
  gpu-admission serve [--policy FILE] [--tls-cert FILE --tls-key FILE]
                      [--listen 0.0.0.0:8443] [--metrics-listen 0.0.0.0:9090]
  gpu-admission check [--policy FILE] [--namespace NS]
                      [--output text|json|yaml|junit|policyreport|openreports]
                      [--fail-on deny|warn] [--only-denied] FILE...|-
  gpu-admission test SUITE.yaml|DIR... [--output text|json|junit] [--run REGEX]
  gpu-admission audit [--policy FILE] [--kubeconfig FILE] [--context NAME] [--namespace NS,...]
                      [--output text|json|policyreport|openreports] [--write-reports]
                      [--report-api openreports.io/v1alpha1|wgpolicyk8s.io/v1alpha2]
                      [--interval DURATION --metrics-listen ADDR] [FILE...|-]
  gpu-admission policy lint [--strict] FILE|-
  gpu-admission policy show [--default|FILE]
  gpu-admission policy export --format vap [--policy FILE]
  gpu-admission certs --service NAME --namespace NS [--out-dir DIR] [--days N] [--force]
  gpu-admission version [--output text|json]

Run `gpu-admission COMMAND --help` for the options of a command.
Exit codes: 0 allowed / passed, 1 denied / failed, 2 unusable input.
)";

// `gpu-admission version [--output text|json]`: the version, the git commit and the build's flags.
int run_version(const gpu_admission::webhook::Args& args) {
  using namespace gpu_admission::webhook;
  const ParsedArgs parsed = parse_args(args, {{"--output", "-o", true}});
  const std::string output = parsed.get("--output", "text");
  std::string error = parsed.error.value_or("");
  if (error.empty() && !parsed.positional.empty()) error = "unexpected argument \"" + parsed.positional.front() + "\"";
  if (error.empty() && output != "text" && output != "json") error = "--output must be text or json";
  if (!error.empty()) {
    std::fprintf(stderr, "gpu-admission version: %s\nUsage: gpu-admission version [--output text|json]\n", error.c_str());
    return 2;
  }
  const BuildInfo& build = build_info();
  struct Field {
    const char* key;    // in JSON
    const char* label;  // in text
    std::string_view value;
  };
  const Field fields[] = {{"commit", "commit:", build.commit},         {"buildType", "build type:", build.build_type},
                          {"compiler", "compiler:", build.compiler},   {"arch", "arch:", build.arch},
                          {"sanitizers", "sanitizers:", build.sanitizers}, {"pgo", "pgo:", build.pgo}};
  if (output == "json") {
    gpu_admission::Json json = {{"version", build.version}};
    for (const Field& field : fields) json[field.key] = field.value;
    std::printf("%s\n", json.dump(2).c_str());
    return 0;
  }
  std::printf("gpu-admission %.*s\n", static_cast<int>(build.version.size()), build.version.data());
  for (const Field& field : fields)
    std::printf("  %-12s %.*s\n", field.label, static_cast<int>(field.value.size()), field.value.data());
  return 0;
}

// The commands that read objects from files run on a thread with this much stack: objects may
// nest 10,000 levels (kMaxObjectDepth), and writing or copying such a tree (JSON text for the
// decoders, the mutated object, the reports) recurses once per level, at a few hundred bytes a
// level, several times that in a sanitizer build. Only the pages used are ever committed.
constexpr size_t kCommandStackBytes = 256u << 20;

// Runs `command` on a thread with kCommandStackBytes of stack and returns its exit code (an
// exception it throws is thrown here); on the calling thread if no such thread can be made.
int run_on_large_stack(const std::function<int()>& command) {
  struct Call {
    const std::function<int()>& command;
    int code = 2;
    std::exception_ptr error;
  } call{command, 2, nullptr};
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return command();
  pthread_t thread;
  const bool started = pthread_attr_setstacksize(&attr, kCommandStackBytes) == 0 &&
                       pthread_create(&thread, &attr, [](void* arg) -> void* {
                         auto* c = static_cast<Call*>(arg);
                         try {
                           c->code = c->command();
                         } catch (...) {
                           c->error = std::current_exception();
                         }
                         return nullptr;
                       }, &call) == 0;
  pthread_attr_destroy(&attr);
  if (!started) return command();
  pthread_join(thread, nullptr);
  if (call.error) std::rethrow_exception(call.error);
  return call.code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpu_admission::webhook;
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string_view command = argv[1];
  Args args(argv + 2, argv + argc);
  try {
    if (command == "check") return run_on_large_stack([&] { return run_check(args); });
    if (command == "policy") return run_policy(args);
    if (command == "test") return run_on_large_stack([&] { return run_test(args); });
    if (command == "audit") return run_on_large_stack([&] { return run_audit(args); });
    if (command == "serve") return run_serve(args);
    if (command == "certs") return run_certs(args);
    if (command == "version" || command == "--version") return run_version(args);
    if (command == "help" || command == "--help" || command == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "gpu-admission: unknown command \"%s\"\n\n%s", argv[1], kUsage);
    return 2;
  } catch (const std::exception& e) {
    // serve speaks JSON lines on stderr, even here; the other commands talk to people.
    if (command == "serve") Logger(LogLevel::Error).error(std::string("gpu-admission serve: internal error: ") + e.what(),
                                                          {{"exit_code", 2}});
    else std::fprintf(stderr, "gpu-admission %s: internal error: %s\n", argv[1], e.what());
    return 2;
  }
}
