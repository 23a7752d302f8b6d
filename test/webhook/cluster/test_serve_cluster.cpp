// The real `serve` binary with cluster state: `--cluster required --kubeconfig FILE` against the
// fake API server (readyz after the first lists, pods judged with their templates' GPU counts,
// the GET fallback, cluster metrics, serving on after the API server stops), and the start-up
// errors of --cluster.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <httplib.h>

#include <sstream>

#include "cluster_test_support.h"
#include "webhook/server/server_test_support.h"

extern char** environ;

namespace {

using namespace cluster_test;

// The binary as a child process, stderr to `log`; killed at the end of the scope.
class Child {
 public:
  Child(std::vector<std::string> args, const std::string& log) : log_(log) {
    args.insert(args.begin(), GPU_ADMISSION_BINARY);
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attributes, &all);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    if (posix_spawn(&pid_, argv[0], &actions, &attributes, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  ~Child() {
    if (pid_ > 0 && exit_code_ == -2) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  int wait_exit(std::chrono::milliseconds timeout) {
    eventually([&] {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return exit_code_ != -2;
    }, timeout);
    return exit_code_;
  }
  std::string log() const {
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // A field of the first log line containing `message`, waiting for it.
  Json log_line(const std::string& message, std::chrono::milliseconds timeout = 10s) {
    Json found;
    eventually([&] {
      std::istringstream lines(log());
      for (std::string line; std::getline(lines, line);) {
        if (line.find(message) == std::string::npos || line.empty() || line.front() != '{') continue;
        found = Json::parse(line, nullptr, false);
        return !found.is_discarded();
      }
      return false;
    }, timeout);
    return found;
  }

 private:
  pid_t pid_ = -1;
  int exit_code_ = -2;
  std::string log_;
};

std::string pod_review(const std::string& uid, const std::string& ns, const std::string& template_name) {
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"},
              {"metadata", {{"name", "p-" + uid}, {"namespace", ns}}},
              {"spec", {{"resourceClaims", Json::array({{{"name", "gpus"}, {"resourceClaimTemplateName", template_name}}})},
                        {"containers", Json::array({{{"name", "c"}, {"image", "cuda"},
                                                     {"resources", {{"claims", Json::array({{{"name", "gpus"}}})}}}}})}}}};
  Json review = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
                 {"request", {{"uid", uid}, {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                              {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                              {"namespace", ns}, {"operation", "CREATE"}, {"userInfo", {{"username", "alice"}}},
                              {"object", pod}}}};
  return review.dump();
}

std::string scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  auto result = client.Get("/metrics");
  return result ? result->body : "";
}

}  // namespace

TEST_CASE("cluster serve binary: --cluster required --kubeconfig, readyz, claims from the cluster", "[cluster][binary]") {
  FakeApiServer api;
  api.put("namespaces", namespace_object("research", {{"team", "research"}}));
  api.put("resourceclaimtemplates", claim_object(true, "research", "sixteen", 16));
  REQUIRE(api.start());
  TempDir dir;
  api.write_kubeconfig(dir.file("kubeconfig"));

  Child serve({"serve", "--cluster", "required", "--kubeconfig", dir.file("kubeconfig"), "--listen", "127.0.0.1:0",
               "--metrics-listen", "127.0.0.1:0", "--grace-period", "1"},
              dir.file("stderr.log"));
  const Json serving = serve.log_line("gpu-admission serving");
  INFO(serve.log());
  REQUIRE(serving.is_object());
  const int port = serving["port"];
  const int metrics_port = serving["metrics_port"];
  CHECK(serve.log().find("cluster state on") != std::string::npos);

  server_test::TlsClient client;
  REQUIRE(client.connect(port));
  CHECK(eventually([&] { return client.request("GET", "/readyz").status == 200; }));
  CHECK(serve.log().find("cluster state synced") != std::string::npos);

  // A template from the cache: 16 GPUs, over the default cap of 8.
  auto response = client.request("POST", "/validate", pod_review("u1", "research", "sixteen"));
  CHECK(response.status == 200);
  CHECK(response.body.find("\"allowed\":false") != std::string::npos);
  CHECK(response.body.find("gpu-cap") != std::string::npos);
  CHECK(response.body.find("16") != std::string::npos);
  // A template the watch has not delivered: fetched with one GET.
  api.put("resourceclaimtemplates", claim_object(true, "research", "late", 12), false);
  response = client.request("POST", "/validate", pod_review("u2", "research", "late"));
  CHECK(response.body.find("12") != std::string::npos);
  CHECK(api.counters.gets == 1);
  // No such template: not found, never a silent zero.
  response = client.request("POST", "/validate", pod_review("u3", "research", "missing"));
  CHECK(response.body.find("\"allowed\":false") != std::string::npos);
  CHECK(response.body.find("not found") != std::string::npos);

  const std::string metrics = scrape(metrics_port);
  CHECK(metrics.find("gpu_admission_cluster_synced{resource=\"namespaces\"} 1") != std::string::npos);
  CHECK(metrics.find("gpu_admission_cluster_lookups_total{resource=\"resourceclaimtemplates\",result=\"fetched\"} 1") != std::string::npos);
  CHECK(metrics.find("gpu_admission_cluster_lookups_total{resource=\"resourceclaimtemplates\",result=\"absent\"} 0") == std::string::npos);
  CHECK(api.counters.gets == 2);  // one GET per miss, however often the evaluator asks

  // The API server goes away: still ready, still judging with the last known state.
  api.stop();
  std::this_thread::sleep_for(300ms);
  CHECK(client.request("GET", "/readyz").status == 200);
  response = client.request("POST", "/validate", pod_review("u4", "research", "sixteen"));
  CHECK(response.body.find("16") != std::string::npos);
  CHECK(serve.log_line("cluster watch failed").is_object());
}

TEST_CASE("cluster serve binary: --cluster start-up errors exit 2 with a clear message", "[cluster][binary]") {
  TempDir dir;
  {
    Child serve({"serve", "--cluster", "sometimes"}, dir.file("a.log"));
    CHECK(serve.wait_exit(10s) == 2);
    CHECK(serve.log().find("--cluster must be auto, off or required") != std::string::npos);
  }
  {
    Child serve({"serve", "--cluster", "required", "--kubeconfig", dir.file("missing"), "--listen", "127.0.0.1:0",
                 "--metrics-listen", ""},
                dir.file("b.log"));
    CHECK(serve.wait_exit(10s) == 2);
    CHECK(serve.log().find("cluster state: kubeconfig " + dir.file("missing")) != std::string::npos);
  }
  if (std::getenv("KUBERNETES_SERVICE_HOST") == nullptr) {
    Child serve({"serve", "--cluster", "required", "--listen", "127.0.0.1:0", "--metrics-listen", ""}, dir.file("c.log"));
    CHECK(serve.wait_exit(10s) == 2);
    CHECK(serve.log().find("--cluster required, but there is no cluster configuration") != std::string::npos);
  }
}
