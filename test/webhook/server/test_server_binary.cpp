// The real `gpu-admission serve` binary (test_paths::binary()) on loopback with free ports: the
// start-up summary, hot reload of the policy (Kubernetes ..data symlink swap), of the
// certificate pair (rename-over) while a keep-alive connection stays open, a bad policy kept
// out, SIGHUP, and SIGTERM draining (readyz 503, exit 0). Also the start-up errors.
#include <catch2/catch.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "webhook/server/server_test_support.h"
#include "webhook/io/default_policy.h"
#include "webhook/spawn_binary.h"
#include "test_paths.h"


namespace fs = std::filesystem;
using namespace server_test;
using gpu_admission::Json;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Replaces `path` atomically with new content, the way most tools rotate files.
void replace_file(const fs::path& path, const std::string& text) {
  const fs::path temporary = path.string() + ".tmp";
  write_file(temporary, text);
  fs::rename(temporary, path);
}

std::string policy_named(const std::string& name) {
  std::string yaml(gpu_admission::webhook::default_policy_yaml());
  const std::string from = "name: default";
  yaml.replace(yaml.find(from), from.size(), "name: " + name);
  return yaml;
}

// The kubelet's way of updating a mounted ConfigMap: new directory, `..data` swapped.
void kubelet_publish(const fs::path& dir, const std::string& name, const std::string& text, int generation) {
  const fs::path version = dir / ("..v" + std::to_string(generation));
  fs::create_directory(version);
  write_file(version / name, text);
  fs::create_directory_symlink(version.filename(), dir / "..data_tmp");
  fs::rename(dir / "..data_tmp", dir / "..data");
  if (!fs::is_symlink(dir / name)) fs::create_symlink(fs::path("..data") / name, dir / name);
}

// Start-up errors are JSON lines too: every line of `log` is a JSON object, and one at level error
// says `message` (human-readable, in msg) and the exit code.
void check_startup_error(const std::string& log, int exit_code, const std::string& message) {
  INFO(log);
  std::istringstream lines(log);
  std::string line;
  int errors = 0;
  while (std::getline(lines, line)) {
    const Json entry = Json::parse(line, nullptr, false);
    REQUIRE(entry.is_object());
    REQUIRE(entry.contains("level"));
    if (entry["level"] != "error") continue;
    ++errors;
    CHECK(entry["exit_code"] == exit_code);
    CHECK(entry["msg"].get<std::string>().find(message) != std::string::npos);
    CHECK(entry["msg"].get<std::string>().rfind("gpu-admission serve: ", 0) == 0);
  }
  CHECK(errors == 1);
}

// A child process running the binary, stderr captured to a file; killed if still running at the end.
class ServeProcess {
 public:
  ServeProcess(const std::vector<std::string>& args, const fs::path& log)
      : pid_(webhook_test::spawn_binary(args, log.string())), log_(log) {}
  ~ServeProcess() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  bool running() const { return pid_ > 0 && !exited_; }
  void signal(int number) { if (running()) ::kill(pid_, number); }

  // The exit code, or -1 if it did not exit within `timeout` (or died of a signal).
  int wait_exit(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exited_ && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        exited_ = true;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    return exited_ ? exit_code_ : -1;
  }

  std::string log() const { return read_file(log_); }

  // The first JSON log line whose msg contains `message` (and whose fields contain `with`, when
  // given), waiting up to `timeout`; null when none appeared.
  Json wait_for_log(const std::string& message, std::chrono::milliseconds timeout = 10s, const std::string& with = "") {
    Json found;
    wait_until([&] {
      std::istringstream lines(log());
      std::string line;
      while (std::getline(lines, line)) {
        if (line.empty() || line.front() != '{') continue;
        Json entry = Json::parse(line, nullptr, false);
        if (entry.is_discarded() || !entry.contains("msg")) continue;
        if (entry["msg"].get<std::string>().find(message) == std::string::npos) continue;
        if (!with.empty() && line.find(with) == std::string::npos) continue;
        found = entry;
        return true;
      }
      return false;
    }, timeout);
    return found;
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
  fs::path log_;
};

std::string scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  auto result = client.Get("/metrics");
  return result ? result->body : "";
}

}  // namespace

