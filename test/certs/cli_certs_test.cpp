// `gpu-admission certs`: flags, exit codes, what lands on stdout and stderr, and the files
// written, checked with OpenSSL directly.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include "certs/certs_test_support.h"
#include "webhook/cli/commands.h"
#include "webhook/ops/base64.h"
#include "test_paths.h"

using namespace certs_test;
using gpu_admission::webhook::Args;
using gpu_admission::webhook::base64_decode_strict;
using gpu_admission::webhook::run_certs;

namespace {

Captured certs_cli(const Args& args) {
  return capture([&] { return run_certs(args); });
}

}  // namespace

TEST_CASE("certs writes a verifiable chain and prints only the base64 CA on stdout", "[certs][cli]") {
  TempDir tmp;
  std::string out = tmp.file("tls");
  Captured r = certs_cli({"--service", "gpu-admission", "--namespace", "gpu-system", "--out-dir", out});
  REQUIRE(r.rc == 0);
  INFO(r.err);

  // stdout: one line, the base64 of ca.crt exactly.
  REQUIRE(r.out.ends_with("\n"));
  std::string line = r.out.substr(0, r.out.size() - 1);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") ==
        std::string::npos);
  std::string ca_pem = slurp(out + "/ca.crt");
  REQUIRE(ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
  CHECK(base64_decode_strict(line) == ca_pem);

  // stderr: the summary names the files, the SANs and the expiry.
  CHECK(r.err.find(out + "/ca.crt") != std::string::npos);
  CHECK(r.err.find(out + "/tls.key") != std::string::npos);
  CHECK(r.err.find("gpu-admission.gpu-system.svc.cluster.local") != std::string::npos);
  CHECK(r.err.find("expires") != std::string::npos);

  X509Ptr ca = parse_cert(ca_pem);
  X509Ptr leaf = parse_cert(slurp(out + "/tls.crt"));
  REQUIRE(ca);
  REQUIRE(leaf);
  CHECK(verify(ca, leaf, "gpu-admission.gpu-system.svc") == X509_V_OK);
  CHECK(sans(leaf) == std::vector<std::string>{"DNS:gpu-admission", "DNS:gpu-admission.gpu-system",
                                               "DNS:gpu-admission.gpu-system.svc",
                                               "DNS:gpu-admission.gpu-system.svc.cluster.local"});
  PKeyPtr key = parse_key(slurp(out + "/tls.key"));
  REQUIRE(key);
  CHECK(group_name(key.get()) == "prime256v1");
  CHECK(X509_check_private_key(leaf.get(), key.get()) == 1);
  CHECK(file_mode(out + "/tls.key") == 0600);
  CHECK(X509_get_extended_key_usage(leaf.get()) == XKU_SSL_SERVER);
  CHECK(X509_check_ca(ca.get()) == 1);

  // Default validity: 365 days.
  std::int64_t span = to_unix(X509_get0_notAfter(leaf.get())) - to_unix(X509_get0_notBefore(leaf.get()));
  CHECK(span == 365 * 86400LL + 300);
}

TEST_CASE("certs --days sets the validity, --flag=value works too", "[certs][cli]") {
  TempDir tmp;
  Captured r = certs_cli({"--service=webhook", "--namespace=team-a", "--days=30", "--out-dir=" + tmp.path()});
  REQUIRE(r.rc == 0);
  X509Ptr leaf = parse_cert(slurp(tmp.file("tls.crt")));
  X509Ptr ca = parse_cert(slurp(tmp.file("ca.crt")));
  std::time_t now = std::time(nullptr);
  for (const X509Ptr* cert : {&leaf, &ca}) {
    std::int64_t not_after = to_unix(X509_get0_notAfter(cert->get()));
    CHECK(not_after >= now + 30 * 86400LL - 60);
    CHECK(not_after <= now + 30 * 86400LL);
  }
  CHECK(common_name(leaf) == "webhook.team-a.svc");
}

TEST_CASE("certs writes into the current directory by default", "[certs][cli]") {
  TempDir tmp;
  auto old_cwd = std::filesystem::current_path();
  std::filesystem::current_path(tmp.path());
  Captured r = certs_cli({"--namespace", "ns", "--service", "svc"});
  std::filesystem::current_path(old_cwd);
  CHECK(r.rc == 0);
  CHECK(exists(tmp.file("ca.crt")));
  CHECK(exists(tmp.file("tls.crt")));
  CHECK(file_mode(tmp.file("tls.key")) == 0600);
}

TEST_CASE("certs refuses to overwrite without --force and replaces with it", "[certs][cli]") {
  TempDir tmp;
  Args args = {"--service", "svc", "--namespace", "ns", "--out-dir", tmp.path()};
  REQUIRE(certs_cli(args).rc == 0);
  std::string ca1 = slurp(tmp.file("ca.crt")), crt1 = slurp(tmp.file("tls.crt")), key1 = slurp(tmp.file("tls.key"));

  Captured refused = certs_cli(args);
  CHECK(refused.rc == 2);
  CHECK(refused.out == "");
  CHECK(refused.err.find(tmp.file("ca.crt")) != std::string::npos);
  CHECK(refused.err.find("--force") != std::string::npos);
  CHECK(slurp(tmp.file("ca.crt")) == ca1);
  CHECK(slurp(tmp.file("tls.crt")) == crt1);
  CHECK(slurp(tmp.file("tls.key")) == key1);

  args.push_back("--force");
  Captured forced = certs_cli(args);
  CHECK(forced.rc == 0);
  std::string ca2 = slurp(tmp.file("ca.crt"));
  CHECK(ca2 != ca1);
  CHECK(slurp(tmp.file("tls.key")) != key1);
  CHECK(base64_decode_strict(forced.out.substr(0, forced.out.size() - 1)) == ca2);
  CHECK(file_mode(tmp.file("tls.key")) == 0600);
  CHECK(verify(parse_cert(ca2), parse_cert(slurp(tmp.file("tls.crt"))), "svc.ns.svc") == X509_V_OK);
}

