// Kubeconfig and in-cluster loading: the shapes kubectl writes (written here by kubectl itself
// when it is installed), inline -data fields, relative files, token files, client certificates,
// exec plugin entries, malformed files and the errors for what cannot be used (each naming the
// file, context and user); the --cluster mode choice.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "certs/certs.h"
#include "kubeconfig_test_support.h"
#include "webhook/ops/base64.h"

using namespace cluster_test;
using gpu_admission::webhook::base64_encode;

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
  cl::KubeConfigOptions options;  // no --kubeconfig, $KUBECONFIG unset, no $HOME
  options.in_cluster = {dir.file("token"), dir.file("ca.crt")};
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  CHECK_FALSE(cl::load_in_cluster(options.in_cluster).config);
  CHECK(cl::choose_cluster_config(cl::ClusterMode::Auto, options).error.empty());
  CHECK_FALSE(cl::choose_cluster_config(cl::ClusterMode::Auto, options).config);
  const auto required = cl::choose_cluster_config(cl::ClusterMode::Required, options);
  CHECK(required.error.find("--cluster required") != std::string::npos);
  CHECK(required.error.find("$KUBECONFIG is unset") != std::string::npos);
  CHECK(required.error.find("not in a pod") != std::string::npos);

  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  const auto load = cl::load_in_cluster(options.in_cluster);
  const auto chosen = cl::choose_cluster_config(cl::ClusterMode::Required, options);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  REQUIRE(load.config);
  CHECK(load.config->host == "10.96.0.1");
  CHECK(load.config->token_file == dir.file("token"));
  REQUIRE(chosen.config);
  CHECK(chosen.config->source == "in-cluster service account");
  cl::KubeClient client(*load.config);
  std::string error;
  REQUIRE(client.init(error));
  CHECK(client.bearer_token() == "sa-token");
  options.explicit_path = "/nonexistent";
  CHECK_FALSE(cl::choose_cluster_config(cl::ClusterMode::Off, options).config);
  CHECK(cl::choose_cluster_config(cl::ClusterMode::Auto, options).error.find("/nonexistent") != std::string::npos);
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

namespace {

// `base` (kInline) with its user replaced by `user_yaml` (the lines under `user:`, indented by 4).
std::string with_user(const std::string& user_yaml, const std::string& base = kInline) {
  const std::string marker = "  user:\n";
  return base.substr(0, base.rfind(marker) + marker.size()) + user_yaml;
}

// kInline with its dev cluster replaced by `cluster_yaml` (indented by 4).
std::string with_cluster(const std::string& cluster_yaml) {
  std::string text = kInline;
  const size_t from = text.find("  cluster:\n    server: https://10.0.0.1");
  const size_t to = text.find("contexts:");
  return text.replace(from, to - from, "  cluster:\n" + cluster_yaml);
}

}  // namespace

TEST_CASE("cluster kubeconfig: malformed files are refused, naming the file and what is wrong", "[cluster][kubeconfig]") {
  struct Case {
    std::string text;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"key: [", "kubeconfig k:"},
      {"- a\n- b\n", "kubeconfig k is not a mapping"},
      {"clusters: {a: b}\n", "kubeconfig k: clusters is not a list"},
      {"users: [{user: {token: t}}]\n", "kubeconfig k: users[0] has no name"},
      {"contexts: [{name: a, context: {cluster: c}}, {name: a, context: {cluster: d}}]\n", "the name \"a\" is there twice"},
      {"contexts: [{name: a, context: text}]\n", "contexts[0] (\"a\"): context is not a mapping"},
      {"current-context: [a]\n", "current-context is not a string"},
      {"current-context: a\n---\ncurrent-context: b\n", "more than one YAML document"},
      {kInline + "- name: alice\n  user: {token: again}\n", "the name \"alice\" is there twice"},
  };
  for (const auto& c : cases) {
    const auto load = cl::parse_kubeconfig(c.text, "k");
    INFO(c.text << "\n=> " << load.error);
    CHECK_FALSE(load.config);
    CHECK(load.error.find(c.says) != std::string::npos);
  }
  // An empty file is an empty kubeconfig, as kubectl reads it: no context, nothing else wrong.
  CHECK(cl::parse_kubeconfig("", "k").error == "kubeconfig k has no current-context");
}

