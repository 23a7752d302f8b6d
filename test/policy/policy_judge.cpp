// policy_judge.h: one object through policy/ alone, as `check` judges its CREATE.
#include "test/policy/policy_judge.h"

#include <simdjson.h>

#include "policy/base/quoted_value.h"
#include "policy/config/template_finder.h"
#include "policy/config/template_paths.h"
#include "policy/decoding/pod_decoder.h"
#include "policy/dra/claim_decoder.h"
#include "policy/evaluation/patch.h"

namespace policy_test {
namespace {

// Objects in tests nest as deep as the API server stores them (10,000 levels), and then some.
constexpr size_t kDocumentDepth = 10'000 + 64;

std::string string_at(const Json& obj, const char* a, const char* b = nullptr) {
  if (!obj.is_object() || !obj.contains(a)) return "";
  const Json& v = obj[a];
  if (!b) return v.is_string() ? v.get<std::string>() : "";
  if (!v.is_object() || !v.contains(b) || !v[b].is_string()) return "";
  return v[b].get<std::string>();
}

std::string json_text(const Json& object) { return object.dump(-1, ' ', false, Json::error_handler_t::replace); }

// Parses `text` into `parser`'s DOM as the webhook does: deep documents allowed, duplicate keys refused.
std::optional<policy::DecodeError> parse(simdjson::dom::parser& parser, const std::string& text,
                                         simdjson::dom::element& root) {
  if (parser.max_depth() < kDocumentDepth &&
      parser.allocate(std::max<size_t>(text.size(), simdjson::dom::MINIMAL_DOCUMENT_CAPACITY), kDocumentDepth))
    return policy::invalid_json("out of memory for the JSON parser");
  if (auto code = parser.parse(text).get(root)) return policy::invalid_json(code);
  return policy::find_duplicate_keys(root);
}

void fail(Judged& r, const policy::DecodeError& error) {
  r.status = Judged::Status::Error;
  r.note = (error.field.empty() ? std::string() : error.field + ": ") + error.message;
}

void skip(Judged& r, std::string why) {
  r.status = Judged::Status::Skipped;
  r.note = std::move(why);
}

std::string version_or_none(const std::string& api_version) {
  return api_version.empty() ? std::string("no apiVersion") : policy::bounded(api_version);
}

policy::EvalOptions options_for(const Judged& r, const policy::ExternalFacts& facts) {
  policy::EvalOptions options;
  options.namespace_name = r.namespace_name;
  options.set_facts(facts);
  options.describe_gpus = true;  // as `check` asks
  return options;
}

// Every template as the pod it creates (mutated), one result each; the whole object's decision merged.
void judge_templates(const policy::CompiledPolicy& policy, const policy::WorkloadKindDef& def, const Json& object,
                     const policy::ExternalFacts& facts, Judged& r) {
  const std::string text = json_text(object);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  std::vector<policy::TemplateMatch> matches;
  policy::PodDocument identity_doc, doc;
  policy::ObjectIdentity identity;
  const simdjson::padded_string padded(text);
  if (auto err = parse(parser, text, root)) return fail(r, *err);
  if (auto err = policy::find_templates(root, def, matches)) return fail(r, *err);
  if (auto err = policy::decode_identity(std::string_view(padded.data(), padded.size()), true, identity, identity_doc))
    return fail(r, *err);
  if (matches.empty()) {
    std::string note = "no pod template found (" + def.kind + " templates are at";
    for (const auto& path : def.templates) note += " " + path.text;
    return skip(r, note + ")");
  }
  policy::EvalOptions options = options_for(r, facts);
  options.mutate = true;
  for (size_t i = 0; i < matches.size(); ++i) {
    const policy::TemplateMatch& t = matches[i];
    policy::PodView pod;
    if (auto err = policy::decode_pod_template(identity, simdjson::minify(t.element), false, t.prefix, t.pointer,
                                               t.pod_spec, pod, doc, policy.gpu_env_vars()))
      return fail(r, *err);
    Judged one;
    one.api_version = r.api_version;
    one.kind = r.kind;
    one.namespace_name = r.namespace_name;
    one.name = r.name;
    one.template_path = t.field;
    policy::evaluate(policy, pod, options, one.decision);
    one.patch = Json::parse(policy::patch_to_json(one.decision.patch));
    policy::merge_template_decision(r.decision, one.decision, i == 0);
    r.templates.push_back(std::move(one));
  }
}

// A claim, claim template or PodGroup, judged on its own.
void judge_dom_object(const policy::CompiledPolicy& policy, const Json& object, const policy::ExternalFacts& facts,
                      std::optional<policy::ClaimKind> claim_kind, Judged& r) {
  const std::string text = json_text(object);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parse(parser, text, root)) return fail(r, *err);
  const policy::EvalOptions options = options_for(r, facts);
  if (claim_kind) {
    policy::ClaimView claim;
    if (auto err = policy::decode_claim_as(root, *claim_kind, claim, false)) return fail(r, *err);
    policy::evaluate_claim(policy, claim, options, r.decision);
  } else {
    policy::PodGroupView group;
    if (auto err = policy::decode_pod_group(root, group, false)) return fail(r, *err);
    policy::evaluate_pod_group(policy, group, options, r.decision);
  }
}

// A Pod (mutated first when `mutate`: the API server's chain) or a workload (its template judged
// as the pod it creates, mutated).
void judge_workload(const policy::CompiledPolicy& policy, policy::WorkloadKind kind, const Json& object,
                    bool mutate_pods, const policy::ExternalFacts& facts, Judged& r) {
  const simdjson::padded_string text(json_text(object));
  policy::PodView pod;
  policy::PodDocument doc;
  if (auto err = policy::decode_pod_json(std::string_view(text.data(), text.size()), true, kind, pod, doc,
                                         policy.gpu_env_vars()))
    return fail(r, *err);
  policy::EvalOptions options = options_for(r, facts);
  options.mutate = mutate_pods || kind != policy::WorkloadKind::Pod;
  policy::evaluate(policy, pod, options, r.decision);
}

void dispatch(const policy::CompiledPolicy& policy, const Json& object, bool mutate_pods,
              const policy::ExternalFacts& facts, Judged& r) {
  const std::string_view group = policy::api_group_of(r.api_version);
  policy::ClaimKind claim_kind;
  if (const policy::WorkloadKindDef* def = policy.workload_kind(group, r.kind))
    return judge_templates(policy, *def, object, facts, r);
  if (auto kind = policy::workload_kind_from(r.kind)) return judge_workload(policy, *kind, object, mutate_pods, facts, r);
  if (group == "resource.k8s.io" && policy::is_claim_kind(r.kind, &claim_kind)) {
    if (!policy::claim_api_version_supported(r.api_version))
      return skip(r, version_or_none(r.api_version) +
                         " is not served by Kubernetes 1.34+ (resource.k8s.io/v1, v1beta2 and v1beta1 are judged)");
    return judge_dom_object(policy, object, facts, claim_kind, r);
  }
  if (policy::is_pod_group_kind(group, r.kind)) {
    if (!policy::pod_group_api_version_supported(r.api_version))
      return skip(r, version_or_none(r.api_version) +
                         " serves no PodGroups (scheduling.k8s.io/v1beta1, v1alpha3 and v1alpha2 are judged)");
    return judge_dom_object(policy, object, facts, std::nullopt, r);
  }
  skip(r, r.kind.empty() ? "no kind: not a Kubernetes object"
                         : policy::bounded(r.kind) + " is not judged by policy_judge (not a Pod, workload, claim or PodGroup)");
}

}  // namespace

