// Kubeconfig and in-cluster loading: the shapes kubectl writes (written here by kubectl itself
// when it is installed), inline -data fields, relative files, token files, client certificates,
// and the errors for what cannot be used; the --cluster mode choice.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "certs/certs.h"
#include "cluster_test_support.h"

using namespace cluster_test;

namespace {

const std::string kInline = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: prod
  cluster: {server: "https://prod.example:6443"}
- name: dev
  cluster:
    server: https://10.0.0.1:6443/k8s/clusters/c-1/
    certificate-authority-data: LS0tLS1CRUdJTg==
contexts:
- name: dev
  context: {cluster: dev, user: alice, namespace: team-a}
users:
- name: alice
  user:
    token: abc.def
)";

bool run(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

}  // namespace

TEST_CASE("cluster kubeconfig: inline data, server URL with a path, token", "[cluster][kubeconfig]") {
  const auto load = cl::parse_kubeconfig(kInline, "/home/a/.kube/config");
  INFO(load.error);
  REQUIRE(load.config);
  CHECK(load.config->host == "10.0.0.1");
  CHECK(load.config->port == 6443);
  CHECK(load.config->path_prefix == "/k8s/clusters/c-1");
  CHECK(load.config->ca_pem == "-----BEGIN");
  CHECK(load.config->token == "abc.def");
  CHECK(load.config->source.find("context dev") != std::string::npos);
}

TEST_CASE("cluster kubeconfig: errors name the file and what is wrong", "[cluster][kubeconfig]") {
  auto with = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  CHECK(cl::parse_kubeconfig(with(kInline, "current-context: dev", "current-context: gone"), "k").error.find("\"gone\" is not among its contexts") != std::string::npos);
  CHECK(cl::parse_kubeconfig(with(kInline, "https://10.0.0.1", "http://10.0.0.1"), "k").error.find("not an https:// URL") != std::string::npos);
  CHECK(cl::parse_kubeconfig(with(kInline, "LS0tLS1CRUdJTg==", "ab*cd"), "k").error.find("not valid base64") != std::string::npos);
  CHECK(cl::parse_kubeconfig(with(kInline, "token: abc.def", "exec: {command: gke-gcloud-auth-plugin}"), "k").error.find("exec plugin") != std::string::npos);
  CHECK(cl::parse_kubeconfig("key: [", "k").error.find("kubeconfig k") == 0);
  CHECK(cl::load_kubeconfig("/nonexistent/kubeconfig").error.find("/nonexistent/kubeconfig") != std::string::npos);
}

