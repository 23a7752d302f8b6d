// ML workload kinds judged by template paths: the path language, the built-in table
// (every built-in path has a test that fails when the path is wrong: a privileged container in
// exactly that template is denied with the field path pointing there), spec.workloads in the
// policy, and the (group, kind) lookup that keeps a Volcano Job apart from a batch/v1 Job.
#include <catch2/catch.hpp>

#include <string>

#include "policy/config/policy_loader.h"
#include "policy/config/template_paths.h"
#include "test/policy/ml_shapes.h"
#include "test/policy/mutation_test_support.h"

using namespace gpu_admission;
using namespace mutation_test;
using ml_shapes::kNone;

namespace {

policy_test::Judged eval_any(const policy::CompiledPolicy& p, const Json& object, const std::string& ns) {
  return policy_test::judge(p, object, ns);
}

std::string steps_of(const std::string& text) {
  policy::TemplatePath path;
  if (auto err = policy::parse_template_path(text, path)) return "error: " + *err;
  std::string out;
  for (const auto& s : path.steps) {
    if (!out.empty()) out += ' ';
    out += s.kind == policy::PathStep::Kind::Field ? s.name : s.kind == policy::PathStep::Kind::MapValues ? "*" : "[*]";
  }
  return out;
}

}  // namespace

TEST_CASE("template paths: fields, * over map values, [*] over list items", "[ml]") {
  CHECK(steps_of("spec.pytorchReplicaSpecs.*.template") == "spec pytorchReplicaSpecs * template");
  CHECK(steps_of("spec.replicatedJobs[*].template.spec.template") == "spec replicatedJobs [*] template spec template");
  CHECK(steps_of("spec.grid[*][*].template") == "spec grid [*] [*] template");
  CHECK(steps_of("spec.leaderWorkerTemplate.leaderTemplate") == "spec leaderWorkerTemplate leaderTemplate");
}

TEST_CASE("malformed template paths are errors that say what is wrong", "[ml]") {
  CHECK(steps_of("").find("must not be empty") != std::string::npos);
  CHECK(steps_of("spec..template").find("segment 2 is empty") != std::string::npos);
  CHECK(steps_of("spec.template.").find("segment 3 is empty") != std::string::npos);
  CHECK(steps_of("*.template").find("must start with a field name") != std::string::npos);
  CHECK(steps_of("spec.roles[0].template").find("only [*]") != std::string::npos);
  CHECK(steps_of("spec.roles[*.template").find("only [*]") != std::string::npos);
  CHECK(steps_of("spec.ro les.template").find("only [*]") != std::string::npos);
  CHECK(steps_of("spec.[*].template").find("must start with a field name") != std::string::npos);
}

TEST_CASE("the built-in table has every ML kind of the real shapes, with its group", "[ml]") {
  for (const auto& shape : ml_shapes::shapes()) {
    INFO(shape.kind);
    const auto* def = policy::find_builtin_ml_kind(policy::api_group_of(shape.api_version), shape.kind);
    REQUIRE(def != nullptr);
    CHECK_FALSE(def->templates.empty());
  }
  CHECK(policy::builtin_ml_kinds().size() == ml_shapes::shapes().size());
  CHECK(policy::find_builtin_ml_kind("batch", "Job") == nullptr);
  CHECK(policy::find_builtin_ml_kind("", "PyTorchJob") == nullptr);
  CHECK(policy::api_group_of("kubeflow.org/v1") == "kubeflow.org");
  CHECK(policy::api_group_of("v1").empty());
}

TEST_CASE("every built-in template path: a privileged container in exactly that template is denied there", "[ml]") {
  const auto& p = fixture_policy();
  for (const auto& shape : ml_shapes::shapes()) {
    for (size_t bad = 0; bad < shape.templates.size(); ++bad) {
      INFO(shape.kind << " with a privileged container in " << shape.templates[bad]);
      auto r = eval_any(p, ml_shapes::ml_object(shape, bad, "team-alpha"), "");
      INFO(r.note);
      REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
      INFO(findings(r.decision));
      CHECK_FALSE(r.decision.allowed);
      CHECK(denies_at(r.decision, policy::RuleId::Privileged, ml_shapes::privileged_field(shape, bad)));
      CHECK(count_findings(r.decision, policy::RuleId::Privileged) == 1);
      REQUIRE(r.templates.size() == shape.templates.size());
      for (size_t i = 0; i < shape.templates.size(); ++i) {
        CHECK(r.templates[i].template_path == shape.templates[i]);
        CHECK(r.templates[i].decision.allowed == (i != bad));
      }
    }
  }
}

