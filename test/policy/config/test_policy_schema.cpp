// The policy schema (policy/config/policy_schema.h) against the loader and `policy show` that walk
// it: a policy that sets every field to something other than its default reads and prints back
// field by field, every table entry is documented, and the tables are well formed. A field added
// to a table but not read or written (or the other way round) fails here.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "policy/config/policy_loader.h"
#include "policy/config/policy_schema.h"
#include "test_paths.h"

using namespace gpu_admission;

namespace {

// Every field set, each (where the loader allows) to a value other than its default.
constexpr const char* kEverything = R"({
  "apiVersion": "gpu-admission.io/v1alpha1",
  "kind": "GpuAdmissionPolicy",
  "metadata": {
    "name": "everything",
    "labels": {
      "a": "b"
    },
    "annotations": {
      "c": "d"
    },
    "namespace": "n"
  },
  "spec": {
    "exemptions": {
      "namespaces": [
        "kube-system"
      ],
      "usernames": [
        "system:serviceaccount:kube-system:x"
      ]
    },
    "gpuResources": {
      "full": [
        "example.com/gpu"
      ],
      "migPrefix": "example.com/mig-",
      "shared": [
        "example.com/gpu.shared"
      ],
      "fractional": [
        "nvidia.com/gpumem"
      ]
    },
    "deviceClasses": {
      "full": [
        "gpu.example.com"
      ],
      "mig": [
        "mig.example.com"
      ],
      "imex": [
        "imex.example.com"
      ],
      "imexAllowed": [
        "imex.example.com"
      ]
    },
    "gpuHostPaths": [
      "/opt/nvidia"
    ],
    "gpuEnvVars": [
      "SITE_GPUS"
    ],
    "deviceAnnotationPrefixes": [
      "cdi.example.com/"
    ],
    "gpuSharingAnnotations": [
      "example.com/gpu-fraction"
    ],
    "defaults": {
      "maxGpusPerPod": 4,
      "unmappedGpuPods": "allow",
      "gpuTaints": [
        {
          "key": "nvidia.com/gpu",
          "value": "present",
          "effect": "NoExecute"
        }
      ]
    },
    "rules": {
      "gpu-cap": "warn"
    },
    "mutations": {
      "hide-gpus": false
    },
    "pools": [
      {
        "name": "a100",
        "nodeSelector": {
          "pool": "a100"
        },
        "trust": "adversarial",
        "gpuModel": "A100-SXM4-80GB",
        "mig": {
          "strategy": "mixed",
          "defaultProfile": "1g.10gb"
        },
        "sharing": "none",
        "taints": [
          {
            "key": "pool",
            "value": "a100",
            "effect": "PreferNoSchedule"
          }
        ],
        "runtimeClasses": [
          "nvidia"
        ]
      }
    ],
    "tenants": [
      {
        "name": "team-a",
        "namespaces": [
          "team-a"
        ],
        "namespaceSelector": {
          "matchLabels": {
            "team": "a"
          },
          "matchExpressions": [
            {
              "key": "env",
              "operator": "NotIn",
              "values": [
                "prod"
              ]
            }
          ]
        },
        "labels": {
          "cost-center": "a"
        },
        "maxGpusPerPod": 2,
        "pools": [
          "a100"
        ],
        "defaultPool": "a100",
        "rules": {
          "gpu-cap": "audit"
        },
        "enforcement": "warn"
      }
    ],
    "workloads": [
      {
        "apiVersion": "example.com/v1",
        "kind": "Trainer",
        "templates": [
          "spec.roles[*].template"
        ]
      }
    ],
    "runtimeClasses": [
      "nvidia",
      "kata"
    ],
    "deviceTolerations": [
      {
        "key": "gpu.example.com/maintenance",
        "operator": "Equal",
        "value": "soon",
        "effect": "NoSchedule"
      }
    ],
    "enforcement": "audit",
    "exceptions": [
      {
        "name": "e",
        "reason": "ticket 1",
        "rules": [
          "gpu-cap"
        ],
        "namespaces": [
          "team-*"
        ],
        "tenants": [
          "team-a"
        ],
        "usernames": [
          "alice"
        ],
        "podLabels": {
          "app": "x"
        },
        "expires": "2030-01-01T00:00:00Z"
      }
    ]
  }
})";

// The value at a field path of a document ("spec.pools[].mig.strategy": the first pool's); null
// when it is not there.
Json at_path(const Json& doc, std::string_view path) {
  Json at = doc;
  while (!path.empty()) {
    const size_t dot = path.find('.');
    std::string key(path.substr(0, dot));
    path = dot == std::string_view::npos ? std::string_view{} : path.substr(dot + 1);
    const bool list = key.ends_with("[]");
    if (list) key.resize(key.size() - 2);
    if (!at.is_object() || !at.contains(key)) return Json();
    at = at[key];
    if (list) {
      if (!at.is_array() || at.empty()) return Json();
      at = at[0];
    }
  }
  return at;
}

// Fields the loader accepts and ignores: `policy show` never prints them.
const std::set<std::string> kIgnored = {"metadata.labels", "metadata.annotations", "metadata.namespace"};

}  // namespace

