// Building the compact cache entries (see cluster_objects.h).
#include "webhook/cluster/cluster_objects.h"

#include "policy/base/quoted_value.h"
#include "policy/dra/claim_decoder.h"

namespace gpu_admission::webhook::cluster {
namespace {

// Calls `f` on every string view of `view`.
template <typename F>
void for_each_view(policy::ClaimView& view, F&& f) {
  f(view.api_version);
  f(view.name);
  f(view.namespace_name);
  for (auto& request : view.requests) {
    f(request.name);
    for (auto& alternative : request.alternatives) {
      f(alternative.name);
      f(alternative.device_class);
      for (auto& selector : alternative.selectors) f(selector);
      for (auto& pin : alternative.pinned_profiles) f(pin);
      for (auto& t : alternative.tolerations) {
        f(t.key);
        f(t.op);
        f(t.value);
        f(t.effect);
      }
    }
  }
  for (auto& config : view.configs) {
    f(config.driver);
    f(config.parameters_kind);
    f(config.sharing_strategy);
    for (auto& request : config.requests) f(request);
  }
}

// Copies every string `view` points at into `arena` (reserved once, so never reallocated) and
// points them there.
template <typename View, typename ForEach>
void compact_into(std::string& arena, View& view, ForEach&& for_each) {
  size_t total = 0;
  for_each(view, [&](std::string_view& text) { total += text.size(); });
  arena.reserve(total);
  for_each(view, [&](std::string_view& text) {
    const size_t offset = arena.size();
    arena.append(text);
    text = std::string_view(arena.data() + offset, text.size());
  });
}

template <typename F>
void for_each_group_view(policy::PodGroupView& view, F&& f) {
  f(view.api_version);
  f(view.name);
  f(view.namespace_name);
  f(view.uid);
  for (auto& entry : view.resource_claims) {
    f(entry.name);
    f(entry.claim_name);
    f(entry.template_name);
  }
  for (auto& [entry, claim] : view.claim_statuses) {
    f(entry);
    f(claim);
  }
}

}  // namespace

std::shared_ptr<const NamespaceEntry> make_namespace_entry(simdjson::dom::element object, std::string* problem) {
  if (problem != nullptr) problem->clear();
  auto entry = std::make_shared<NamespaceEntry>();
  simdjson::dom::element labels_element;
  if (object.at_pointer("/metadata/labels").get(labels_element) == simdjson::SUCCESS) {
    simdjson::dom::object labels;
    if (labels_element.get_object().get(labels) == simdjson::SUCCESS) {
      for (const auto field : labels) {
        std::string_view value;
        if (field.value.get_string().get(value) == simdjson::SUCCESS) {
          entry->labels.emplace_back(std::string(field.key), std::string(value));
        } else if (problem != nullptr && problem->empty()) {
          *problem = "metadata.labels" + policy::quoted_key(field.key) + " is not a string: the label is left out";
        }
      }
    } else if (!labels_element.is_null() && problem != nullptr) {
      *problem = "metadata.labels is not an object: no labels are kept";
    }
  }
  entry->labels.shrink_to_fit();
  return entry;
}

std::shared_ptr<const ClaimEntry> compact_claim(const policy::ClaimView& source) {
  auto entry = std::make_shared<ClaimEntry>();
  entry->view = source;
  compact_into(entry->arena, entry->view, [](policy::ClaimView& v, auto&& f) { for_each_view(v, f); });
  return entry;
}

std::shared_ptr<const ClaimEntry> make_claim_entry(simdjson::dom::element object, policy::ClaimKind kind,
                                                   std::string_view api_version) {
  policy::ClaimView view;
  if (const auto error = policy::decode_claim_as(object, kind, view, false, api_version)) {
    auto entry = std::make_shared<ClaimEntry>();
    entry->error = error->field.empty() ? error->message : error->field + ": " + error->message;
    return entry;
  }
  return compact_claim(view);
}

std::shared_ptr<const PodGroupEntry> make_pod_group_entry(simdjson::dom::element object,
                                                          std::string_view api_version) {
  auto entry = std::make_shared<PodGroupEntry>();
  if (const auto error = policy::decode_pod_group(object, entry->view, false, api_version)) {
    entry->view.clear();
    entry->error = error->field.empty() ? error->message : error->field + ": " + error->message;
    return entry;
  }
  entry->view.resource_claims.shrink_to_fit();
  compact_into(entry->arena, entry->view, [](policy::PodGroupView& v, auto&& f) { for_each_group_view(v, f); });
  return entry;
}

size_t entry_bytes(const ClaimEntry& entry) {
  size_t bytes = sizeof(ClaimEntry) + entry.arena.capacity() + entry.error.capacity();
  bytes += entry.view.requests.capacity() * sizeof(policy::DeviceRequestView);
  for (const auto& request : entry.view.requests) {
    bytes += request.alternatives.capacity() * sizeof(policy::DeviceSubrequest);
    for (const auto& alternative : request.alternatives)
      bytes += (alternative.selectors.capacity() + alternative.pinned_profiles.capacity()) * sizeof(std::string_view);
    for (const auto& alternative : request.alternatives)
      bytes += alternative.tolerations.capacity() * sizeof(policy::Toleration);
  }
  bytes += entry.view.configs.capacity() * sizeof(policy::DriverConfigView);
  for (const auto& config : entry.view.configs) bytes += config.requests.capacity() * sizeof(std::string_view);
  return bytes;
}

size_t entry_bytes(const NamespaceEntry& entry) {
  size_t bytes = sizeof(NamespaceEntry) + entry.labels.capacity() * sizeof(entry.labels[0]);
  for (const auto& [key, value] : entry.labels) {
    if (key.size() > 15) bytes += key.capacity() + 1;
    if (value.size() > 15) bytes += value.capacity() + 1;
  }
  return bytes;
}

size_t entry_bytes(const PodGroupEntry& entry) {
  return sizeof(PodGroupEntry) + entry.arena.capacity() + entry.error.capacity() +
         entry.view.resource_claims.capacity() * sizeof(policy::PodResourceClaim) +
         entry.view.claim_statuses.capacity() * sizeof(entry.view.claim_statuses[0]);
}

}  // namespace gpu_admission::webhook::cluster