TEST_CASE("an ML workload with only good templates is allowed, each template mutated as its pod", "[ml]") {
  const auto& p = fixture_policy();
  for (const auto& shape : ml_shapes::shapes()) {
    INFO(shape.kind);
    Json object = ml_shapes::ml_object(shape, kNone, "team-alpha");
    auto r = eval_any(p, object, "");
    REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
    INFO(findings(r.decision));
    CHECK(r.decision.allowed);
    // The tenant label lands in every template, at the template's own pointer; a template that
    // is a pod spec has no metadata (its pods' labels come from the template it overrides).
    for (size_t i = 0; i < shape.templates.size(); ++i) {
      const std::string& path = shape.templates[i];
      std::string pointer = "/" + path;
      for (char& c : pointer)
        if (c == '.') c = '/';
      for (size_t at; (at = pointer.find('[')) != std::string::npos;) pointer.replace(at, 1, "/");
      for (size_t at; (at = pointer.find(']')) != std::string::npos;) pointer.erase(at, 1);
      INFO(pointer);
      if (ml_shapes::is_pod_spec(shape, i)) {
        CHECK_FALSE(r.mutated.at(Json::json_pointer(pointer)).contains("metadata"));
        continue;
      }
      CHECK(r.mutated.at(Json::json_pointer(pointer + "/metadata/labels/gpu-admission.io~1tenant")) == "alpha");
    }
  }
}

TEST_CASE("a Volcano Job is judged by its tasks, a batch/v1 Job by spec.template", "[ml]") {
  const auto& p = fixture_policy();
  const auto& volcano = ml_shapes::shapes().back();
  REQUIRE(volcano.api_version == "batch.volcano.sh/v1alpha1");
  auto r = eval_any(p, ml_shapes::ml_object(volcano, 1, "team-alpha"), "");
  REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
  CHECK(denies_at(r.decision, policy::RuleId::Privileged, "spec.tasks[1].template.spec.containers[0].securityContext.privileged"));

  Json batch = Json::parse(R"({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "team-alpha"},
    "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x",
             "securityContext": {"privileged": true}}]}}}})");
  auto b = eval_any(p, batch, "");
  REQUIRE(b.status == policy_test::Judged::Status::Evaluated);
  CHECK(b.templates.empty());
  CHECK(denies_at(b.decision, policy::RuleId::Privileged, "spec.template.spec.containers[0].securityContext.privileged"));

  // A kubeflow.org kind the table does not know is skipped, not guessed at.
  Json notebook = {{"apiVersion", "kubeflow.org/v1"}, {"kind", "Notebook"}, {"metadata", {{"name", "n"}}}};
  CHECK(eval_any(p, notebook, "team-alpha").status == policy_test::Judged::Status::Skipped);
}

TEST_CASE("a TrainJob's pod overrides are judged in each Trainer version's spelling", "[ml]") {
  const auto& p = fixture_policy();
  auto train_job = [](const std::string& field, const std::string& entry) {
    return Json{{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
                {"kind", "TrainJob"},
                {"metadata", {{"name", "t"}, {"namespace", "beta-dev"}}},
                {"spec", {{"runtimeRef", {{"name", "torch-distributed"}}}, {field, Json::array({Json::parse(entry)})}}}};
  };
  // The same fields (a device env var, a hostPath of a device node) as v2.0 podSpecOverrides, whose
  // entries hold a pod spec's fields, and v2.1 podTemplateOverrides, whose entries hold a template.
  const std::string set = R"("containers": [{"name": "node", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}],
      "volumes": [{"name": "gpu", "hostPath": {"path": "/dev/nvidia0"}}])";
  const std::string targets = R"("targetJobs": [{"name": "node"}])";
  struct Spelling {
    std::string field, entry, at;
  };
  for (const Spelling& s : {Spelling{"podSpecOverrides", "{" + targets + ", " + set + "}", "spec.podSpecOverrides[0]."},
                            Spelling{"podTemplateOverrides", "{" + targets + ", \"spec\": {" + set + "}}",
                                     "spec.podTemplateOverrides[0].spec."}}) {
    INFO(s.field);
    auto r = eval_any(p, train_job(s.field, s.entry), "");
    REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
    INFO(findings(r.decision));
    CHECK(denies_at(r.decision, policy::RuleId::GpuDeviceAccess, s.at + "containers[0].env[0]"));
    CHECK(denies_at(r.decision, policy::RuleId::GpuDeviceAccess, s.at + "volumes[0].hostPath.path"));
    CHECK(count_findings(r.decision, policy::RuleId::GpuDeviceAccess) == 2);
  }

  // v2.0: the override is judged as the pods it shapes (tenant labels in the view: no tenant-label
  // finding), but it has no metadata to write them to; what the mutations write lands in the
  // override's own fields.
  auto ok = eval_any(p, train_job("podSpecOverrides", "{" + targets + R"(, "nodeSelector": {"gpu.example.com/pool": "h100-coop"},
      "containers": [{"name": "node", "env": [{"name": "NCCL_DEBUG", "value": "INFO"}]}]})"), "");
  REQUIRE(ok.status == policy_test::Judged::Status::Evaluated);
  INFO(findings(ok.decision));
  CHECK(ok.decision.allowed);
  CHECK(ok.decision.findings.empty());
  REQUIRE_FALSE(ok.patch.empty());  // hide-gpus: the override's container has no GPUs
  for (const Json& op : ok.patch) {
    INFO(op.dump());
    CHECK(op["path"].get<std::string>().starts_with("/spec/podSpecOverrides/0/containers/0/"));
  }
  CHECK_FALSE(ok.mutated["spec"]["podSpecOverrides"][0].contains("metadata"));

  // An entry that is not an object is an error naming it.
  auto bad = eval_any(p, train_job("podSpecOverrides", "7"), "");
  CHECK(bad.status == policy_test::Judged::Status::Error);
  CHECK(bad.note == "spec.podSpecOverrides[0]: must be an object (a pod spec)");
}

