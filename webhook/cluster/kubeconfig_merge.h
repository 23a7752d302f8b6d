// Reading kubeconfig files and merging several as kubectl does (used by kube_config.cpp), and
// turning the chosen context into a KubeConfig (kubeconfig_context.cpp). Merging: the
// clusters, users and contexts by name, the first file to name one wins (the whole entry, later
// ones are ignored), and current-context from the first file that sets it. Every entry keeps
// the file it came from: relative paths in it are relative to that file, and errors name it.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "policy/base/json.h"
#include "webhook/cluster/kube_config.h"

namespace gpu_admission::webhook::cluster {

struct KubeconfigEntry {
  Json value;        // the entry's `cluster`, `user` or `context` mapping
  std::string file;  // the kubeconfig it came from
};

struct MergedKubeconfig {
  std::map<std::string, KubeconfigEntry> clusters, users, contexts;
  std::string current_context;
  std::string current_context_file;  // the file that set it
  std::vector<std::string> files;    // the files read, in order
};

// Adds one kubeconfig's text (an empty text adds nothing). False with `error`
// ("kubeconfig FILE: ...") when it is not a kubeconfig: invalid YAML, not a mapping, a list that
// is not a list, an entry without a name, a name twice in one list.
bool merge_kubeconfig_text(std::string_view text, const std::string& file, MergedKubeconfig& into,
                           std::string& error);

// Reads and adds one file. A file that does not exist sets `missing` (and adds nothing, no
// error); one that cannot be read or parsed is an error.
bool merge_kubeconfig_file(const std::string& file, MergedKubeconfig& into, bool& missing, std::string& error);

// $KUBECONFIG's list: ':'-separated, empty parts and repeated files dropped, order kept.
std::vector<std::string> split_kubeconfig_list(std::string_view list);

// The configuration of `context` (or else current-context) of a merged kubeconfig. No config
// and no error when neither names a context; `where` names the files when no entry can.
KubeConfigLoad resolve_kubeconfig_context(const MergedKubeconfig& merged, const std::string& context,
                                          const std::string& where);

}  // namespace gpu_admission::webhook::cluster
