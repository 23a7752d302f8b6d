#include "webhook/audit/auditor.h"

#include <algorithm>
#include <tuple>

#include "policy/base/quoted_value.h"

namespace gpu_admission::webhook::audit {
namespace {

constexpr std::string_view kFinishedPods = "finished pods (Succeeded or Failed)";
constexpr std::string_view kFinishedJobs = "finished Jobs";
constexpr std::string_view kOwnedWorkloads = "workloads with a controller (judged through their pods)";
constexpr std::string_view kGeneratedClaims = "claims generated for a pod (judged through their template)";
constexpr std::string_view kNotJudged = "objects /validate does not judge";
constexpr std::string_view kExempt = "objects in exempt namespaces (spec.exemptions.namespaces)";

// Subjects are per namespace: a uid another namespace's object has, written into an
// ownerReference, names a different subject here.
std::string key_of(const ObjectRef& ref, std::string_view namespace_name) {
  std::string key(namespace_name);
  if (!ref.uid.empty()) return key.append("/").append(ref.uid);
  for (std::string_view part : {std::string_view(ref.api_version), std::string_view(ref.kind), std::string_view(ref.name)})
    key.append("//").append(part);
  return key;
}

bool condition_true(simdjson::dom::element object, std::initializer_list<std::string_view> types) {
  simdjson::dom::array conditions;
  if (object["status"]["conditions"].get(conditions)) return false;
  for (auto condition : conditions) {
    std::string_view type, status;
    if (condition["type"].get(type) || condition["status"].get(status) || status != "True") continue;
    if (std::find(types.begin(), types.end(), type) != types.end()) return true;
  }
  return false;
}

bool finished(const AuditKind& kind, simdjson::dom::element object) {
  if (kind.is_pod()) {
    std::string_view phase;
    return !object["status"]["phase"].get(phase) && (phase == "Succeeded" || phase == "Failed");
  }
  return kind.role == KindRole::Workload && kind.workload == policy::WorkloadKind::Job &&
         condition_true(object, {"Complete", "Failed"});
}

void add_finding(AuditSubject& s, const policy::Finding& f) {
  const FindingLabel label = label_of(f);
  for (const auto& kept : s.findings)
    if (kept.rule == f.rule && label_of(kept) == label && kept.message == f.message) return;
  if (s.findings.size() >= kMaxSubjectFindings) {
    ++s.more_findings;
    return;
  }
  s.findings.push_back(f);
}

void add_rule_pods(AuditSubject& s, policy::RuleId rule, FindingLabel label, uint32_t pods) {
  for (auto& r : s.rule_pods)
    if (r.rule == rule && r.label == label) {
      r.pods += pods;
      return;
    }
  s.rule_pods.push_back({rule, label, pods});
}

void merge_into(AuditSubject& to, AuditSubject&& from) {
  to.pods += from.pods;
  to.violating_pods += from.violating_pods;
  to.exempt = to.exempt || from.exempt;
  if (to.error.empty()) to.error = std::move(from.error);
  if (to.tenant == "none") to.tenant = std::move(from.tenant);
  for (const auto& f : from.findings) add_finding(to, f);
  to.more_findings += from.more_findings;
  for (const auto& r : from.rule_pods) add_rule_pods(to, r.rule, r.label, r.pods);
}

// Totals per tenant, rule and label over the subjects.
std::vector<AuditTotal> totals_of(const std::vector<AuditSubject>& subjects) {
  std::map<std::tuple<std::string, policy::RuleId, FindingLabel>, AuditTotal> totals;
  for (const auto& s : subjects) {
    std::vector<std::pair<policy::RuleId, FindingLabel>> seen;
    for (const auto& f : s.findings) {
      const auto key = std::pair{f.rule, label_of(f)};
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      AuditTotal& t = totals[{s.tenant, key.first, key.second}];
      t.tenant = s.tenant;
      t.rule = key.first;
      t.label = key.second;
      ++t.objects;
    }
    for (const auto& r : s.rule_pods) {
      AuditTotal& t = totals[{s.tenant, r.rule, r.label}];
      t.tenant = s.tenant;
      t.rule = r.rule;
      t.label = r.label;
      t.pods += r.pods;
    }
  }
  std::vector<AuditTotal> out;
  for (auto& [key, total] : totals) out.push_back(std::move(total));
  return out;
}

}  // namespace

struct Auditor::Meta {
  std::string_view name;
  std::string_view namespace_name;
  std::string_view uid;
  bool has_controller = false;
  ObjectRef controller;
};

Auditor::Auditor(const policy::CompiledPolicy& policy, int64_t now) : policy_(policy), now_(now) {}

void Auditor::add(const AuditKind& kind, simdjson::dom::element object) {
  Meta meta;
  if (object["metadata"]["name"].get(meta.name) || meta.name.empty()) {
    result_.notes.push_back("a " + kind.kind + " without metadata.name was not judged");
    return;
  }
  if (object["metadata"]["namespace"].get(meta.namespace_name)) meta.namespace_name = {};
  if (object["metadata"]["uid"].get(meta.uid)) meta.uid = {};
  meta.has_controller = read_controller(object, meta.controller);

  if (kind.role == KindRole::Namespace) {
    std::string problem;
    facts_.add_namespace(object, problem);
    if (!problem.empty()) result_.notes.push_back("Namespace " + policy::bounded(meta.name) + ": " + problem);
    return;
  }
  if (kind.role == KindRole::Claim) return add_claim(kind, object, meta);
  if (kind.role == KindRole::PodGroup) {
    facts_.add_group(object, kind.api_version(), meta.namespace_name, meta.name);
    return judge(kind, object, meta);
  }
  if (finished(kind, object)) return skip(kind.is_pod() ? kFinishedPods : kFinishedJobs);
  if (meta.has_controller && !kind.is_pod()) {
    owners_.add(meta.namespace_name, meta.uid, meta.controller);
    return skip(kOwnedWorkloads);
  }
  judge(kind, object, meta);
}

void Auditor::add_claim(const AuditKind& kind, simdjson::dom::element object, const Meta& meta) {
  facts_.add_claim(object, kind.claim, kind.api_version(), meta.namespace_name, meta.name);
  if (meta.has_controller && meta.controller.kind == "Pod") return skip(kGeneratedClaims);
  judge(kind, object, meta);
}

AuditSubject& Auditor::subject_for(const ObjectRef& ref, const std::string& namespace_name) {
  auto [it, inserted] = subjects_.try_emplace(key_of(ref, namespace_name));
  if (inserted) {
    it->second.ref = ref;
    it->second.namespace_name = namespace_name;
  }
  return it->second;
}

void Auditor::record(const policy::Decision& decision, AuditSubject& s, bool is_pod) {
  s.exempt = s.exempt || decision.exempt;
  if (decision.tenant != nullptr && s.tenant == "none") s.tenant = decision.tenant->name;
  for (const auto& f : decision.findings) add_finding(s, f);
  if (!is_pod) return;
  ++s.pods;
  if (decision.findings.empty()) return;
  ++s.violating_pods;
  std::vector<std::pair<policy::RuleId, FindingLabel>> seen;
  for (const auto& f : decision.findings) {
    const auto key = std::pair{f.rule, label_of(f)};
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    add_rule_pods(s, key.first, key.second, 1);
  }
}

void Auditor::judge(const AuditKind& kind, simdjson::dom::element object, const Meta& meta) {
  // The object as an admission request would carry it: list items have no apiVersion and kind.
  std::string_view present;
  text_.clear();
  if (object["apiVersion"].get(present) || object["kind"].get(present)) {
    const std::string body = simdjson::minify(object);
    text_ = R"({"apiVersion":")" + kind.api_version() + R"(","kind":")" + kind.kind + "\"";
    text_ += body.size() > 2 ? "," + body.substr(1) : "}";
  } else {
    text_ = simdjson::minify(object);
  }
  text_.reserve(text_.size() + simdjson::SIMDJSON_PADDING);