TEST_CASE("ML workloads: no templates is skipped, a template of the wrong type is an error naming it", "[ml]") {
  const auto& p = fixture_policy();
  Json empty = Json::parse(R"({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "e"},
                               "spec": {"pytorchReplicaSpecs": {}}})");
  auto r = eval_any(p, empty, "team-alpha");
  CHECK(r.status == policy_test::Judged::Status::Skipped);
  CHECK(r.note.find("spec.pytorchReplicaSpecs.*.template") != std::string::npos);

  Json list = Json::parse(R"({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"},
                              "spec": {"workerGroupSpecs": {"a": 1}}})");
  auto l = eval_any(p, list, "team-alpha");
  CHECK(l.status == policy_test::Judged::Status::Error);
  CHECK(l.note == "spec.workerGroupSpecs: must be a list");

  Json scalar = Json::parse(R"({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "t"},
                                "spec": {"tfReplicaSpecs": {"Worker": {"template": 7}}}})");
  auto s = eval_any(p, scalar, "team-alpha");
  CHECK(s.status == policy_test::Judged::Status::Error);
  CHECK(s.note.find("spec.tfReplicaSpecs.Worker.template: must be an object") == 0);

  Json bad_field = Json::parse(R"({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "b"},
    "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": {"containers": {"name": "x"}}}}}}})");
  auto f = eval_any(p, bad_field, "team-alpha");
  CHECK(f.status == policy_test::Judged::Status::Error);
  CHECK(f.note.find("spec.pytorchReplicaSpecs.Worker.template.spec.containers") == 0);
}

TEST_CASE("a replica type name that is not an identifier is quoted in field paths and escaped in pointers", "[ml]") {
  const auto& p = fixture_policy();
  Json job = Json::parse(R"({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "q"},
    "spec": {"pytorchReplicaSpecs": {"a.b/c": {"template": {"spec": {"containers": [{"name": "c", "image": "x",
             "securityContext": {"privileged": true}}]}}}}}})");
  auto r = eval_any(p, job, "team-alpha");
  REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
  CHECK(denies_at(r.decision, policy::RuleId::Privileged,
                  "spec.pytorchReplicaSpecs[\"a.b/c\"].template.spec.containers[0].securityContext.privileged"));
  CHECK(r.mutated.at(Json::json_pointer("/spec/pytorchReplicaSpecs/a.b~1c/template/metadata/labels"))
            .contains("gpu-admission.io/tenant"));
}