TEST_CASE("serve binary: reloads policy and certificate, survives a bad policy, drains on SIGTERM", "[server][binary]") {
  TempDir dir;
  const fs::path config = dir.path / "config";
  fs::create_directory(config);
  kubelet_publish(config, "policy.yaml", policy_named("first"), 1);
  const Pem first_pem = make_ecdsa_localhost();
  write_file(dir.path / "tls.crt", first_pem.cert);
  write_file(dir.path / "tls.key", first_pem.key);

  ServeProcess serve({"serve", "--policy", (config / "policy.yaml").string(), "--tls-cert", (dir.path / "tls.crt").string(),
                      "--tls-key", (dir.path / "tls.key").string(), "--listen", "127.0.0.1:0", "--metrics-listen",
                      "127.0.0.1:0", "--grace-period", "5"},
                     dir.path / "stderr.log");
  REQUIRE(serve.running());
  const Json started = serve.wait_for_log("serving");
  INFO(serve.log());
  REQUIRE(started.is_object());
  const int port = started["port"];
  const int metrics_port = started["metrics_port"];
  CHECK(started["policy"] == "first");
  CHECK(started["certificate_serial"] == serial_of(first_pem.cert));
  CHECK(started["listen"] == "127.0.0.1:" + std::to_string(port));

  TlsClient kept;
  REQUIRE(kept.connect(port));
  CHECK(kept.peer_serial() == serial_of(first_pem.cert));
  CHECK(kept.request("GET", "/readyz").status == 200);
  CHECK(kept.request("POST", "/validate", admission_review("b1")).status == 200);
  CHECK(scrape(metrics_port).find("gpu_admission_policy_info{hash=") != std::string::npos);

  // Policy: the kubelet swaps ..data.
  kubelet_publish(config, "policy.yaml", policy_named("second"), 2);
  CHECK(serve.wait_for_log("policy reloaded", 10s, "\"second\"").is_object());
  CHECK(scrape(metrics_port).find("name=\"second\"") != std::string::npos);

  // A broken policy is logged and counted; the last good one stays.
  kubelet_publish(config, "policy.yaml", "apiVersion: gpu-admission.io/v1alpha1\nkind: GpuAdmissionPolicy\nspec: [", 3);
  CHECK(serve.wait_for_log("policy reload failed").is_object());
  const std::string after_failure = scrape(metrics_port);
  CHECK(after_failure.find("gpu_admission_policy_reloads_total{result=\"failure\"} 1") != std::string::npos);
  CHECK(after_failure.find("name=\"second\"") != std::string::npos);
  CHECK(kept.request("GET", "/readyz").status == 200);

  // Certificate: both files renamed over; the open connection keeps going.
  const Pem second_pem = make_rsa_localhost();
  replace_file(dir.path / "tls.key", second_pem.key);
  replace_file(dir.path / "tls.crt", second_pem.cert);
  CHECK(serve.wait_for_log("certificate reloaded", 10s, serial_of(second_pem.cert)).is_object());
  CHECK(kept.request("POST", "/validate", admission_review("b2")).status == 200);
  TlsClient fresh;
  REQUIRE(fresh.connect(port));
  CHECK(fresh.peer_serial() == serial_of(second_pem.cert));
  CHECK(scrape(metrics_port).find("gpu_admission_certificate_reloads_total{result=\"success\"}") != std::string::npos);

  // SIGHUP reloads everything (the policy is still broken: a second counted failure).
  serve.signal(SIGHUP);
  CHECK(serve.wait_for_log("SIGHUP").is_object());
  CHECK(serve.wait_for_log("certificate reloaded", 10s, "SIGHUP").is_object());
  kubelet_publish(config, "policy.yaml", policy_named("third"), 4);
  CHECK(serve.wait_for_log("policy reloaded", 10s, "\"third\"").is_object());

  // SIGTERM with a readyz request half-sent: it is answered 503, then the process exits 0.
  TlsClient probe;
  REQUIRE(probe.connect(port));
  const std::string ready_request = http_request("GET", "/readyz");
  REQUIRE(probe.send(ready_request.substr(0, 8)));
  std::this_thread::sleep_for(100ms);
  serve.signal(SIGTERM);
  CHECK(serve.wait_for_log("shutting down").is_object());
  REQUIRE(probe.send(ready_request.substr(8)));
  auto ready = probe.read_response();
  CHECK(ready.status == 503);
  CHECK(serve.wait_exit(8s) == 0);
  CHECK(raw_connect(port) < 0);
  CHECK(serve.wait_for_log("stopped", 1s).is_object());
}