  AdmissionRequest request;
  request.kind_group = kind.group;
  request.kind_version = kind.version;
  request.kind = kind.kind;
  request.resource = kind.resource;
  request.name = meta.name;
  request.namespace_name = meta.namespace_name;
  request.operation = "CREATE";
  request.has_object = true;
  request.object = text_;
  const ReviewTarget target = target_of(request, &policy_);
  const Plan plan = plan_for(Endpoint::Validate, request, target);
  if (plan == Plan::Allow) return skip(kNotJudged);

  scratch_.begin();
  decision_.clear();
  const policy::ExternalFacts facts{&facts_, &facts_, nullptr, now_, &facts_};
  const auto error = decide_review(policy_, Endpoint::Validate, plan, request, target, scratch_, decision_, facts);
  // No rule touches an exempt namespace: its objects are counted as not judged, by why (and as
  // `skip` in their namespace's report, below), never as judged and passing.
  if (!error && decision_.exempt) skip(kExempt);
  else ++result_.judged[kind.label()];

  const std::string namespace_name(meta.namespace_name);
  const bool pod = kind.is_pod();
  const ObjectRef self{kind.api_version(), kind.kind, std::string(meta.name), std::string(meta.uid)};
  const bool standalone = !(pod && meta.has_controller);
  if (standalone && pod && !error && decision_.findings.empty()) {
    // A passing pod of its own: counted, not kept.
    auto& counts = result_.namespaces[namespace_name];
    ++(decision_.exempt ? counts.exempt : counts.passed);
    return;
  }
  AuditSubject& s = subject_for(standalone ? self : meta.controller, namespace_name);
  if (error) {
    if (s.error.empty()) s.error = kind.kind + " " + policy::bounded(meta.name) + ": " +
                                 (error->error.field.empty() ? "" : error->error.field + ": ") + error->error.message;
    if (pod) ++s.pods;
    return;
  }
  record(decision_, s, pod);
}

