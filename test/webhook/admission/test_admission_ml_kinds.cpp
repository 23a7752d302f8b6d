// /validate and /mutate for ML workload kinds: every template of every built-in kind is
// judged on CREATE with field paths from the object's root, an UPDATE is refused only for findings
// the old object's same template did not have, /mutate never patches them, and request.kind's
// group keeps a Volcano Job apart from a batch/v1 Job.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "test/policy/ml_shapes.h"
#include "webhook/admission/admission.h"
#include "webhook/admission/review_decision.h"
#include "webhook/io/policy_file.h"

using namespace gpu_admission;
using nlohmann::json;

namespace {

constexpr const char* kPolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: ml}
spec:
  workloads:
    - {apiVersion: example.com/v1, kind: Trainer, templates: ["spec.roles[*].template"]}
  tenants:
    - {name: alpha, namespaces: [team-alpha], labels: {cost-center: cc-1}}
)";

const policy::CompiledPolicy& ml_policy() {
  static const webhook::PolicyLoad load = webhook::load_policy_text(kPolicy, "ml.yaml");
  if (!load.ok()) FAIL(load.report());
  return *load.policy;
}

json review(const json& object, const std::string& operation = "CREATE", const json* old_object = nullptr) {
  const std::string api_version = object["apiVersion"];
  const size_t slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const std::string version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
  json r = {{"apiVersion", "admission.k8s.io/v1"},
            {"kind", "AdmissionReview"},
            {"request",
             {{"uid", "u-ml"},
              {"kind", {{"group", group}, {"version", version}, {"kind", object["kind"]}}},
              {"resource", {{"group", group}, {"version", version}, {"resource", "things"}}},
              {"namespace", "team-alpha"},
              {"operation", operation},
              {"userInfo", {{"username", "alice"}}},
              {"object", object}}}};
  if (old_object) r["request"]["oldObject"] = *old_object;
  return r;
}

struct Judged {
  webhook::Plan plan = webhook::Plan::Allow;
  policy::Decision decision;
  std::string error;
};

Judged judge(const json& body, webhook::Endpoint endpoint = webhook::Endpoint::Validate) {
  Judged out;
  webhook::ReviewReader reader;
  webhook::AdmissionRequest request;
  REQUIRE(!reader.read(body.dump(), request));
  const webhook::ReviewTarget target = webhook::target_of(request, &ml_policy());
  out.plan = webhook::plan_for(endpoint, request, target);
  if (out.plan == webhook::Plan::Allow) return out;
  webhook::ReviewScratch scratch;
  if (auto err = webhook::decide_review(ml_policy(), endpoint, out.plan, request, target, scratch, out.decision))
    out.error = err->message();
  return out;
}

bool has_finding_at(const policy::Decision& d, policy::RuleId rule, const std::string& field) {
  for (const auto& f : d.findings)
    if (f.rule == rule && f.field == field) return true;
  return false;
}

}  // namespace

TEST_CASE("/validate judges every template of every built-in ML kind on CREATE", "[admission][ml]") {
  for (const auto& shape : ml_shapes::shapes()) {
    for (size_t bad = 0; bad < shape.templates.size(); ++bad) {
      INFO(shape.kind << ": privileged in " << shape.templates[bad]);
      Judged j = judge(review(ml_shapes::ml_object(shape, bad, "team-alpha")));
      REQUIRE(j.plan == webhook::Plan::EvaluateCreate);
      INFO(j.error);
      REQUIRE(j.error.empty());
      CHECK_FALSE(j.decision.allowed);
      CHECK(j.decision.findings.size() == 1);
      CHECK(has_finding_at(j.decision, policy::RuleId::Privileged, ml_shapes::privileged_field(shape, bad)));
      CHECK(j.decision.patch.empty());
    }
    Judged good = judge(review(ml_shapes::ml_object(shape, ml_shapes::kNone, "team-alpha")));
    CHECK(good.decision.allowed);
  }
}

TEST_CASE("/mutate never patches ML kinds, and their subresources are not judged", "[admission][ml]") {
  const auto& shape = ml_shapes::shapes().front();
  json body = review(ml_shapes::ml_object(shape, 0, "team-alpha"));
  CHECK(judge(body, webhook::Endpoint::Mutate).plan == webhook::Plan::Allow);
  body["request"]["subResource"] = "status";
  CHECK(judge(body).plan == webhook::Plan::Allow);
  body["request"].erase("subResource");
  body["request"]["operation"] = "DELETE";
  CHECK(judge(body).plan == webhook::Plan::Allow);
}