Judged judge(const policy::CompiledPolicy& policy, const Json& object, const std::string& default_namespace,
             bool mutate_pods, const policy::ExternalFacts& facts) {
  Judged r;
  r.api_version = string_at(object, "apiVersion");
  r.kind = string_at(object, "kind");
  r.name = string_at(object, "metadata", "name");
  if (r.name.empty()) r.name = string_at(object, "metadata", "generateName");
  r.namespace_name = string_at(object, "metadata", "namespace");
  if (r.namespace_name.empty()) r.namespace_name = default_namespace;
  if (!object.is_object()) {
    fail(r, {"", "not an object"});
    return r;
  }
  dispatch(policy, object, mutate_pods, facts, r);
  if (r.status != Judged::Status::Evaluated) return r;
  r.patch = Json::parse(policy::patch_to_json(r.decision.patch));
  r.mutated = r.decision.patch.empty() ? object : object.patch(r.patch);  // throws (the test fails) if ours does not apply
  for (auto& t : r.templates) t.mutated = r.mutated;
  return r;
}

struct TestClaims::Entry {
  std::string text;
  simdjson::dom::parser parser;
  policy::ClaimView view;
  std::string namespace_name;
};

TestClaims::TestClaims() = default;
TestClaims::~TestClaims() = default;

bool TestClaims::add(const Json& object, const std::string& default_namespace) {
  policy::ClaimKind kind;
  if (!policy::is_claim_kind(string_at(object, "kind"), &kind) ||
      !policy::claim_api_version_supported(string_at(object, "apiVersion")))
    return false;
  auto entry = std::make_unique<Entry>();
  entry->text = json_text(object);
  simdjson::dom::element root;
  if (parse(entry->parser, entry->text, root) || policy::decode_claim(root, entry->view)) return false;
  entry->namespace_name = entry->view.namespace_name.empty() ? default_namespace : std::string(entry->view.namespace_name);
  entries_.push_back(std::move(entry));
  return true;
}

const policy::ClaimView* TestClaims::find(policy::ClaimKind kind, std::string_view namespace_name,
                                          std::string_view name) const {
  for (const auto& e : entries_)
    if (e->view.kind == kind && e->view.name == name && e->namespace_name == namespace_name) return &e->view;
  return nullptr;
}

struct TestGroups::Entry {
  std::string text;
  simdjson::dom::parser parser;
  policy::PodGroupView view;
  std::string namespace_name;
};

TestGroups::TestGroups() = default;
TestGroups::~TestGroups() = default;

bool TestGroups::add(const Json& object, const std::string& default_namespace) {
  if (string_at(object, "kind") != policy::kPodGroupKind ||
      !policy::pod_group_api_version_supported(string_at(object, "apiVersion")))
    return false;
  auto entry = std::make_unique<Entry>();
  entry->text = json_text(object);
  simdjson::dom::element root;
  if (parse(entry->parser, entry->text, root) || policy::decode_pod_group(root, entry->view)) return false;
  entry->namespace_name = entry->view.namespace_name.empty() ? default_namespace : std::string(entry->view.namespace_name);
  entries_.push_back(std::move(entry));
  return true;
}

const policy::PodGroupView* TestGroups::find_group(std::string_view namespace_name, std::string_view name) const {
  for (const auto& e : entries_)
    if (e->view.name == name && e->namespace_name == namespace_name) return &e->view;
  return nullptr;
}

}  // namespace policy_test
