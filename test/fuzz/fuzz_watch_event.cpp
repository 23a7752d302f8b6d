// Fuzz target: arbitrary bytes as a watch stream of the Kubernetes API (webhook/cluster/
// watch_decoder.h), fed to the LineSplitter in uneven chunks; every line through
// decode_watch_event, and each event's object into the cache entries the cluster state keeps
// (namespace labels, compact claim copies). The same bytes also as a list page. Invariants:
// nothing crashes; no line exceeds the splitter's bound; an event whose object is unusable has
// no name; a compact claim's views all point into its own arena.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "webhook/cluster/cluster_objects.h"
#include "webhook/cluster/watch_decoder.h"

namespace cl = gpu_admission::webhook::cluster;

namespace {

constexpr size_t kMaxLine = 4096;

[[noreturn]] void fail(const char* why) {
  std::fprintf(stderr, "fuzz_watch_event invariant broken: %s\n", why);
  std::abort();
}

bool inside(const std::string& arena, std::string_view view) {
  return view.empty() || (view.data() >= arena.data() && view.data() + view.size() <= arena.data() + arena.size());
}

void check_claim(const cl::ClaimEntry& entry) {
  if (!entry.ok()) return;
  if (!inside(entry.arena, entry.view.name) || !inside(entry.arena, entry.view.api_version)) fail("view outside arena");
  for (const auto& request : entry.view.requests)
    for (const auto& alternative : request.alternatives) {
      if (!inside(entry.arena, alternative.device_class)) fail("device class outside arena");
      for (const auto& t : alternative.tolerations)
        if (!inside(entry.arena, t.key) || !inside(entry.arena, t.op) || !inside(entry.arena, t.value) ||
            !inside(entry.arena, t.effect))
          fail("toleration outside arena");
    }
}

void on_event(simdjson::dom::parser& parser, std::string_view line) {
  if (line.size() > kMaxLine) fail("line longer than the bound");
  cl::WatchEvent event;
  if (cl::decode_watch_event(parser, line, event)) return;
  if (event.type == cl::EventType::Error || event.type == cl::EventType::Bookmark) return;
  if (!event.problem.empty()) {
    if (!event.meta.name.empty()) fail("an event with a problem has a name");
    return;  // skipped, as the informer does; its object is not to be read
  }
  std::string problem;
  cl::make_namespace_entry(event.object, &problem);
  const auto kind = event.meta.name.size() % 2 ? gpu_admission::policy::ClaimKind::Claim
                                               : gpu_admission::policy::ClaimKind::Template;
  check_claim(*cl::make_claim_entry(event.object, kind, "resource.k8s.io/v1"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static simdjson::dom::parser parser, list_parser;
  const char* text = reinterpret_cast<const char*>(data);
  cl::LineSplitter splitter(kMaxLine);
  size_t offset = 0, step = 1;
  while (offset < size) {
    const size_t chunk = std::min(size - offset, step);
    if (!splitter.feed(text + offset, chunk, [&](std::string_view line) {
          on_event(parser, line);
          return true;
        }))
      break;
    offset += chunk;
    step = step * 3 % 97 + 1;
  }
  cl::ListPage page;
  if (!cl::decode_list_page(list_parser, std::string_view(text, size), page))
    for (const auto item : page.items) {
      cl::ObjectMeta meta;
      if (cl::read_object_meta(item, meta) != cl::object_meta_problem(item).empty()) fail("meta and its problem disagree");
    }
  return 0;
}