TEST_CASE("cluster kubeconfig: clusters and users serve and audit cannot use are refused with what to use", "[cluster][kubeconfig]") {
  const std::string at_cluster = "kubeconfig k: context \"dev\": cluster \"dev\": ";
  const std::string at_user = "kubeconfig k: context \"dev\" (user \"alice\"): ";
  struct Case {
    std::string text;
    std::string says;
  };
  const std::vector<Case> cases = {
      {with_cluster("    certificate-authority: /nonexistent/ca.crt\n"), at_cluster + "no server"},
      {with_cluster("    server: https://10.0.0.1\n    certificate-authority: /nonexistent/ca.crt\n"),
       at_cluster + "certificate-authority /nonexistent/ca.crt: cannot read"},
      {with_cluster("    server: https://10.0.0.1\n    certificate-authority-data: LS0tLS1CRUdJTg==\n"
                    "    insecure-skip-tls-verify: true\n"),
       at_cluster + "certificate-authority and insecure-skip-tls-verify are both set"},
      {with_cluster("    server: https://10.0.0.1\n    insecure-skip-tls-verify: \"yes\"\n"),
       at_cluster + "insecure-skip-tls-verify is not true or false"},
      {with_cluster("    server: https://10.0.0.1\n    proxy-url: http://proxy:3128\n"),
       at_cluster + "proxy-url http://proxy:3128 is not supported"},
      {with_user("    token: 5\n"), at_user + "token is not a string"},
      {with_user("    auth-provider: {name: gcp, config: {}}\n"), at_user + "auth-provider \"gcp\" is not supported"},
      {with_user("    auth-provider: {name: gcp}\n"), "use the exec plugin gke-gcloud-auth-plugin"},
      {with_user("    auth-provider: {name: azure}\n"), "use the exec plugin kubelogin"},
      {with_user("    auth-provider: {name: oidc}\n"), "use the exec plugin kubelogin"},
      {with_user("    username: admin\n    password: secret\n"), at_user + "basic authentication"},
      {with_user("    token: t\n    as: system:admin\n"), at_user + "impersonation (as) is not supported"},
      {with_user("    client-certificate-data: LS0tLS1CRUdJTg==\n"), at_user + "a client certificate without its key"},
      {with_user("    exec: {command: aws}\n"), at_user + "exec: apiVersion \"\" is not"},
      {with_user("    exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: aws}\n"),
       "v1alpha1 was removed in Kubernetes 1.24"},
      {with_user("    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}\n"),
       at_user + "exec: interactiveMode must be set for client.authentication.k8s.io/v1"},
      {with_user("    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, interactiveMode: Always}\n"),
       at_user + "exec plugin \"aws\" has interactiveMode Always, but serve and audit run without a terminal"},
      {with_user("    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws, interactiveMode: Sometimes}\n"),
       "interactiveMode \"Sometimes\" is not Never, IfAvailable or Always"},
      {with_user("    exec: {apiVersion: client.authentication.k8s.io/v1beta1}\n"), at_user + "exec: no command"},
      {with_user("    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws, args: eks}\n"),
       "exec: args is not a list"},
      {with_user("    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws, env: [{value: x}]}\n"),
       "exec: env: every entry needs a name"},
      {with_user("    exec: [aws]\n"), at_user + "exec is not a mapping"},
  };
  for (const auto& c : cases) {
    const auto load = cl::parse_kubeconfig(c.text, "k");
    INFO(c.text << "\n=> " << load.error);
    CHECK_FALSE(load.config);
    CHECK(load.error.find(c.says) != std::string::npos);
  }
  const auto no_user = cl::parse_kubeconfig(
      std::string(kInline).replace(kInline.find("user: alice"), 11, "user: bob"), "k");
  CHECK(no_user.error == "kubeconfig k: context \"dev\": user \"bob\" is not among the users");
  const auto no_cluster = cl::parse_kubeconfig(
      std::string(kInline).replace(kInline.find("cluster: dev,"), 13, "cluster: gone,"), "k");
  CHECK(no_cluster.error == "kubeconfig k: context \"dev\": cluster \"gone\" is not among the clusters");
}