AuditResult Auditor::finish() {
  // Subjects that are their own top first: a workload's template findings (with the fields a
  // person edits) come before those of its pods.
  std::unordered_map<std::string, AuditSubject> tops;
  for (bool own_top : {true, false})
    for (auto& [key, s] : subjects_) {
      const ObjectRef top = owners_.top(s.namespace_name, s.ref);
      const std::string top_key = key_of(top, s.namespace_name);
      if ((top_key == key) != own_top) continue;
      auto [it, inserted] = tops.try_emplace(top_key);
      if (inserted) {
        it->second = std::move(s);
        it->second.ref = top;
      } else {
        merge_into(it->second, std::move(s));
      }
    }
  subjects_.clear();
  for (auto& [key, s] : tops) {
    auto& counts = result_.namespaces[s.namespace_name];
    if (!s.error.empty()) ++counts.errors;
    else if (!s.violates()) ++(s.exempt ? counts.exempt : counts.passed);
    if (s.violates() || !s.error.empty()) result_.subjects.push_back(std::move(s));
  }
  std::sort(result_.subjects.begin(), result_.subjects.end(), [](const AuditSubject& a, const AuditSubject& b) {
    return std::tie(a.namespace_name, a.ref.kind, a.ref.name) < std::tie(b.namespace_name, b.ref.kind, b.ref.name);
  });
  result_.totals = totals_of(result_.subjects);
  return std::move(result_);
}

size_t AuditResult::violating() const {
  return static_cast<size_t>(std::count_if(subjects.begin(), subjects.end(), [](const AuditSubject& s) { return s.violates(); }));
}

size_t AuditResult::errors() const {
  return static_cast<size_t>(std::count_if(subjects.begin(), subjects.end(), [](const AuditSubject& s) { return !s.error.empty(); }));
}

}  // namespace gpu_admission::webhook::audit
