// Discovery and routing of the audit benchmark's stand-in API server: the documents a real
// 1.34 API server with the Kubeflow training operator and the PolicyReport CRD installed answers
// on /api, /api/v1, /apis, /apis/GROUP and /apis/GROUP/VERSION, and which served resource (and
// namespace) a list path names.
#pragma once

#include <string>
#include <vector>

#include "bench/audit_cluster.h"

namespace gpu_admission::bench::audit {

// The discovery document at `path` (split on '/'), as JSON text; false when `path` is not one.
bool discovery_document(const GeneratedCluster& cluster, const std::vector<std::string>& path, std::string& out);

struct ListTarget {
  const Resource* resource = nullptr;  // null: `path` is no list
  std::string namespace_name;          // empty: cluster-wide
};

// The list at `path`: /api/v1/PLURAL, /api/v1/namespaces/NS/PLURAL, /apis/GROUP/VERSION/PLURAL,
// /apis/GROUP/VERSION/namespaces/NS/PLURAL, for any version the group serves.
ListTarget list_target(const GeneratedCluster& cluster, const std::vector<std::string>& path);

}  // namespace gpu_admission::bench::audit
