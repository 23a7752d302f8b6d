// Where the configuration comes from, as kubectl finds it: --kubeconfig, else $KUBECONFIG's
// files merged (the first file to name a cluster, user or context wins, and the first to set
// current-context), else ~/.kube/config, else the service account; --context; missing files.
// kubectl reads the same files as the reference (`kubectl config view`, and requests to the
// fake API server through the merged kubeconfig).
#include <catch2/catch.hpp>

#include <filesystem>

#include "certs/certs.h"
#include "kubeconfig_test_support.h"

using namespace cluster_test;

namespace {

// Two kubeconfigs in folders of their own (relative CA paths resolve against each):
// a: clusters shared (server A) and only-a; users alice; contexts ctx-a, shared; current ctx-a.
// b: clusters shared (server B) and only-b; users bob; contexts ctx-b, shared; current ctx-b.
struct TwoFiles {
  TempDir dir;
  std::string a, b;
  TwoFiles() {
    std::filesystem::create_directories(dir.path / "a");
    std::filesystem::create_directories(dir.path / "b");
    a = dir.file("a/config");
    b = dir.file("b/config");
    const auto pair = gpu_admission::certs::generate_localhost_pair();
    write_text(dir.file("a/ca.crt"), pair.cert_pem);
    write_text(dir.file("b/ca.crt"), pair.cert_pem + pair.cert_pem);  // tells the two apart
    Kubeconfig()
        .cluster("shared", {{"server", "https://10.0.0.1:6443"}, {"certificate-authority", "ca.crt"}})
        .cluster("only-a", {{"server", "https://10.0.0.11:6443"}, {"certificate-authority", "ca.crt"}})
        .user("alice", {{"token", "alice-token"}})
        .context("ctx-a", "only-a", "alice")
        .context("shared", "shared", "alice")
        .current("ctx-a")
        .write(a);
    Kubeconfig()
        .cluster("shared", {{"server", "https://10.0.0.2:6443"}, {"certificate-authority", "ca.crt"}})
        .cluster("only-b", {{"server", "https://10.0.0.22:6443"}, {"certificate-authority", "ca.crt"}})
        .user("bob", {{"token", "bob-token"}, {"tokenFile", "token"}})
        .context("ctx-b", "only-b", "bob")
        .context("shared", "shared", "bob")
        .current("ctx-b")
        .write(b);
  }
  cl::KubeConfigOptions options(const std::string& list, const std::string& context = "") const {
    cl::KubeConfigOptions o;
    o.kubeconfig_env = list;
    o.context = context;
    o.home = dir.path.string();  // no .kube/config there
    return o;
  }
};

}  // namespace

TEST_CASE("cluster kubeconfig merge: $KUBECONFIG's files, the first to name something wins", "[cluster][kubeconfig]") {
  TwoFiles f;
  auto load = cl::load_cluster_config(f.options(f.a + ":" + f.b));
  INFO(load.error);
  REQUIRE(load.config);
  CHECK(load.config->host == "10.0.0.11");  // current-context from a, the first to set it
  CHECK(load.config->source == f.a + " (context ctx-a)");

  load = cl::load_cluster_config(f.options(f.b + ":" + f.a));
  REQUIRE(load.config);
  CHECK(load.config->host == "10.0.0.22");  // ctx-b: b is first now

  // The context "shared" and the cluster "shared" are in both: a's whole entries win over b's.
  load = cl::load_cluster_config(f.options(f.a + ":" + f.b, "shared"));
  REQUIRE(load.config);
  CHECK(load.config->host == "10.0.0.1");
  CHECK(load.config->token == "alice-token");
  load = cl::load_cluster_config(f.options(f.b + ":" + f.a, "shared"));
  INFO(load.error);
  REQUIRE(load.config);
  CHECK(load.config->host == "10.0.0.2");
  CHECK(load.config->token_file == f.dir.file("b/token"));  // relative to b, where bob is

  // --context reaches a context of the second file; its relative CA path is relative to that file.
  load = cl::load_cluster_config(f.options(f.a + ":" + f.b, "ctx-b"));
  REQUIRE(load.config);
  CHECK(load.config->host == "10.0.0.22");
  CHECK(load.config->ca_pem == read_text(f.dir.file("b/ca.crt")));
  CHECK(load.config->origin == "kubeconfig " + f.b + ": context \"ctx-b\" (user \"bob\")");

  // Missing files in the list are skipped; repeated ones read once; empty parts ignored.
  load = cl::load_cluster_config(f.options(f.dir.file("missing") + "::" + f.b + ":" + f.b));
  REQUIRE(load.config);
  CHECK(load.config->host == "10.0.0.22");

  // A name that is nowhere, and a file that cannot be read, are errors naming the file.
  load = cl::load_cluster_config(f.options(f.a + ":" + f.b, "ctx-c"));
  CHECK(load.error == "kubeconfig $KUBECONFIG (" + f.a + ":" + f.b + "): --context \"ctx-c\" is not among its contexts");
  write_text(f.dir.file("broken"), "clusters: [\n");
  load = cl::load_cluster_config(f.options(f.a + ":" + f.dir.file("broken")));
  CHECK(load.error.find("kubeconfig " + f.dir.file("broken") + ":") == 0);
}