TEST_CASE("cluster kubeconfig: exec plugin entries, v1 and v1beta1, as kubectl reads them", "[cluster][kubeconfig]") {
  const std::string cluster =
      "    server: https://10.0.0.1:6443\n    certificate-authority-data: LS0tLS1CRUdJTg==\n"
      "    tls-server-name: api.internal\n"
      "    extensions:\n    - name: client.authentication.k8s.io/exec\n      extension: {audience: prod}\n";
  auto load = cl::parse_kubeconfig(with_user("    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
                                       "      command: ./bin/plugin\n      args: [token, --cluster, prod]\n"
                                       "      env: [{name: AWS_PROFILE, value: prod}]\n"
                                       "      provideClusterInfo: true\n      installHint: install it\n",
                                             with_cluster(cluster)),
                                   "/home/a/.kube/config");
  INFO(load.error);
  REQUIRE(load.config);
  REQUIRE(load.config->exec);
  const cl::ExecConfig& exec = *load.config->exec;
  CHECK(exec.command == "/home/a/.kube/./bin/plugin");  // a path: relative to the kubeconfig
  CHECK(exec.args == std::vector<std::string>{"token", "--cluster", "prod"});
  REQUIRE(exec.env.size() == 1);
  CHECK(exec.env[0] == std::pair<std::string, std::string>{"AWS_PROFILE", "prod"});
  CHECK(exec.interactive_mode == "IfAvailable");  // v1beta1's default
  CHECK(exec.install_hint == "install it");
  CHECK(load.config->tls_server_name == "api.internal");
  CHECK(load.config->origin == "kubeconfig /home/a/.kube/config: context \"dev\" (user \"alice\")");
  const Json info = Json::parse(cl::exec_info(exec));
  CHECK(info["apiVersion"] == "client.authentication.k8s.io/v1beta1");
  CHECK(info["kind"] == "ExecCredential");
  CHECK(info["spec"]["interactive"] == false);
  CHECK(info["spec"]["cluster"]["server"] == "https://10.0.0.1:6443");
  CHECK(info["spec"]["cluster"]["certificate-authority-data"] == "LS0tLS1CRUdJTg==");
  CHECK(info["spec"]["cluster"]["tls-server-name"] == "api.internal");
  CHECK(info["spec"]["cluster"]["config"] == Json{{"audience", "prod"}});

  // A bare name is looked up on PATH; without provideClusterInfo there is no cluster.
  load = cl::parse_kubeconfig(with_user("    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, "
                                        "interactiveMode: Never}\n"),
                              "/home/a/.kube/config");
  REQUIRE(load.config);
  REQUIRE(load.config->exec);
  CHECK(load.config->exec->command == "aws");
  CHECK(load.config->exec->interactive_mode == "Never");
  CHECK_FALSE(Json::parse(cl::exec_info(*load.config->exec))["spec"].contains("cluster"));
}

TEST_CASE("cluster kubeconfig: TLS settings and client certificates against the fake API server, as kubectl", "[cluster][kubeconfig]") {
  FakeApiServer server;
  server.put("namespaces", namespace_object("team-a"));
  const auto pair = gpu_admission::certs::generate_localhost_pair();
  server.accept_client_certificate(pair.cert_pem);
  REQUIRE(server.start());
  TempDir dir;
  write_text(dir.file("client.crt"), pair.cert_pem);
  write_text(dir.file("client.key"), pair.key_pem);
  const Json with_ca = fake_cluster(server, dir.file("ca.crt"));
  const Json token = {{"token", server.token}};
  const auto with_name = [&](const std::string& name) {
    Json cluster = with_ca;
    cluster["tls-server-name"] = name;
    return cluster;
  };
  struct Case {
    std::string name;
    Json cluster, user;
    bool works;
  };
  const std::vector<Case> cases = {
      {"tls-server-name in the certificate", with_name("localhost"), token, true},
      {"tls-server-name not in it", with_name("api.example.com"), token, false},
      {"insecure-skip-tls-verify", {{"server", server.server_url()}, {"insecure-skip-tls-verify", true}}, token, true},
      {"no CA: the system store does not know it", {{"server", server.server_url()}}, token, false},
      {"client certificate files", with_ca, {{"client-certificate", "client.crt"}, {"client-key", "client.key"}}, true},
      {"client certificate data", with_ca,
       {{"client-certificate-data", base64_encode(pair.cert_pem)}, {"client-key-data", base64_encode(pair.key_pem)}},
       true},
      {"wrong token", with_ca, {{"token", "wrong"}}, false},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    Kubeconfig().cluster("fake", c.cluster).user("u", c.user).context("fake", "fake", "u").current("fake").write(dir.file("config"));
    const auto load = cl::load_kubeconfig(dir.file("config"));
    INFO(load.error);
    REQUIRE(load.config);
    cl::KubeClient client(*load.config);
    std::string error;
    REQUIRE(client.init(error));
    const auto result = client.get("/api/v1/namespaces", 5s);
    INFO(result.describe());
    CHECK((result.status == 200) == c.works);
    if (!run("kubectl version --client")) continue;
    const KubectlRun theirs = kubectl("--kubeconfig " + dir.file("config") + " get namespaces -o name", dir.path.string());
    INFO(theirs.output);
    CHECK((theirs.status == 0) == c.works);
  }
}
