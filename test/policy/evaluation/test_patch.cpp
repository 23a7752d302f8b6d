// policy::Patch, the JSON Patch that mutations write into: operations as views of one text
// buffer, iteration, appending one patch to another, reuse after clear(), and the JSON text
// (pointer-token and JSON-string escaping).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "policy/evaluation/patch.h"

using namespace gpu_admission;
using policy::Patch;
using policy::PatchOp;

namespace {

// Builds the three operations used below through the writer form, as PodPatcher does.
void write_ops(Patch& patch) {
  patch.add([](std::string& out) { out += "/metadata/labels"; }, [](std::string& out) { out += "{}"; });
  patch.add(
      [](std::string& out) {
        out += "/metadata/labels/";
        policy::append_pointer_token(out, "example.com/te~am");
      },
      [](std::string& out) { policy::append_json_string(out, "a \"quoted\"\tvalue"); });
  patch.remove([](std::string& out) {
    out += "/spec/containers/0/resources/limits/";
    policy::append_pointer_token(out, "nvidia.com/gpu");
  });
}

const char* const kOpsJson =
    R"([{"op":"add","path":"/metadata/labels","value":{}},)"
    R"({"op":"add","path":"/metadata/labels/example.com~1te~0am","value":"a \"quoted\"\tvalue"},)"
    R"({"op":"remove","path":"/spec/containers/0/resources/limits/nvidia.com~1gpu"}])";

}  // namespace

TEST_CASE("patch: an empty patch is an empty JSON array", "[patch]") {
  Patch patch;
  CHECK(patch.empty());
  CHECK(patch.size() == 0);
  CHECK(patch.begin() == patch.end());
  CHECK(policy::patch_to_json(patch) == "[]");
}

TEST_CASE("patch: add and remove operations view their path and value", "[patch]") {
  Patch patch;
  write_ops(patch);
  REQUIRE(patch.size() == 3);
  CHECK_FALSE(patch.empty());

  CHECK(patch[0].kind == PatchOp::Kind::Add);
  CHECK(patch[0].path == "/metadata/labels");
  CHECK(patch[0].value == "{}");
  CHECK(patch[1].kind == PatchOp::Kind::Add);
  CHECK(patch[1].path == "/metadata/labels/example.com~1te~0am");
  CHECK(patch[1].value == R"("a \"quoted\"\tvalue")");
  CHECK(patch[2].kind == PatchOp::Kind::Remove);
  CHECK(patch[2].path == "/spec/containers/0/resources/limits/nvidia.com~1gpu");
  CHECK(patch[2].value.empty());
}

TEST_CASE("patch: iteration yields every operation in order", "[patch]") {
  Patch patch;
  write_ops(patch);
  std::vector<std::string> paths;
  for (const auto& op : patch) paths.emplace_back(op.path);
  CHECK(paths == std::vector<std::string>{"/metadata/labels", "/metadata/labels/example.com~1te~0am",
                                          "/spec/containers/0/resources/limits/nvidia.com~1gpu"});
}

TEST_CASE("patch: the JSON text escapes pointer tokens and JSON strings", "[patch]") {
  Patch patch;
  write_ops(patch);
  CHECK(policy::patch_to_json(patch) == kOpsJson);

  std::string out = "prefix:";
  policy::append_patch_json(out, patch);
  CHECK(out == std::string("prefix:") + kOpsJson);
}

TEST_CASE("patch: a path is JSON-escaped when written out", "[patch]") {
  Patch patch;
  patch.add("/metadata/annotations/a\"b\\c\x01", "\"x\"");
  patch.remove("/metadata/labels/tab\there");
  CHECK(patch[0].path == "/metadata/annotations/a\"b\\c\x01");
  CHECK(policy::patch_to_json(patch) ==
        R"([{"op":"add","path":"/metadata/annotations/a\"b\\c\u0001","value":"x"},)"
        R"({"op":"remove","path":"/metadata/labels/tab\there"}])");
}

TEST_CASE("patch: append adds the other patch's operations after its own", "[patch]") {
  Patch first;
  first.add("/spec/nodeSelector", "{}");
  Patch second;
  write_ops(second);

  first.append(second);
  REQUIRE(first.size() == 4);
  CHECK(first[0].path == "/spec/nodeSelector");
  for (size_t i = 0; i < second.size(); ++i) {
    CHECK(first[i + 1].kind == second[i].kind);
    CHECK(first[i + 1].path == second[i].path);
    CHECK(first[i + 1].value == second[i].value);
  }
  CHECK(policy::patch_to_json(first) ==
        std::string(R"([{"op":"add","path":"/spec/nodeSelector","value":{}},)") + (kOpsJson + 1));

  SECTION("a patch appended to itself doubles") {
    Patch twice;
    write_ops(twice);
    twice.append(twice);
    REQUIRE(twice.size() == 6);
    for (size_t i = 0; i < 3; ++i) {
      CHECK(twice[i + 3].path == twice[i].path);
      CHECK(twice[i + 3].value == twice[i].value);
    }
  }
  SECTION("appending an empty patch changes nothing") {
    const std::string before = policy::patch_to_json(first);
    first.append(Patch{});
    CHECK(policy::patch_to_json(first) == before);
  }
}

TEST_CASE("patch: clear() empties the patch and the next one is written alike", "[patch]") {
  Patch patch;
  write_ops(patch);
  const std::string before = policy::patch_to_json(patch);
  patch.clear();
  CHECK(patch.empty());
  CHECK(policy::patch_to_json(patch) == "[]");

  write_ops(patch);
  CHECK(policy::patch_to_json(patch) == before);
  CHECK(policy::patch_to_json(patch) == kOpsJson);
}