TEST_CASE("an UPDATE of an ML kind is refused only for findings the old template did not have", "[admission][ml]") {
  for (const auto& shape : ml_shapes::shapes()) {
    if (shape.templates.size() < 2) continue;
    INFO(shape.kind);
    const json old_object = ml_shapes::ml_object(shape, 1, "team-alpha");  // admitted before the rule existed
    json relabeled = old_object;
    relabeled["metadata"]["labels"] = {{"run", "2"}};
    Judged keep = judge(review(relabeled, "UPDATE", &old_object));
    REQUIRE(keep.plan == webhook::Plan::EvaluateUpdate);
    INFO(keep.error);
    CHECK(keep.decision.allowed);

    json worse = ml_shapes::ml_object(shape, 0, "team-alpha");  // the privileged container moves to template 0
    Judged moved = judge(review(worse, "UPDATE", &old_object));
    CHECK_FALSE(moved.decision.allowed);
    CHECK(has_finding_at(moved.decision, policy::RuleId::Privileged, ml_shapes::privileged_field(shape, 0)));
    CHECK_FALSE(has_finding_at(moved.decision, policy::RuleId::Privileged, ml_shapes::privileged_field(shape, 1)));
  }
}

TEST_CASE("request.kind's group decides: a Volcano Job by its tasks, a batch Job by spec.template", "[admission][ml]") {
  const auto& volcano = ml_shapes::shapes().back();
  REQUIRE(volcano.kind == "Job");
  Judged v = judge(review(ml_shapes::ml_object(volcano, 0, "team-alpha")));
  INFO(v.error);
  REQUIRE(v.error.empty());
  CHECK(has_finding_at(v.decision, policy::RuleId::Privileged, ml_shapes::privileged_field(volcano, 0)));

  json batch = json::parse(R"({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
    "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x",
             "securityContext": {"privileged": true}}]}}}})");
  Judged b = judge(review(batch));
  INFO(b.error);
  CHECK(has_finding_at(b.decision, policy::RuleId::Privileged, "spec.template.spec.containers[0].securityContext.privileged"));
}

TEST_CASE("/validate judges the policy's spec.workloads kinds and refuses unreadable templates", "[admission][ml]") {
  json trainer = json::parse(R"({"apiVersion": "example.com/v1", "kind": "Trainer", "metadata": {"name": "t"},
    "spec": {"roles": [{"template": {"spec": {"containers": [{"name": "ok", "image": "x"}]}}},
                       {"template": {"spec": {"hostPID": true, "containers": [{"name": "pid", "image": "x"}]}}}]}})");
  Judged t = judge(review(trainer));
  REQUIRE(t.plan == webhook::Plan::EvaluateCreate);
  CHECK(has_finding_at(t.decision, policy::RuleId::HostNamespaces, "spec.roles[1].template.spec.hostPID"));

  trainer["spec"]["roles"][0]["template"] = "not a template";
  Judged e = judge(review(trainer));
  CHECK(e.error == "cannot read request.object field spec.roles[0].template: must be an object (a pod template)");
}

TEST_CASE("the admission service denies an ML workload with all templates' findings", "[admission][ml]") {
  webhook::PolicyHolder holder;
  webhook::Metrics metrics;
  webhook::Logger logger{webhook::LogLevel::Error, -1};
  webhook::AdmissionService service{holder, &metrics, &logger};
  auto load = webhook::load_policy_text(kPolicy, "ml.yaml");
  REQUIRE(load.ok());
  holder.set(load.policy);
  const auto& ray = ml_shapes::shapes()[8];
  REQUIRE(ray.kind == "RayCluster");
  json object = ml_shapes::ml_object(ray, 0, "team-alpha");
  object["spec"]["workerGroupSpecs"][1]["template"]["spec"]["hostNetwork"] = true;
  webhook::HttpReply reply = service.handle(webhook::Endpoint::Validate, review(object).dump());
  REQUIRE(reply.status == 200);
  json resp = json::parse(reply.body)["response"];
  INFO(reply.body);
  CHECK(resp["allowed"] == false);
  const std::string message = resp["status"]["message"];
  CHECK(message.find("[privileged]") != std::string::npos);
  CHECK(message.find("[host-namespaces]") != std::string::npos);
  CHECK_FALSE(resp.contains("patch"));
  webhook::HttpReply mutate = service.handle(webhook::Endpoint::Mutate, review(object).dump());
  CHECK(json::parse(mutate.body)["response"]["allowed"] == true);
  CHECK_FALSE(json::parse(mutate.body)["response"].contains("patch"));
}
