// The one Catch2 main shared by every test executable. The binaries the tests start find a
// cluster as kubectl does ($KUBECONFIG, ~/.kube/config): $KUBECONFIG names a file that does not
// exist, so that none of them reaches the cluster of whoever runs the tests. Tests of those
// lookups give the binary an environment of their own.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <stdlib.h>

int main(int argc, char* argv[]) {
  ::setenv("KUBECONFIG", "/nonexistent/gpu-admission-tests/kubeconfig", 1);
  return Catch::Session().run(argc, argv);
}
