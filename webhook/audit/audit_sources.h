// Where an audit's objects come from: the cluster (discovery, then paged lists of every kind it
// serves, page by page into the Auditor: a page is judged and dropped before the next is asked
// for) or files (`kubectl get -A -o json` output, manifests), read into memory as the user gave
// them and fed in the same order: Namespaces, claims, workloads, pods.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "webhook/audit/audit_kinds.h"
#include "webhook/audit/auditor.h"
#include "webhook/cluster/kube_client.h"

namespace gpu_admission::webhook::audit {

struct ClusterListOptions {
  std::vector<std::string> namespaces;       // empty: every namespace
  size_t page_size = 500;                    // list `limit`
  size_t max_page_bytes = 64u << 20;         // a larger page is asked for again with half the limit
  std::chrono::milliseconds request_timeout{60'000};
};

// Fills in the version and plural of every kind in `kinds` the cluster serves (discovery) and
// removes the others, noting them in `auditor`. An error message naming the endpoint when
// discovery fails.
std::optional<std::string> discover_kinds(const cluster::KubeClient& client, std::vector<AuditKind>& kinds,
                                          Auditor& auditor);

// Lists every kind of `kinds` (discovered) into `auditor`. An error message naming the endpoint
// when a list fails: the audit is then incomplete and must not be reported as a result.
std::optional<std::string> list_into(const cluster::KubeClient& client, const std::vector<AuditKind>& kinds,
                                     const ClusterListOptions& options, Auditor& auditor);

// Reads `paths` ("-": standard input) and feeds their objects to `auditor` by kind; objects of
// other kinds are counted as skipped. An error naming the file and line when one cannot be read.
std::optional<std::string> read_files_into(const std::vector<std::string>& paths, const std::vector<AuditKind>& kinds,
                                           Auditor& auditor);

}  // namespace gpu_admission::webhook::audit
