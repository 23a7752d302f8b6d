// Exec credential plugins against the fake API server, with small plugins written as shell
// scripts: v1 and v1beta1, args, env and KUBERNETES_EXEC_INFO (provideClusterInfo compared with
// what kubectl hands the same plugin), a token kept until shortly before it expires, a 401 that
// fetches a fresh one (once, never in a loop, one run for many requests), client certificates,
// failing plugins and their messages, and kubectl as the reference client on the same files.
#include <catch2/catch.hpp>

#include <fcntl.h>

#include <thread>

#include "certs/certs.h"
#include "kubeconfig_test_support.h"
#include "webhook/ops/logger.h"
#include "webhook/ops/base64.h"

using namespace cluster_test;
using gpu_admission::webhook::base64_encode;

namespace {

constexpr const char* kV1 = "client.authentication.k8s.io/v1";
constexpr const char* kV1beta1 = "client.authentication.k8s.io/v1beta1";

// The fake API server and a folder for the plugin and the kubeconfig.
struct Setup {
  FakeApiServer server;
  TempDir dir;
  std::string kubeconfig;
  Setup() {
    server.put("namespaces", namespace_object("team-a"));
    REQUIRE(server.start());
    kubeconfig = dir.file("config");
  }
  // Writes the kubeconfig (context "fake", user "u" = `user`) and loads it.
  cl::KubeConfig config(const Json& user, Json cluster = nullptr) {
    if (cluster.is_null()) cluster = fake_cluster(server, dir.file("ca.crt"));
    Kubeconfig().cluster("fake", cluster).user("u", user).context("fake", "fake", "u").current("fake").write(kubeconfig);
    auto load = cl::load_kubeconfig(kubeconfig);
    INFO(load.error);
    REQUIRE(load.config);
    return *load.config;
  }
  std::string origin() const { return "kubeconfig " + kubeconfig + ": context \"fake\" (user \"u\")"; }
};

// A logger writing to a file, for the plugin's stderr lines.
struct LogFile {
  TempDir dir;
  int fd = ::open(dir.file("log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  gpu_admission::webhook::Logger logger{gpu_admission::webhook::LogLevel::Info, fd};
  ~LogFile() { ::close(fd); }
  std::string text() const { return read_text(dir.file("log")); }
};

int namespaces_status(const cl::KubeClient& client) { return client.get("/api/v1/namespaces", 5s).status; }

}  // namespace

TEST_CASE("cluster exec plugin: v1 and v1beta1 tokens, with args, env and KUBERNETES_EXEC_INFO", "[cluster][exec]") {
  for (const std::string version : {kV1, kV1beta1}) {
    INFO(version);
    Setup s;
    Json user = exec_user(write_token_plugin(s.dir), {{"FIXED_TOKEN", s.server.token}}, version);
    user["exec"]["args"] = {"get-token", "--cluster-name", "prod"};
    cl::KubeClient client(s.config(user));
    std::string error;
    REQUIRE(client.init(error));
    CHECK(client.exec_runs() == 1);
    CHECK(namespaces_status(client) == 200);
    CHECK(namespaces_status(client) == 200);
    CHECK(client.exec_runs() == 1);  // kept: it expires in an hour
    CHECK(read_text(s.dir.file("args")) == "get-token\n--cluster-name\nprod\n");
    const Json info = Json::parse(read_text(s.dir.file("exec-info")));
    CHECK(info["apiVersion"] == version);
    CHECK(info["kind"] == "ExecCredential");
    CHECK(info["spec"]["interactive"] == false);
    CHECK_FALSE(info["spec"].contains("cluster"));
  }
}

TEST_CASE("cluster exec plugin: provideClusterInfo hands the plugin the cluster kubectl hands it", "[cluster][exec]") {
  Setup s;
  Json user = exec_user(write_token_plugin(s.dir), {{"FIXED_TOKEN", s.server.token}});
  user["exec"]["provideClusterInfo"] = true;
  Json cluster = fake_cluster(s.server, s.dir.file("ca.crt"));
  cluster["extensions"] = {{{"name", "client.authentication.k8s.io/exec"}, {"extension", {{"audience", "test"}}}}};
  cl::KubeClient client(s.config(user, cluster));
  std::string error;
  REQUIRE(client.init(error));
  const Json ours = Json::parse(read_text(s.dir.file("exec-info")));
  CHECK(ours["spec"]["cluster"]["server"] == s.server.server_url());
  CHECK(ours["spec"]["cluster"]["certificate-authority-data"] == base64_encode(s.server.ca_pem()));
  CHECK(ours["spec"]["cluster"]["config"] == Json{{"audience", "test"}});
  if (!have_kubectl()) {
    WARN("kubectl not found: the reference half is skipped");
    return;
  }
  const KubectlRun run = kubectl("--kubeconfig " + s.kubeconfig + " get namespaces -o name", s.dir.path.string());
  INFO(run.output);
  REQUIRE(run.status == 0);
  // The same document, whatever the order of its keys.
  const nlohmann::json theirs = nlohmann::json::parse(read_text(s.dir.file("exec-info")));
  CHECK(nlohmann::json::parse(ours.dump()) == theirs);
}

TEST_CASE("cluster exec plugin: a token is kept until shortly before it expires, then fetched again", "[cluster][exec]") {
  Setup s;
  s.server.set_token("tok-1");
  cl::KubeClient client(s.config(exec_user(write_token_plugin(s.dir), {{"EXPIRES_IN", "3"}})));
  std::string error;
  REQUIRE(client.init(error));
  CHECK(namespaces_status(client) == 200);
  CHECK(namespaces_status(client) == 200);
  CHECK(client.exec_runs() == 1);
  s.server.set_token("tok-2");  // the old one has expired by the next request
  std::this_thread::sleep_for(3100ms);
  CHECK(namespaces_status(client) == 200);
  CHECK(client.exec_runs() == 2);
  CHECK(s.server.counters.unauthorized == 0);  // fetched ahead of expiry, not after a refusal
}

TEST_CASE("cluster exec plugin: a 401 fetches a fresh token once; a second 401 is answered, not looped", "[cluster][exec]") {
  Setup s;
  s.server.set_token("tok-1");
  cl::KubeClient client(s.config(exec_user(write_token_plugin(s.dir))));
  std::string error;
  REQUIRE(client.init(error));
  CHECK(namespaces_status(client) == 200);
  s.server.set_token("tok-2");  // revoked early: still within its expirationTimestamp
  CHECK(namespaces_status(client) == 200);
  CHECK(client.exec_runs() == 2);
  CHECK(s.server.counters.unauthorized == 1);
  // Many requests refused at once: one new run serves them all.
  s.server.set_token("tok-3");
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i) threads.emplace_back([&] { ok += namespaces_status(client) == 200; });
  for (auto& t : threads) t.join();
  CHECK(ok == 6);
  CHECK(client.exec_runs() == 3);
  // The API server refuses whatever the plugin gives: one more run, then the 401 is the answer.
  s.server.set_token("never");
  CHECK(namespaces_status(client) == 401);
  CHECK(client.exec_runs() == 4);
  // Watches (streams) and writes take the same path.
  s.server.set_token("tok-5");
  const auto streamed = client.stream("/api/v1/namespaces?watch=1&timeoutSeconds=1", 3s,
                                      [](const char*, size_t) { return false; }, nullptr);
  CHECK(streamed.status == 200);
  CHECK(client.exec_runs() == 5);
}

TEST_CASE("cluster exec plugin: a client certificate and key from the plugin", "[cluster][exec]") {
  Setup s;
  const auto pair = gpu_admission::certs::generate_localhost_pair();
  s.server.accept_client_certificate(pair.cert_pem);
  s.server.set_token("not-this-one");
  const Json credential = {{"apiVersion", kV1}, {"kind", "ExecCredential"},
                           {"status", {{"clientCertificateData", pair.cert_pem}, {"clientKeyData", pair.key_pem}}}};
  write_text(s.dir.file("credential.json"), credential.dump());
  const std::string plugin = write_script(s.dir, "cert-plugin", "echo run >> \"$(dirname \"$0\")/runs\"\ncat \"$(dirname \"$0\")/credential.json\"\n");
  cl::KubeClient client(s.config(exec_user(plugin)));
  std::string error;
  REQUIRE(client.init(error));
  CHECK(namespaces_status(client) == 200);
  CHECK(client.bearer_token().empty());
  CHECK(client.exec_runs() == 1);  // no expirationTimestamp: kept until a 401
  if (!have_kubectl()) return;
  const KubectlRun run = kubectl("--kubeconfig " + s.kubeconfig + " get namespaces -o name", s.dir.path.string());
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK(contains(run.output, "namespace/team-a"));
}

TEST_CASE("cluster exec plugin: failures name the kubeconfig, context and user, and what went wrong", "[cluster][exec]") {
  struct Case {
    std::string script;
    std::vector<std::pair<std::string, std::string>> env;
    std::string says;
  };
  const std::string ok_json = R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)";
  const std::vector<Case> cases = {
      {"echo 'token expired: run aws sso login' >&2\nexit 1\n", {}, "exited 1: token expired: run aws sso login"},
      {"kill -9 $$\n", {}, "was killed by signal 9"},
      {"echo hello\n", {}, "its output is not an ExecCredential"},
      {"echo '" + ok_json + R"("status":{}}')" + "\n", {}, "neither a token nor a client certificate"},
      {"echo '" + ok_json + "}'\n", {}, "its ExecCredential has no status"},
      {"echo '" + ok_json + R"("status":{"token":"t","expirationTimestamp":"soon"}}')" + "\n", {},
       "its expirationTimestamp \"soon\" is not an RFC 3339 time"},
      {"echo '" + ok_json + R"("status":{"clientKeyData":"k"}}')" + "\n", {}, "a client certificate without its key"},
      {"head -c 2000000 /dev/zero\n", {}, "wrote more than 1 MiB to its standard output"},
  };
  for (const auto& c : cases) {
    INFO(c.script);
    Setup s;
    const std::string plugin = write_script(s.dir, "plugin", c.script);
    LogFile log;
    cl::KubeClient client(s.config(exec_user(plugin, c.env)));
    client.set_logger(&log.logger);
    std::string error;
    CHECK_FALSE(client.init(error));
    CHECK(error.find(s.origin() + ": exec plugin \"" + plugin + "\"") == 0);
    CHECK(contains(error, c.says));
  }
  Setup s;
  // The plugin's answer must be in the version it was configured for.
  cl::KubeClient wrong_version(
      s.config(exec_user(write_token_plugin(s.dir), {{"ANSWER_VERSION", kV1beta1}})));
  std::string error;
  CHECK_FALSE(wrong_version.init(error));
  CHECK(contains(error, "it is configured for client.authentication.k8s.io/v1 but answered in "
                        "\"client.authentication.k8s.io/v1beta1\""));
  // Not installed: the installHint says how to get it.
  Json user = exec_user("gpu-admission-no-such-plugin");
  user["exec"]["installHint"] = "install it with: brew install no-such-plugin";
  cl::KubeClient missing(s.config(user));
  CHECK_FALSE(missing.init(error));
  CHECK(error == s.origin() + ": exec plugin \"gpu-admission-no-such-plugin\" was not found on PATH: "
                              "install it with: brew install no-such-plugin");
  // A plugin that hangs is stopped at the deadline (and whatever it started with it).
  cl::KubeClient slow(s.config(exec_user(write_script(s.dir, "slow", "sleep 20\n"))));
  slow.set_exec_timeout(1s);
  const auto started = std::chrono::steady_clock::now();
  CHECK_FALSE(slow.init(error));
  CHECK(std::chrono::steady_clock::now() - started < 8s);
  CHECK(contains(error, "did not finish within 1 s"));
}