TEST_CASE("certs rejects bad flags with exit 2 and names the flag", "[certs][cli]") {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  struct Case {
    Args args;
    std::string flag;  // must appear in the message
  };
  const std::vector<Case> cases = {
      {{"--namespace", "ns", "--out-dir", dir}, "--service"},
      {{"--service", "svc", "--out-dir", dir}, "--namespace"},
      {{"--service", "Bad_Name", "--namespace", "ns", "--out-dir", dir}, "--service"},
      {{"--service", "9svc", "--namespace", "ns", "--out-dir", dir}, "--service"},
      {{"--service", "svc", "--namespace", "a.b", "--out-dir", dir}, "--namespace"},
      {{"--service", "svc", "--namespace", "", "--out-dir", dir}, "--namespace"},
      {{"--service", "svc", "--namespace", std::string(64, 'n'), "--out-dir", dir}, "--namespace"},
      {{"--service", "svc", "--namespace", "ns", "--days", "0", "--out-dir", dir}, "--days"},
      {{"--service", "svc", "--namespace", "ns", "--days", "3651", "--out-dir", dir}, "--days"},
      {{"--service", "svc", "--namespace", "ns", "--days", "-5", "--out-dir", dir}, "--days"},
      {{"--service", "svc", "--namespace", "ns", "--days", "abc", "--out-dir", dir}, "--days"},
      {{"--service", "svc", "--namespace", "ns", "--days", "10x", "--out-dir", dir}, "--days"},
      {{"--service", "svc", "--namespace", "ns", "--days", "99999999999", "--out-dir", dir}, "--days"},
      {{"--service", "svc", "--namespace", "ns", "--out-dir", dir, "--days"}, "--days"},
      {{"--service", "svc", "--namespace", "ns", "--out-dir", ""}, "--out-dir"},
      {{"--service", "svc", "--namespace", "ns", "--out-dir", dir, "--bogus"}, "--bogus"},
      {{"--service", "svc", "--namespace", "ns", "--out-dir", dir, "--force=yes"}, "--force"},
      {{"--service", "svc", "--service", "svc", "--namespace", "ns", "--out-dir", dir}, "--service"},
      {{"--service", "svc", "--namespace", "ns", "--out-dir", dir, "extra"}, "extra"},
      {{"--service"}, "--service"},
  };
  for (const Case& c : cases) {
    std::string joined;
    for (const std::string& a : c.args) joined += "'" + a + "' ";
    INFO("args: " << joined);
    Captured r = certs_cli(c.args);
    CHECK(r.rc == 2);
    CHECK(r.out == "");
    CHECK(r.err.find(c.flag) != std::string::npos);
    CHECK_FALSE(exists(dir));
  }
  // The boundaries are accepted.
  CHECK(certs_cli({"--service", "svc", "--namespace", "ns", "--days", "1", "--out-dir", tmp.file("a")}).rc == 0);
  CHECK(certs_cli({"--service", "svc", "--namespace", "ns", "--days", "3650", "--out-dir", tmp.file("b")}).rc == 0);
}

TEST_CASE("certs --out-dir that is a file exits 2", "[certs][cli]") {
  TempDir tmp;
  spit(tmp.file("file"), "x");
  Captured r = certs_cli({"--service", "svc", "--namespace", "ns", "--out-dir", tmp.file("file")});
  CHECK(r.rc == 2);
  CHECK(r.out == "");
  CHECK(r.err.find(tmp.file("file")) != std::string::npos);
}

TEST_CASE("certs --help prints usage and exits 0", "[certs][cli]") {
  for (const char* flag : {"--help", "-h"}) {
    Captured r = certs_cli({flag});
    CHECK(r.rc == 0);
    CHECK(r.out.find("--service NAME") != std::string::npos);
    CHECK(r.out.find("--force") != std::string::npos);
  }
}

TEST_CASE("the gpu-admission binary dispatches certs", "[certs][cli][binary]") {
  TempDir tmp;
  std::string out_file = tmp.file("stdout");
  std::string command = std::string("'") + test_paths::binary() + "' certs --service svc --namespace ns --out-dir '" +
                        tmp.file("tls") + "' >'" + out_file + "' 2>/dev/null";
  int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::string printed = slurp(out_file);
  REQUIRE(printed.ends_with("\n"));
  CHECK(base64_decode_strict(printed.substr(0, printed.size() - 1)) == slurp(tmp.file("tls/ca.crt")));
  CHECK(file_mode(tmp.file("tls/tls.key")) == 0600);

  std::string bad = std::string("'") + test_paths::binary() + "' certs --service svc >/dev/null 2>&1";
  status = std::system(bad.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
}