TEST_CASE("serve binary: without --tls-cert a self-signed localhost certificate, said on stderr", "[server][binary]") {
  TempDir dir;
  ServeProcess serve({"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--log-level", "warn"},
                     dir.path / "stderr.log");
  const Json notice = serve.wait_for_log("self-signed");
  INFO(serve.log());
  REQUIRE(notice.is_object());
  CHECK(notice["level"] == "warn");
  serve.signal(SIGINT);
  CHECK(serve.wait_exit(8s) == 0);
}

TEST_CASE("serve binary: start-up errors exit non-zero with a clear message", "[server][binary]") {
  TempDir dir;
  const Pem pem = make_ecdsa_localhost();
  write_file(dir.path / "tls.crt", pem.cert);
  write_file(dir.path / "tls.key", pem.key);
  write_file(dir.path / "other.key", make_ecdsa_localhost().key);
  write_file(dir.path / "bad-policy.yaml", "kind: GpuAdmissionPolicy\nspec:\n  rules:\n    privileged: maybe\n");
  const std::string listen = "127.0.0.1:0";

  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"serve", "--bogus"}, 2, "unknown flag"},
      {{"serve", "--tls-cert", (dir.path / "tls.crt").string()}, 2, "together"},
      {{"serve", "--listen", "nonsense"}, 2, "listen"},
      {{"serve", "--log-level", "loud"}, 2, "log-level"},
      {{"serve", "--grace-period", "-1"}, 2, "grace-period"},
      {{"serve", "--max-body-bytes", "lots"}, 2, "max-body-bytes"},
      {{"serve", "--policy", (dir.path / "missing.yaml").string(), "--listen", listen}, 2, "missing.yaml"},
      {{"serve", "--policy", (dir.path / "bad-policy.yaml").string(), "--listen", listen}, 2, "bad-policy.yaml"},
      {{"serve", "--tls-cert", (dir.path / "nope.crt").string(), "--tls-key", (dir.path / "tls.key").string(), "--listen",
        listen},
       2, "nope.crt"},
      {{"serve", "--tls-cert", (dir.path / "tls.crt").string(), "--tls-key", (dir.path / "other.key").string(),
        "--listen", listen},
       2, "key"},
  };
  for (const auto& c : cases) {
    ServeProcess serve(c.args, dir.path / "stderr.log");
    const int code = serve.wait_exit(10s);
    INFO(c.args.back() << ": " << serve.log());
    CHECK(code == c.exit_code);
    check_startup_error(serve.log(), c.exit_code, c.message);
  }

  // The port is taken: exit 1.
  InProcessServer occupying;
  REQUIRE(occupying.started);
  ServeProcess serve({"serve", "--listen", "127.0.0.1:" + std::to_string(occupying.port()), "--metrics-listen", ""},
                     dir.path / "stderr.log");
  CHECK(serve.wait_exit(10s) == 1);
  check_startup_error(serve.log(), 1, "cannot listen");

  ServeProcess help({"serve", "--help"}, dir.path / "stderr.log");
  CHECK(help.wait_exit(10s) == 0);
}