TEST_CASE("cluster kubeconfig merge: --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else in-cluster", "[cluster][kubeconfig]") {
  TwoFiles f;
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  // --kubeconfig alone is read, whatever $KUBECONFIG says; a missing one is an error.
  cl::KubeConfigOptions o = f.options(f.a);
  o.explicit_path = f.b;
  auto load = cl::load_cluster_config(o);
  REQUIRE(load.config);
  CHECK(load.config->host == "10.0.0.22");
  o.explicit_path = f.dir.file("missing");
  load = cl::load_cluster_config(o);
  CHECK(load.error == "kubeconfig " + f.dir.file("missing") + ": cannot read: No such file or directory");

  // $KUBECONFIG unset or empty: ~/.kube/config.
  std::filesystem::create_directories(f.dir.path / ".kube");
  std::filesystem::copy_file(f.b, f.dir.path / ".kube" / "config");
  write_text(f.dir.file(".kube/ca.crt"), read_text(f.dir.file("b/ca.crt")));
  for (const std::optional<std::string>& env : {std::optional<std::string>(), std::optional<std::string>("")}) {
    o = f.options("");
    o.kubeconfig_env = env;
    load = cl::load_cluster_config(o);
    INFO(load.error);
    REQUIRE(load.config);
    CHECK(load.config->source == f.dir.file(".kube/config") + " (context ctx-b)");
  }
  // $KUBECONFIG set: ~/.kube/config is not read, even when none of its files exists.
  load = cl::load_cluster_config(f.options(f.dir.file("missing")));
  CHECK_FALSE(load.config);
  CHECK(load.error.empty());
  CHECK(load.searched.find("none of the files of $KUBECONFIG") != std::string::npos);
  CHECK(load.searched.find("not in a pod") != std::string::npos);
  // Nothing anywhere: --context has nothing to name.
  load = cl::load_cluster_config(f.options(f.dir.file("missing"), "ctx-a"));
  CHECK(load.error.find("--context ctx-a: there is no kubeconfig") == 0);

  // Files without a current-context and no --context: the service account, as kubectl falls back.
  write_text(f.dir.file("no-current"), "clusters: []\n");
  TempDir sa;
  write_text(sa.file("token"), "sa\n");
  write_text(sa.file("ca.crt"), gpu_admission::certs::generate_localhost_pair().cert_pem);
  o = f.options(f.dir.file("no-current"));
  o.in_cluster = {sa.file("token"), sa.file("ca.crt")};
  load = cl::load_cluster_config(o);
  CHECK_FALSE(load.config);
  CHECK(load.searched.find("has no current-context") != std::string::npos);
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  load = cl::load_cluster_config(o);
  o.explicit_path = f.dir.file("no-current");  // but an explicit file without one is a mistake
  const auto explicit_load = cl::load_cluster_config(o);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  REQUIRE(load.config);
  CHECK(load.config->source == "in-cluster service account");
  CHECK(explicit_load.error.find("has no current-context; give --context NAME") != std::string::npos);
}

TEST_CASE("cluster kubeconfig merge: kubectl merges the same files the same way", "[cluster][kubeconfig]") {
  if (!have_kubectl()) {
    WARN("skipped: kubectl not found");
    return;
  }
  TwoFiles f;
  for (const std::string& list : {f.a + ":" + f.b, f.b + ":" + f.a, f.dir.file("missing") + ":" + f.b}) {
    const KubectlRun view = kubectl("config view -o json", f.dir.path.string(), "KUBECONFIG=" + list);
    INFO(list << "\n" << view.output);
    REQUIRE(view.status == 0);
    const Json merged = Json::parse(view.output, nullptr, false);
    REQUIRE(merged.is_object());
    auto ours = cl::load_cluster_config(f.options(list));
    REQUIRE(ours.config);
    CHECK(ours.config->source.find("(context " + merged["current-context"].get<std::string>() + ")") != std::string::npos);
    // Each context kubectl sees leads to the server it sees.
    for (const Json& context : merged["contexts"]) {
      const std::string name = context["name"], cluster = context["context"]["cluster"];
      std::string server;
      for (const Json& c : merged["clusters"])
        if (c["name"] == cluster) server = c["cluster"]["server"];
      ours = cl::load_cluster_config(f.options(list, name));
      INFO(name << ": " << ours.error);
      REQUIRE(ours.config);
      CHECK(server == "https://" + ours.config->host + ":" + std::to_string(ours.config->port));
    }
  }
}

TEST_CASE("cluster kubeconfig merge: kubectl and our client reach the fake API server through merged files", "[cluster][kubeconfig]") {
  FakeApiServer server;
  server.put("namespaces", namespace_object("team-a"));
  REQUIRE(server.start());
  TempDir dir;
  // The first file points its current context at a cluster nobody serves; the second holds
  // the fake. --context picks the fake's context from the second file.
  Kubeconfig()
      .cluster("nowhere", {{"server", "https://127.0.0.1:1"}})
      .user("nobody", {{"token", "x"}})
      .context("nowhere", "nowhere", "nobody")
      .current("nowhere")
      .write(dir.file("first"));
  Kubeconfig()
      .cluster("fake", fake_cluster(server, dir.file("ca.crt")))
      .user("fake-user", {{"token", server.token}})
      .context("fake", "fake", "fake-user")
      .current("fake")
      .write(dir.file("second"));
  const std::string list = dir.file("first") + ":" + dir.file("second");
  cl::KubeConfigOptions options;
  options.kubeconfig_env = list;
  options.context = "fake";
  const auto load = cl::load_cluster_config(options);
  REQUIRE(load.config);
  cl::KubeClient client(*load.config);
  std::string error;
  REQUIRE(client.init(error));
  const auto result = client.get("/api/v1/namespaces", 5s);
  CHECK(result.status == 200);
  CHECK(contains(result.body, "team-a"));
  if (!have_kubectl()) {
    WARN("kubectl not found: the reference half is skipped");
    return;
  }
  const KubectlRun run = kubectl("--context fake get namespaces -o name", dir.path.string(), "KUBECONFIG=" + list);
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK(contains(run.output, "namespace/team-a"));
}
