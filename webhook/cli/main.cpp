// gpu-admission: one binary, one policy engine; subcommands serve, check, test, policy, certs.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "webhook/cli/commands.h"

namespace {

constexpr const char* kUsage = R"(gpu-admission: admission control for multi-tenant Kubernetes GPU clusters

Usage:
  gpu-admission serve [--policy FILE] [--tls-cert FILE --tls-key FILE]
                      [--listen 0.0.0.0:8443] [--metrics-listen 0.0.0.0:9090]
  gpu-admission check [--policy FILE] [--namespace NS] [--output text|json|yaml|junit|policyreport]
                      [--fail-on deny|warn] [--only-denied] FILE...|-
  gpu-admission test SUITE.yaml|DIR... [--output text|json|junit] [--run REGEX]
  gpu-admission policy lint [--strict] FILE|-
  gpu-admission policy show [--default|FILE]
  gpu-admission certs --service NAME --namespace NS [--out-dir DIR] [--days N] [--force]
  gpu-admission version

Run `gpu-admission COMMAND --help` for the options of a command.
Exit codes: 0 allowed / passed, 1 denied / failed, 2 unusable input.
)";

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
    if (command == "check") return run_check(args);
    if (command == "policy") return run_policy(args);
    if (command == "test") return run_test(args);
    if (command == "serve") return run_serve(args);
    if (command == "certs") return run_certs(args);
    if (command == "version" || command == "--version") {
      std::printf("gpu-admission %s\n", GPU_ADMISSION_VERSION);
      return 0;
    }
    if (command == "help" || command == "--help" || command == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "gpu-admission: unknown command \"%s\"\n\n%s", argv[1], kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu-admission %s: internal error: %s\n", argv[1], e.what());
    return 2;
  }
}