TEST_CASE("every field of the schema reads and prints back as written", "[policy-schema]") {
  const Json input = Json::parse(kEverything);
  const auto load = policy::load_policy_config(input, policy::SourceMap{});
  for (const auto& issue : load.issues) INFO(issue.path << ": " << issue.message);
  REQUIRE(load.issues.empty());
  const Json shown = policy::policy_config_to_json(load.config);
  const Json blank = policy::policy_config_to_json(
      policy::load_policy_config(Json::parse(R"({"apiVersion": "gpu-admission.io/v1alpha1",
                                               "kind": "GpuAdmissionPolicy", "spec": {}})"),
                                 policy::SourceMap{})
          .config);
  size_t fields = 0;
  for (const auto& field : policy::accepted_policy_fields()) {
    const std::string path = field.path();
    INFO(path << ": set it in kEverything to a value other than its default");
    const Json written = at_path(input, path);
    REQUIRE_FALSE(written.is_null());
    if (kIgnored.count(path)) continue;
    ++fields;
    // Mappings and lists of mappings: their fields are checked one by one.
    if (policy::find_mapping(path) || policy::find_mapping(path + "[]")) continue;
    // Printed back as written (rules and mutations print every rule and mutation).
    if (path == "spec.rules" || path == "spec.mutations") {
      for (auto it = written.begin(); it != written.end(); ++it) CHECK(at_path(shown, path)[it.key()] == it.value());
    } else {
      CHECK(at_path(shown, path) == written);
    }
    // Not what a policy that leaves the field out gets: the reader kept it.
    if (path.find("[]") == std::string::npos && path != "apiVersion" && path != "kind")
      CHECK(at_path(blank, path) != written);
  }
  CHECK(fields >= 50);
  // What `policy show` prints loads to the same policy.
  const auto again = policy::load_policy_config(shown, policy::SourceMap{});
  REQUIRE(again.issues.empty());
  CHECK(policy::policy_config_to_json(again.config) == shown);
}

TEST_CASE("every schema entry is documented and named once in its mapping", "[policy-schema]") {
  size_t mappings = 0;
  for (const policy::Mapping* m : policy::policy_mappings()) {
    ++mappings;
    std::set<std::string_view> names;
    for (const auto& f : m->fields) {
      if (f.name.empty()) {  // a check entry: a check and nothing else
        CHECK(f.check != nullptr);
        CHECK(f.read == nullptr);
        continue;
      }
      INFO(m->path << " . " << f.name);
      CHECK(names.insert(f.name).second);
      CHECK_FALSE(f.doc.type.empty());
      // An empty default is rendered from PolicyConfig: only outside list items.
      if (m->path.find("[]") != std::string_view::npos) CHECK_FALSE(f.doc.default_text.empty());
      CHECK_FALSE(f.doc.description.empty());
      if (f.kind == policy::FieldKind::Mapping || f.kind == policy::FieldKind::MappingList) {
        REQUIRE(f.fields != nullptr);
        const std::string child = (m->path.empty() ? "" : std::string(m->path) + ".") + std::string(f.name) +
                                  (f.kind == policy::FieldKind::MappingList ? "[]" : "");
        CHECK(f.fields->path == child);
      }
    }
  }
  CHECK(mappings == 17);
}

TEST_CASE("find_mapping finds each mapping by its path, and nothing else", "[policy-schema]") {
  for (const policy::Mapping* m : policy::policy_mappings()) CHECK(policy::find_mapping(m->path) == m);
  CHECK(policy::find_mapping("spec.pools") == nullptr);
  CHECK(policy::find_mapping("spec.nothing") == nullptr);
}

TEST_CASE("the field paths lint and the compiler report are fields of the schema", "[policy-schema]") {
  // Their messages name fields by path: "spec.exemptions.usernames", index_path("spec.pools", i) +
  // ".sharing", child_path("spec.defaults", "unmappedGpuPods"). A renamed field must rename them.
  std::set<std::string> accepted;
  for (const auto& field : policy::accepted_policy_fields()) accepted.insert(field.path());
  const std::regex literal(R"re("(spec\.[A-Za-z.]+)"(?:, i\))?(?: \+ "\.([A-Za-z]+)")?)re");
  const std::regex child(R"re(child_path\("(spec\.[A-Za-z.]+)", "([A-Za-z]+)"\))re");
  size_t checked = 0;
  for (const char* file : {"policy/config/lint.cpp", "policy/config/compiled_policy.cpp"}) {
    std::ifstream in(std::filesystem::path(test_paths::source_dir()) / file);
    std::ostringstream text;
    text << in.rdbuf();
    const std::string src = text.str();
    REQUIRE_FALSE(src.empty());
    for (std::sregex_iterator it(src.begin(), src.end(), literal), end; it != end; ++it) {
      const std::string path = (*it)[1].str() + ((*it)[2].matched ? "[]." + (*it)[2].str() : "");
      INFO(file << ": " << path);
      CHECK(accepted.count(path) == 1);
      ++checked;
    }
    for (std::sregex_iterator it(src.begin(), src.end(), child), end; it != end; ++it) {
      const std::string parent = (*it)[1].str();
      if (parent == "spec.rules" || parent == "spec.mutations") continue;  // keys: rule IDs, mutation names
      INFO(file << ": " << parent << "." << (*it)[2].str());
      CHECK(accepted.count(parent + "." + (*it)[2].str()) == 1);
      ++checked;
    }
  }
  CHECK(checked >= 15);
}
