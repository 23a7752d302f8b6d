// The API client's GETs: kept connections are reused (no CA store load and TLS handshake per
// request), and one the server closed meanwhile is replaced without the caller seeing an error.
#include <catch2/catch.hpp>

#include "webhook/cluster/kube_client.h"
#include "cluster_test_support.h"

using namespace cluster_test;
using namespace std::chrono_literals;

namespace {
const std::string kClaimPath = "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/shared";
}

TEST_CASE("kube client: GETs reuse a kept connection, and one the server closed is replaced", "[cluster]") {
  FakeApiServer server;
  server.put("resourceclaims", claim_object(false, "team-a", "shared", 3));
  REQUIRE(server.start());
  cl::KubeClient client(config_for(server));
  std::string error;
  REQUIRE(client.init(error));

  for (int i = 0; i < 5; ++i) {
    const cl::HttpResult result = client.get(kClaimPath, 5s);
    REQUIRE(result.status == 200);
    CHECK(result.body.find("\"shared\"") != std::string::npos);
  }
  CHECK(server.counters.gets == 5);
  CHECK(server.get_connections() == 1);

  // The server restarts on its port: the kept connection is dead, the next GET still answers.
  const int port = server.port();
  server.stop();
  REQUIRE(server.start(port));
  const cl::HttpResult after = client.get(kClaimPath, 5s);
  CHECK(after.status == 200);
  CHECK(after.error.empty());

  // A GET for something absent is an answer too (404), on the kept connection.
  CHECK(client.get("/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/none", 5s).status == 404);
  CHECK(server.counters.gets == 7);
}