TEST_CASE("spec.workloads adds kinds by apiVersion group, judged like the built-in ones", "[ml]") {
  const auto& p = load_policy(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: trainers}
spec:
  workloads:
    - apiVersion: example.com/v1
      kind: Trainer
      templates: ["spec.roles[*].template", "spec.sidecars.*"]
  tenants:
    - {name: alpha, namespaces: [team-alpha]}
)",
                              "trainers.yaml");
  Json trainer = Json::parse(R"({"apiVersion": "example.com/v1", "kind": "Trainer", "metadata": {"name": "t"},
    "spec": {"roles": [{"template": {"spec": {"containers": [{"name": "ok", "image": "x"}]}}},
                       {"template": {"spec": {"hostIPC": true, "containers": [{"name": "ipc", "image": "x"}]}}}],
             "sidecars": {"log": {"spec": {"containers": [{"name": "l", "image": "x", "securityContext": {"privileged": true}}]}}}}})");
  auto r = eval_any(p, trainer, "team-alpha");
  REQUIRE(r.status == policy_test::Judged::Status::Evaluated);
  INFO(findings(r.decision));
  CHECK(r.templates.size() == 3);
  CHECK(denies_at(r.decision, policy::RuleId::HostNamespaces, "spec.roles[1].template.spec.hostIPC"));
  CHECK(denies_at(r.decision, policy::RuleId::Privileged, "spec.sidecars.log.spec.containers[0].securityContext.privileged"));
  // Another group's Trainer is not ours; the built-in kinds stay.
  trainer["apiVersion"] = "other.org/v1";
  CHECK(eval_any(p, trainer, "team-alpha").status == policy_test::Judged::Status::Skipped);
  CHECK(p.workload_kind("kubeflow.org", "PyTorchJob") != nullptr);
  CHECK(p.workload_kind("example.com", "Trainer") != nullptr);
}

TEST_CASE("malformed spec.workloads entries are errors with field paths", "[ml][policy]") {
  auto load = webhook::load_policy_text(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: bad-workloads}
spec:
  workloads:
    - {apiVersion: example.com/v1, kind: Trainer, templates: ["spec.roles[0].template", "spec..x"]}
    - {apiVersion: v1, kind: Thing, templates: ["spec.template"]}
    - {apiVersion: apps/v1, kind: Deployment, templates: ["spec.template"]}
    - {apiVersion: example.com/v1, kind: Empty, templates: []}
    - {apiVersion: example.com/v1, kind: NoTemplates, extra: 1}
    - not-a-mapping
)",
                                       "bad-workloads.yaml");
  CHECK_FALSE(load.ok());
  const std::string report = load.report();
  INFO(report);
  CHECK(report.find("spec.workloads[0].templates[0]") != std::string::npos);
  CHECK(report.find("spec.workloads[0].templates[1]") != std::string::npos);
  CHECK(report.find("malformed template path") != std::string::npos);
  CHECK(report.find("spec.workloads[1].apiVersion") != std::string::npos);
  CHECK(report.find("spec.workloads[2].kind") != std::string::npos);
  CHECK(report.find("spec.workloads[3].templates") != std::string::npos);
  CHECK(report.find("spec.workloads[4].extra") != std::string::npos);
  CHECK(report.find("missing required field \"templates\"") != std::string::npos);
  CHECK(report.find("spec.workloads[5]") != std::string::npos);
}

TEST_CASE("spec.workloads shows in policy show output only when set", "[ml][policy]") {
  CHECK_FALSE(policy::policy_config_to_json(policy::PolicyConfig{})["spec"].contains("workloads"));
  policy::PolicyConfig c;
  c.workloads.push_back({"example.com/v1", "Trainer", {"spec.roles[*].template"}});
  Json j = policy::policy_config_to_json(c);
  REQUIRE(j["spec"].contains("workloads"));
  CHECK(j["spec"]["workloads"][0]["templates"][0] == "spec.roles[*].template");
}

TEST_CASE("lint warns about spec.workloads paths that parse but look wrong", "[ml][lint]") {
  auto load = webhook::load_policy_text(R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: suspicious}
spec:
  workloads:
    - apiVersion: example.com/v1
      kind: Trainer
      templates: ["spec.roles[*].template", "status.template", "spec.roles[*]", "spec.roles[*].podSpec", "spec.x.workerTemplate"]
    - {apiVersion: kubeflow.org/v1, kind: PyTorchJob, templates: ["spec.pytorchReplicaSpecs.*.template"]}
)",
                                        "suspicious.yaml");
  INFO(load.report());
  REQUIRE(load.ok());
  auto warned = [&](const std::string& path, const std::string& words) {
    for (const auto& issue : load.issues)
      if (issue.path == path && issue.message.find(words) != std::string::npos) return true;
    return false;
  };
  CHECK_FALSE(warned("spec.workloads[0].templates[0]", ""));
  CHECK(warned("spec.workloads[0].templates[1]", "does not start at spec"));
  CHECK(warned("spec.workloads[0].templates[2]", "ends in * or [*]"));
  CHECK(warned("spec.workloads[0].templates[3]", "not a field named like template"));
  CHECK_FALSE(warned("spec.workloads[0].templates[4]", ""));
  CHECK(warned("spec.workloads[1].kind", "replaces the built-in template paths"));
}
