// The facts an audit judges pods with, read from the same cluster or files as the pods: the
// labels of every Namespace (tenants chosen by namespaceSelector), every ResourceClaim and
// ResourceClaimTemplate (the GPUs a pod gets through DRA) and every PodGroup (the claims its
// pods share), kept as the cluster state of `serve`
// keeps them (compact entries: labels; decoded claim and group views with their strings in one
// buffer).
// Filled before the pods are read, then only read.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include <simdjson.h>

#include "policy/config/label_selector.h"
#include "policy/dra/claim_view.h"
#include "policy/dra/pod_group.h"
#include "webhook/cluster/cluster_objects.h"

namespace gpu_admission::webhook::audit {

class AuditFacts final : public policy::ClaimResolver, public policy::PodGroupResolver, public policy::NamespaceLabels {
 public:
  // A Namespace object; false (with `problem`) when it has no name.
  bool add_namespace(simdjson::dom::element object, std::string& problem);
  // A claim or template listed in `api_version`; the entry is kept even when it cannot be
  // decoded (pods using it then count it as unresolved). Returns the entry.
  std::shared_ptr<const cluster::ClaimEntry> add_claim(simdjson::dom::element object, policy::ClaimKind kind,
                                                       std::string_view api_version, std::string_view namespace_name,
                                                       std::string_view name);

  // A PodGroup listed in `api_version`, kept like a claim (one that cannot be decoded leaves its
  // pods' group unresolved).
  std::shared_ptr<const cluster::PodGroupEntry> add_group(simdjson::dom::element object, std::string_view api_version,
                                                          std::string_view namespace_name, std::string_view name);
  const policy::PodGroupView* find_group(std::string_view namespace_name, std::string_view name) const override;

  const policy::ClaimView* find(policy::ClaimKind kind, std::string_view namespace_name,
                                std::string_view name) const override;
  // Every namespace also carries kubernetes.io/metadata.name, as the API server sets it; a
  // namespace that was not read has no labels (nullptr).
  const policy::LabelPairs* labels_of(std::string_view namespace_name) const override;

  size_t namespaces() const { return namespaces_.size(); }
  size_t claims() const { return claims_.size(); }

 private:
  std::map<std::string, std::shared_ptr<const cluster::NamespaceEntry>, std::less<>> namespaces_;
  // By claim_key(kind, namespace, name).
  std::unordered_map<std::string, std::shared_ptr<const cluster::ClaimEntry>> claims_;
  std::unordered_map<std::string, std::shared_ptr<const cluster::PodGroupEntry>> groups_;  // by "namespace/name"
};

}  // namespace gpu_admission::webhook::audit
