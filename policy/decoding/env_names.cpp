#include "policy/decoding/env_names.h"

#include <array>
#include <utility>

#include "policy/base/tenant_labels.h"

namespace gpu_admission::policy {
namespace {

// Every name read holds "A_" (NVIDIA_..., CUDA_...): the scan looks for that pair (and for
// backslashes), then checks whether a name read starts where its first "A_" would put it. The
// names are grouped by their head, the text up to that "A_" included ("NVIDIA_", "CUDA_"): a
// candidate is compared with each head once, and with the names of a head only when it matches
// (most "A_" in env text, DATA_DIR or JAVA_HOME, match no head).
struct ReadName {
  std::string_view text;
  size_t pair;  // where its first "A_" is
};

constexpr auto kReadNames = [] {
  std::array<ReadName, kDeviceEnvVars.size() + 1> out{};
  for (size_t i = 0; i < kDeviceEnvVars.size(); ++i) out[i] = {kDeviceEnvVars[i], kDeviceEnvVars[i].find("A_")};
  out.back() = {kMpsEnvPrefix, kMpsEnvPrefix.find("A_")};
  return out;
}();

constexpr bool every_name_holds_pair() {
  for (const ReadName& name : kReadNames)
    if (name.pair == std::string_view::npos) return false;
  return true;
}
static_assert(every_name_holds_pair(), "the scan finds the names read by their \"A_\"");

constexpr std::string_view head_of(const ReadName& name) { return name.text.substr(0, name.pair + 2); }

// Runs of names with the same head, in table order.
struct Head {
  std::string_view text;
  size_t first = 0, end = 0;  // kReadNames[first, end)
};
constexpr auto kHeads = [] {
  std::array<Head, kReadNames.size()> out{};
  size_t count = 0;
  for (size_t i = 0; i < kReadNames.size(); ++i) {
    if (count > 0 && out[count - 1].text == head_of(kReadNames[i])) {
      out[count - 1].end = i + 1;
      continue;
    }
    out[count++] = {head_of(kReadNames[i]), i, i + 1};
  }
  return std::pair{out, count};
}();

constexpr bool heads_are_distinct() {
  for (size_t i = 0; i < kHeads.second; ++i)
    for (size_t j = i + 1; j < kHeads.second; ++j)
      if (kHeads.first[i].text == kHeads.first[j].text) return false;
  return true;
}
static_assert(heads_are_distinct(), "names of one head are listed together in kDeviceEnvVars");

// Whether `json` holds `text` at `start` (bounds checked here: no substr and its exception path).
inline bool holds(std::string_view json, size_t start, std::string_view text) {
  return json.size() - start >= text.size() && std::string_view(json.data() + start, text.size()) == text;
}

}  // namespace

bool env_sign_at(std::string_view json, size_t at) {
  if (json[at] == '\\') return true;
  for (size_t h = 0; h < kHeads.second; ++h) {
    const Head& head = kHeads.first[h];
    const size_t pair = kReadNames[head.first].pair;
    if (at < pair || !holds(json, at - pair, head.text)) continue;
    for (size_t i = head.first; i < head.end; ++i)
      if (holds(json, at - pair, kReadNames[i].text)) return true;
  }
  return false;
}

}  // namespace gpu_admission::policy