TEST_CASE("cluster exec plugin: its stderr goes to the log; a user's own token wins over its plugin", "[cluster][exec]") {
  Setup s;
  LogFile log;
  cl::KubeClient client(s.config(
      exec_user(write_token_plugin(s.dir), {{"FIXED_TOKEN", s.server.token}, {"SAY", "refreshing the SSO session"}})));
  client.set_logger(&log.logger);
  std::string error;
  REQUIRE(client.init(error));
  CHECK(contains(log.text(), "exec credential plugin wrote to its standard error"));
  CHECK(contains(log.text(), "refreshing the SSO session"));
  CHECK(contains(log.text(), s.origin().substr(0, 20)));

  Json user = exec_user(write_script(s.dir, "never-run", "exit 1\n"));
  user["token"] = s.server.token;
  cl::KubeClient with_token(s.config(user));
  REQUIRE(with_token.init(error));
  CHECK(with_token.exec_runs() == 0);
  CHECK(namespaces_status(with_token) == 200);
}

TEST_CASE("cluster exec plugin: kubectl takes and refuses the same plugins", "[cluster][exec]") {
  if (!have_kubectl()) {
    WARN("skipped: kubectl not found");
    return;
  }
  struct Case {
    std::string name;
    Json user;       // "PLUGIN" in command is replaced by the token plugin's path
    bool works;
    std::string we_say;
  };
  const std::vector<Case> cases = {
      {"v1 token", exec_user("PLUGIN", {{"FIXED_TOKEN", "fake-token"}}), true, ""},
      {"v1beta1 token", exec_user("PLUGIN", {{"FIXED_TOKEN", "fake-token"}}, kV1beta1), true, ""},
      {"wrong token", exec_user("PLUGIN", {{"FIXED_TOKEN", "wrong"}}), false, ""},
      {"failing", exec_user("PLUGIN", {{"FAIL", "1"}}), false, "exited 3: session expired"},
      {"Always", exec_user("PLUGIN"), false, "interactiveMode Always"},
      {"v1 without interactiveMode", exec_user("PLUGIN"), false, "interactiveMode must be set"},
  };
  for (Case c : cases) {
    INFO(c.name);
    Setup s;
    const std::string plugin = write_script(s.dir, "plugin",
                                            "[ -n \"$FAIL\" ] && { echo 'session expired' >&2; exit 3; }\n"
                                            "exec \"$(dirname \"$0\")/token-plugin\"\n");
    write_token_plugin(s.dir);
    c.user["exec"]["command"] = plugin;
    if (c.name == "Always") c.user["exec"]["interactiveMode"] = "Always";
    if (c.name == "v1 without interactiveMode") c.user["exec"].erase("interactiveMode");
    Kubeconfig()
        .cluster("fake", fake_cluster(s.server, s.dir.file("ca.crt")))
        .user("u", c.user)
        .context("fake", "fake", "u")
        .current("fake")
        .write(s.kubeconfig);
    const KubectlRun theirs = kubectl("--kubeconfig " + s.kubeconfig + " get namespaces -o name", s.dir.path.string());
    INFO(theirs.output);
    CHECK((theirs.status == 0) == c.works);
    auto load = cl::load_kubeconfig(s.kubeconfig);
    std::string error = load.error;
    bool works = false;
    if (load.config) {
      cl::KubeClient client(*load.config);
      LogFile log;
      client.set_logger(&log.logger);
      works = client.init(error) && namespaces_status(client) == 200;
    }
    INFO(error);
    CHECK(works == c.works);
    if (!c.we_say.empty()) CHECK(contains(error, c.we_say));
    if (c.name == "failing") CHECK(contains(theirs.output, "session expired"));  // kubectl passes it on too
  }
}
