#include "webhook/audit/audit_facts.h"

#include <algorithm>

namespace gpu_admission::webhook::audit {
namespace {

std::string claim_key(policy::ClaimKind kind, std::string_view namespace_name, std::string_view name) {
  std::string key(1, kind == policy::ClaimKind::Template ? 'T' : 'C');
  key.append(namespace_name).append(1, '/').append(name);
  return key;
}

}  // namespace

bool AuditFacts::add_namespace(simdjson::dom::element object, std::string& problem) {
  std::string_view name;
  if (object["metadata"]["name"].get(name) || name.empty()) {
    problem = "a Namespace without metadata.name";
    return false;
  }
  auto entry = cluster::make_namespace_entry(object, &problem);
  constexpr std::string_view kNameLabel = "kubernetes.io/metadata.name";
  const bool has_name_label = std::any_of(entry->labels.begin(), entry->labels.end(),
                                          [&](const auto& label) { return label.first == kNameLabel; });
  if (!has_name_label) {
    auto labelled = std::make_shared<cluster::NamespaceEntry>(*entry);
    labelled->labels.emplace_back(std::string(kNameLabel), std::string(name));
    entry = std::move(labelled);
  }
  namespaces_.insert_or_assign(std::string(name), std::move(entry));
  return true;
}

std::shared_ptr<const cluster::ClaimEntry> AuditFacts::add_claim(simdjson::dom::element object, policy::ClaimKind kind,
                                                                 std::string_view api_version,
                                                                 std::string_view namespace_name, std::string_view name) {
  auto entry = cluster::make_claim_entry(object, kind, api_version);
  claims_.insert_or_assign(claim_key(kind, namespace_name, name), entry);
  return entry;
}

std::shared_ptr<const cluster::PodGroupEntry> AuditFacts::add_group(simdjson::dom::element object,
                                                                    std::string_view api_version,
                                                                    std::string_view namespace_name,
                                                                    std::string_view name) {
  auto entry = cluster::make_pod_group_entry(object, api_version);
  groups_.insert_or_assign(std::string(namespace_name) + "/" + std::string(name), entry);
  return entry;
}

const policy::PodGroupView* AuditFacts::find_group(std::string_view namespace_name, std::string_view name) const {
  auto it = groups_.find(std::string(namespace_name) + "/" + std::string(name));
  if (it == groups_.end() || !it->second->ok()) return nullptr;
  return &it->second->view;
}

const policy::ClaimView* AuditFacts::find(policy::ClaimKind kind, std::string_view namespace_name,
                                          std::string_view name) const {
  auto it = claims_.find(claim_key(kind, namespace_name, name));
  if (it == claims_.end() || !it->second->ok()) return nullptr;
  return &it->second->view;
}

const policy::LabelPairs* AuditFacts::labels_of(std::string_view namespace_name) const {
  auto it = namespaces_.find(namespace_name);
  return it == namespaces_.end() ? nullptr : &it->second->labels;
}

}  // namespace gpu_admission::webhook::audit
