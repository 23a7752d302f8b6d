// `gpu-admission certs`: writes a CA and a serving certificate for the webhook's Service
// and prints the base64 CA bundle on stdout, ready to paste into `caBundle`.
#include <charconv>
#include <cstdio>
#include <string>
#include <string_view>

#include "certs/certs.h"
#include "webhook/cli/commands.h"
#include "webhook/ops/base64.h"

namespace gpu_admission::webhook {
namespace {

constexpr const char* kCertsHelp = R"(Usage: gpu-admission certs --service NAME --namespace NS [--out-dir DIR] [--days N] [--force]

Generates a CA and an ECDSA P-256 serving certificate for the Service NAME in namespace NS,
with the DNS names NAME, NAME.NS, NAME.NS.svc and NAME.NS.svc.cluster.local, and writes
DIR/ca.crt, DIR/tls.crt and DIR/tls.key (mode 0600). The CA key is not kept.

Prints the base64 of ca.crt on stdout (the webhook configurations' caBundle); the summary
goes to stderr. For example:
  CA_BUNDLE=$(gpu-admission certs --service gpu-admission --namespace gpu-admission --out-dir tls)

Options:
  --service NAME     Service name (DNS-1035 label), required
  --namespace NS     its namespace (DNS-1123 label), required
  --out-dir DIR      where to write the files, created if missing (default: .)
  --days N           validity in days, 1..3650 (default: 365)
  --force            replace existing ca.crt, tls.crt, tls.key
  -h, --help         show this help

Exit codes: 0 written, 1 generation or write failed, 2 bad flags or files already exist.
)";

struct CertsOptions {
  std::string service;
  std::string ns;
  std::string out_dir = ".";
  int days = certs::kDefaultDays;
  bool force = false;
  bool help = false;
};

int usage_error(const std::string& message) {
  std::fprintf(stderr, "gpu-admission certs: %s\nRun `gpu-admission certs --help` for usage.\n",
               message.c_str());
  return 2;
}

// Parses `args` into `opts`; returns an error message, empty on success.
std::string parse_args(const Args& args, CertsOptions& opts) {
  bool seen_service = false, seen_ns = false, seen_out = false, seen_days = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") {
      opts.help = true;
      return {};
    }
    // --flag=value or --flag value
    std::string_view flag = arg;
    std::string value;
    bool inline_value = false;
    if (arg.starts_with("--")) {
      if (auto eq = arg.find('='); eq != std::string_view::npos) {
        flag = arg.substr(0, eq);
        value = std::string(arg.substr(eq + 1));
        inline_value = true;
      }
    }
    if (flag == "--force") {
      if (inline_value) return "--force takes no value";
      opts.force = true;
      continue;
    }
    bool* seen = flag == "--service"     ? &seen_service
                 : flag == "--namespace" ? &seen_ns
                 : flag == "--out-dir"   ? &seen_out
                 : flag == "--days"      ? &seen_days
                                         : nullptr;
    if (seen == nullptr) {
      if (arg.starts_with("-")) return "unknown flag " + std::string(flag);
      return "unexpected argument \"" + std::string(arg) + "\"";
    }
    if (*seen) return std::string(flag) + " given more than once";
    *seen = true;
    if (!inline_value) {
      if (i + 1 >= args.size()) return std::string(flag) + " needs a value";
      value = args[++i];
    }

    if (flag == "--service") {
      if (!certs::is_dns1035_label(value))
        return "--service \"" + value +
               "\" is not a valid Service name (1-63 lowercase letters, digits or '-', starting "
               "with a letter and ending with a letter or digit)";
      opts.service = value;
    } else if (flag == "--namespace") {
      if (!certs::is_dns1123_label(value))
        return "--namespace \"" + value +
               "\" is not a valid namespace (1-63 lowercase letters, digits or '-', starting and "
               "ending with a letter or digit)";
      opts.ns = value;
    } else if (flag == "--out-dir") {
      if (value.empty()) return "--out-dir must not be empty";
      opts.out_dir = value;
    } else {  // --days
      int days = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), days);
      if (ec != std::errc() || end != value.data() + value.size() || days < 1 || days > certs::kMaxDays)
        return "--days \"" + value + "\" must be a whole number from 1 to " + std::to_string(certs::kMaxDays);
      opts.days = days;
    }
  }
  if (!seen_service) return "--service is required";
  if (!seen_ns) return "--namespace is required";
  return {};
}

}  // namespace

int run_certs(const Args& args) {
  CertsOptions opts;
  if (std::string error = parse_args(args, opts); !error.empty()) return usage_error(error);
  if (opts.help) {
    std::fputs(kCertsHelp, stdout);
    return 0;
  }

  certs::ServingBundle bundle = certs::generate_serving_bundle({opts.service, opts.ns, opts.days, 0});
  if (!bundle.ok()) {
    std::fprintf(stderr, "gpu-admission certs: %s\n", bundle.error.c_str());
    return 1;
  }
  certs::WriteResult written = certs::write_serving_files(opts.out_dir, bundle, opts.force);
  if (!written.ok()) {
    std::fprintf(stderr, "gpu-admission certs: %s\n", written.error.c_str());
    return written.usage_error ? 2 : 1;
  }

  // stdout carries only the CA bundle, so `$(gpu-admission certs ...)` captures exactly it.
  std::string ca_bundle = base64_encode(bundle.ca_cert_pem);
  std::fprintf(stdout, "%s\n", ca_bundle.c_str());
  std::fflush(stdout);

  std::string files, sans;
  for (const std::string& path : written.written) files += (files.empty() ? "" : ", ") + path;
  for (const std::string& name : bundle.dns_names) sans += (sans.empty() ? "" : ", ") + name;
  std::fprintf(stderr,
               "gpu-admission certs: wrote %s (key mode 0600)\n"
               "  SANs:    %s\n"
               "  expires: %s (%d days)\n"
               "  the base64 CA bundle for caBundle is on stdout\n",
               files.c_str(), sans.c_str(), certs::format_utc(bundle.not_after).c_str(), opts.days);
  return 0;
}

}  // namespace gpu_admission::webhook