TEST_CASE("cluster kubeconfig: files written by kubectl config", "[cluster][kubeconfig]") {
  if (!run("kubectl version --client")) {
    WARN("skipped: kubectl not found");
    return;
  }
  TempDir dir;
  const auto pair = gpu_admission::certs::generate_localhost_pair();
  write_text(dir.file("ca.crt"), pair.cert_pem);
  write_text(dir.file("client.crt"), pair.cert_pem);
  write_text(dir.file("client.key"), pair.key_pem);
  // kubectl makes relative file names absolute against its working directory.
  const std::string kc = "cd " + dir.path.string() + " && kubectl config --kubeconfig " + dir.file("config") + " ";
  REQUIRE(run(kc + "set-cluster c1 --server=https://127.0.0.1:6443 --certificate-authority=" + dir.file("ca.crt") + " --embed-certs=true"));
  REQUIRE(run(kc + "set-cluster c2 --server=https://[::1]:8443 --certificate-authority=ca.crt"));
  REQUIRE(run(kc + "set-credentials token-user --token=t0k3n"));
  REQUIRE(run(kc + "set-credentials cert-user --client-certificate=" + dir.file("client.crt") + " --client-key=" + dir.file("client.key") + " --embed-certs=true"));
  REQUIRE(run(kc + "set-credentials file-user --client-certificate=client.crt --client-key=client.key"));
  REQUIRE(run(kc + "set-context a --cluster=c1 --user=token-user"));
  REQUIRE(run(kc + "set-context b --cluster=c2 --user=cert-user"));
  REQUIRE(run(kc + "set-context c --cluster=c1 --user=file-user"));

  REQUIRE(run(kc + "use-context a"));
  auto load = cl::load_kubeconfig(dir.file("config"));
  INFO(load.error);
  REQUIRE(load.config);
  CHECK(load.config->host == "127.0.0.1");
  CHECK(load.config->ca_pem == pair.cert_pem);  // embedded as certificate-authority-data
  CHECK(load.config->token == "t0k3n");

  REQUIRE(run(kc + "use-context b"));
  load = cl::load_kubeconfig(dir.file("config"));
  INFO(load.error);
  REQUIRE(load.config);
  CHECK(load.config->host == "::1");
  CHECK(load.config->port == 8443);
  CHECK(load.config->ca_pem == pair.cert_pem);  // a file name relative to the kubeconfig
  CHECK(load.config->client_cert_pem == pair.cert_pem);
  CHECK(load.config->client_key_pem == pair.key_pem);

  REQUIRE(run(kc + "use-context c"));
  load = cl::load_kubeconfig(dir.file("config"));
  INFO(load.error);
  REQUIRE(load.config);
  CHECK(load.config->client_key_pem == pair.key_pem);
  CHECK(cl::KubeClient(*load.config).bearer_token().empty());
  std::string error;
  cl::KubeClient client(*load.config);
  CHECK(client.init(error));
}

TEST_CASE("cluster kubeconfig: in-cluster service account and the --cluster modes", "[cluster][kubeconfig]") {
  TempDir dir;
  write_text(dir.file("token"), "sa-token\n");
  write_text(dir.file("ca.crt"), gpu_admission::certs::generate_localhost_pair().cert_pem);
  const cl::InClusterPaths paths{dir.file("token"), dir.file("ca.crt")};
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  CHECK_FALSE(cl::load_in_cluster(paths).config);
  CHECK(cl::choose_cluster_config(cl::ClusterMode::Auto, "", paths).error.empty());
  CHECK_FALSE(cl::choose_cluster_config(cl::ClusterMode::Auto, "", paths).config);
  CHECK(cl::choose_cluster_config(cl::ClusterMode::Required, "", paths).error.find("--cluster required") != std::string::npos);

  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  const auto load = cl::load_in_cluster(paths);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  REQUIRE(load.config);
  CHECK(load.config->host == "10.96.0.1");
  CHECK(load.config->token_file == dir.file("token"));
  cl::KubeClient client(*load.config);
  std::string error;
  REQUIRE(client.init(error));
  CHECK(client.bearer_token() == "sa-token");
  CHECK_FALSE(cl::choose_cluster_config(cl::ClusterMode::Off, "/nonexistent", paths).config);
  CHECK(cl::choose_cluster_config(cl::ClusterMode::Auto, "/nonexistent", paths).error.find("/nonexistent") != std::string::npos);
}

TEST_CASE("cluster kubeconfig: kubectl itself talks to the fake API server", "[cluster][kubeconfig]") {
  if (!run("kubectl version --client")) {
    WARN("skipped: kubectl not found");
    return;
  }
  FakeApiServer server;
  server.put("namespaces", namespace_object("team-a", {{"tenant", "a"}}));
  REQUIRE(server.start());
  TempDir dir;
  server.write_kubeconfig(dir.file("kubeconfig"));
  const std::string command = "HOME=" + dir.path.string() + " kubectl --kubeconfig " + dir.file("kubeconfig") +
                              " --request-timeout=5s get namespaces -o name > " + dir.file("out") + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(dir.file("out"));
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(output);
  CHECK(status == 0);
  CHECK(output.find("namespace/team-a") != std::string::npos);
}
