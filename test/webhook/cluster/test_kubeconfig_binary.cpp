// `audit` and `serve --cluster required` through the binary, finding the cluster as kubectl
// does: $KUBECONFIG's files merged with --context, ~/.kube/config with an exec plugin, and the
// errors of a failing plugin, an interactive one and a missing file; kubectl runs with the same
// environment as the reference.
#include <catch2/catch.hpp>

#include <filesystem>

#include "kubeconfig_test_support.h"
#include "serve_child.h"
#include "webhook/server/server_test_support.h"

using namespace cluster_test;

namespace {

// The fake API server with one pod, and a folder to be $HOME.
struct Home {
  FakeApiServer server;
  TempDir dir;
  Home() {
    server.put("namespaces", namespace_object("team-a"));
    server.put("pods", {{"metadata", {{"name", "p"}, {"namespace", "team-a"}}},
                        {"spec", {{"containers", Json::array({{{"name", "c"}, {"image", "registry.example.com/a:1"}}})}}}});
    REQUIRE(server.start());
  }
  std::string home() const { return dir.path.string(); }
  // A kubeconfig at `path` whose context "fake" (current unless told) reaches the fake as `user`.
  void write(const std::string& path, const Json& user, const std::string& current = "fake") const {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    Kubeconfig()
        .cluster("fake", fake_cluster(server, dir.file("ca.crt")))
        .user("u", user)
        .context("fake", "fake", "u")
        .current(current)
        .write(path);
  }
};

// The binary's audit of the cluster as JSON, with `environment`.
BinaryRun audit(const std::vector<std::string>& extra, const std::vector<std::string>& environment) {
  std::vector<std::string> args = {"audit", "-o", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_binary(args, environment);
}

bool audited_the_pod(const BinaryRun& run) {
  const Json out = Json::parse(run.out, nullptr, false);
  return run.code != 2 && out.is_object() && out["judged"]["Pod"] == 1;
}

}  // namespace

TEST_CASE("cluster kubeconfig binary: audit merges $KUBECONFIG's files and takes --context", "[cluster][binary][kubeconfig]") {
  Home h;
  // The first file's current context points at a server nobody runs; the second reaches the fake.
  Kubeconfig()
      .cluster("nowhere", {{"server", "https://127.0.0.1:1"}})
      .user("nobody", {{"token", "x"}})
      .context("nowhere", "nowhere", "nobody")
      .current("nowhere")
      .write(h.dir.file("first"));
  h.write(h.dir.file("second"), {{"token", h.server.token}});
  const std::string list = h.dir.file("first") + ":" + h.dir.file("missing") + ":" + h.dir.file("second");
  const auto environment = environment_with({{"KUBECONFIG", list}, {"HOME", h.home()}});

  BinaryRun run = audit({"--context", "fake"}, environment);
  INFO(run.out << run.err);
  CHECK(audited_the_pod(run));
  run = audit({}, environment);  // current-context: the first file's
  CHECK(run.code == 2);
  CHECK(contains(run.err, "127.0.0.1:1"));
  run = audit({"--context", "elsewhere"}, environment);
  CHECK(run.code == 2);
  CHECK(contains(run.err, "--context \"elsewhere\" is not among its contexts"));
  run = audit({"--context", "fake", "pods.yaml"}, environment);
  CHECK(run.code == 2);
  CHECK(contains(run.err, "give either FILEs or --kubeconfig/--context"));

  if (!have_kubectl()) return;
  KubectlRun theirs = kubectl("--context fake get pods -A -o name", h.home(), "KUBECONFIG=" + list);
  INFO(theirs.output);
  CHECK(theirs.status == 0);
  CHECK(contains(theirs.output, "pod/p"));
  theirs = kubectl("get pods -A -o name", h.home(), "KUBECONFIG=" + list);
  CHECK(theirs.status != 0);
}

TEST_CASE("cluster kubeconfig binary: audit from ~/.kube/config with an exec plugin, as from a laptop", "[cluster][binary][kubeconfig]") {
  Home h;
  const std::string plugin = write_token_plugin(h.dir);
  h.write(h.dir.file(".kube/config"), exec_user(plugin, {{"FIXED_TOKEN", h.server.token}}));
  const auto environment = environment_with({{"HOME", h.home()}}, {"KUBECONFIG", "KUBERNETES_SERVICE_HOST"});
  const BinaryRun run = audit({}, environment);
  INFO(run.out << run.err);
  CHECK(audited_the_pod(run));
  CHECK(plugin_runs(h.dir) == 1);  // one run for discovery and every list
  if (!have_kubectl()) return;
  const KubectlRun theirs = kubectl("get pods -A -o name", h.home(), "env -u KUBECONFIG");
  INFO(theirs.output);
  CHECK(theirs.status == 0);
  CHECK(plugin_runs(h.dir) == 2);
}

TEST_CASE("cluster kubeconfig binary: audit's errors name the kubeconfig, context and user", "[cluster][binary][kubeconfig]") {
  Home h;
  const std::string config = h.dir.file(".kube/config");
  const auto environment = environment_with({{"HOME", h.home()}}, {"KUBECONFIG", "KUBERNETES_SERVICE_HOST"});
  const std::string origin = "kubeconfig " + config + ": context \"fake\" (user \"u\")";

  const std::string failing = write_script(h.dir, "aws", "echo 'the SSO session has expired' >&2\nexit 255\n");
  h.write(config, exec_user(failing));
  BinaryRun run = audit({}, environment);
  INFO(run.err);
  CHECK(run.code == 2);
  CHECK(contains(run.err, origin + ": exec plugin \"" + failing + "\" exited 255: the SSO session has expired"));

  Json always = exec_user(failing);
  always["exec"]["interactiveMode"] = "Always";
  h.write(config, always);
  run = audit({}, environment);
  CHECK(run.code == 2);
  CHECK(contains(run.err, origin + ": exec plugin \"" + failing + "\" has interactiveMode Always"));

  h.write(config, {{"auth-provider", {{"name", "gcp"}}}});
  run = audit({}, environment);
  CHECK(run.code == 2);
  CHECK(contains(run.err, origin + ": auth-provider \"gcp\" is not supported"));
  CHECK(contains(run.err, "gke-gcloud-auth-plugin"));

  run = audit({"--kubeconfig", h.dir.file("missing")}, environment);
  CHECK(run.code == 2);
  CHECK(contains(run.err, "kubeconfig " + h.dir.file("missing") + ": cannot read"));
}

TEST_CASE("cluster kubeconfig binary: serve --cluster required with an exec plugin from $KUBECONFIG and --context", "[cluster][binary][kubeconfig]") {
  Home h;
  const std::string plugin = write_token_plugin(h.dir);
  h.write(h.dir.file("config"), exec_user(plugin, {{"FIXED_TOKEN", h.server.token}, {"SAY", "using profile prod"}}),
          "other");
  const auto environment = environment_with({{"KUBECONFIG", h.dir.file("config")}, {"HOME", h.home()}});
  {
    Child serve({"serve", "--cluster", "required", "--context", "fake", "--listen", "127.0.0.1:0", "--metrics-listen",
                 "", "--grace-period", "1"},
                h.dir.file("serve.log"), environment);
    const Json serving = serve.log_line("gpu-admission serving");
    INFO(serve.log());
    REQUIRE(serving.is_object());
    CHECK(contains(serve.log(), "cluster state on"));
    server_test::TlsClient client;
    REQUIRE(client.connect(serving["port"].get<int>()));
    CHECK(eventually([&] { return client.request("GET", "/readyz").status == 200; }));
    // The plugin's stderr is a line of the JSON log, not loose text in it.
    const Json said = serve.log_line("exec credential plugin wrote to its standard error");
    CHECK(said["stderr"] == "using profile prod");
    CHECK(plugin_runs(h.dir) == 1);
  }
  // A failing plugin stops serve at start-up with the same words as audit.
  const std::string failing = write_script(h.dir, "gke-gcloud-auth-plugin", "echo 'reauthentication required' >&2\nexit 1\n");
  h.write(h.dir.file("config"), exec_user(failing));
  Child serve({"serve", "--cluster", "required", "--listen", "127.0.0.1:0", "--metrics-listen", ""},
              h.dir.file("failing.log"), environment);
  CHECK(serve.wait_exit(15s) == 2);
  INFO(serve.log());
  CHECK(contains(serve.log(), "kubeconfig " + h.dir.file("config") + ": context \\\"fake\\\" (user \\\"u\\\"): exec plugin"));
  CHECK(contains(serve.log(), "exited 1: reauthentication required"));
}
