// Where an audit's objects come from: the cluster (discovery, then paged lists of every kind it
// serves, page by page into the Auditor: a page is judged and dropped before the next is asked
// for) or files (`kubectl get -A -o json` output, manifests), read as streams of list items and
// documents (audit_files.cpp) and fed in the same order: Namespaces, claims, workloads, pods.
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

struct FileReadOptions {
  // A regular file larger than this that holds a JSON List is read back where it lies; smaller
  // ones, standard input from a pipe and YAML (as JSON) are copied into a spool.
  uint64_t keep_open_above = 16u << 20;
  // Where the spool's temporary file goes (empty: $TMPDIR, else /tmp); where none can be made,
  // the spool is held in memory.
  std::string spool_dir;
};

// Reads `paths` ("-": standard input) and feeds their objects to `auditor` by kind, in the order
// of `kinds` (within a kind, as the files hold them); objects of other kinds are counted as
// skipped. A JSON List is read item by item, YAML document by document: memory does not grow
// with the files. An error naming the file and line when one cannot be read (nothing is judged
// then).
std::optional<std::string> read_files_into(const std::vector<std::string>& paths, const std::vector<AuditKind>& kinds,
                                           Auditor& auditor, const FileReadOptions& options = {});

}  // namespace gpu_admission::webhook::audit
