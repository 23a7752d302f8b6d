// What the cluster state keeps per object, small on purpose: a Namespace is its labels; a
// ResourceClaim or ResourceClaimTemplate is its decoded policy::ClaimView, a PodGroup its decoded
// policy::PodGroupView, each with the strings it views copied into one owned buffer (the JSON text
// and the simdjson document are not kept). Objects that cannot be decoded are kept as such (the
// resolver answers "not found" for them without asking the API server again).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "policy/dra/claim_view.h"
#include "policy/dra/pod_group.h"
#include "policy/config/label_selector.h"

namespace gpu_admission::webhook::cluster {

struct NamespaceEntry {
  policy::LabelPairs labels;
};

// A decoded object as cached (a claim, a template, a PodGroup): its view, whose strings point
// into the entry's own arena, or what could not be decoded.
template <typename View>
struct DecodedEntry {
  std::string arena;  // the bytes every view in `view` points into; never reallocated
  View view;
  std::string error;  // non-empty: the object could not be decoded (view is empty)
  bool ok() const { return error.empty(); }
};
using ClaimEntry = DecodedEntry<policy::ClaimView>;
using PodGroupEntry = DecodedEntry<policy::PodGroupView>;

// metadata.labels of a Namespace object. A label whose value is not a string, or labels that are
// not an object, are left out (the API server never stores either): the entry holds the others,
// and `problem`, when given, says what was left out ("" when nothing was).
std::shared_ptr<const NamespaceEntry> make_namespace_entry(simdjson::dom::element object,
                                                           std::string* problem = nullptr);

// Decodes a claim or template (an entry with `error` set when it cannot be). List items carry no
// apiVersion: `api_version` (the group version the object was listed in, "resource.k8s.io/v1")
// is used when the object has none. Reads only the fields a claim's GPUs depend on, never
// recursively, so an object as deep as the API server stores costs no more than a flat one.
std::shared_ptr<const ClaimEntry> make_claim_entry(simdjson::dom::element object, policy::ClaimKind kind,
                                                   std::string_view api_version);

// A copy of `view` whose strings live in the returned entry's arena.
std::shared_ptr<const ClaimEntry> compact_claim(const policy::ClaimView& view);

// Decodes a PodGroup as make_claim_entry decodes a claim (`api_version` for list items, which
// carry none): its name, namespace, spec.resourceClaims and status.resourceClaimStatuses.
std::shared_ptr<const PodGroupEntry> make_pod_group_entry(simdjson::dom::element object,
                                                          std::string_view api_version);

// Approximate heap bytes held by an entry (for the benchmark and metrics).
size_t entry_bytes(const ClaimEntry& entry);
size_t entry_bytes(const NamespaceEntry& entry);
size_t entry_bytes(const PodGroupEntry& entry);

}  // namespace gpu_admission::webhook::cluster
