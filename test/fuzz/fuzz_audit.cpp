// Fuzz target: arbitrary bytes as what an audit reads from a cluster. The first byte picks the
// kind the bytes are listed as (an index into the built-in policy's wanted kinds: namespaces,
// claims, workloads, ML kinds; 0xFF: pods); the rest is a list page whose items go through Auditor::add (the
// admission decision phase, owner bookkeeping), then the result through every output and the
// PolicyReport size bound. The same bytes also as discovery documents. Invariants: nothing
// crashes; every report fits kMaxReportBytes; a subject never counts more violating pods than pods.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "webhook/audit/audit_output.h"
#include "webhook/audit/auditor.h"
#include "webhook/cluster/watch_decoder.h"
#include "webhook/io/policy_file.h"

namespace au = gpu_admission::webhook::audit;

namespace {

[[noreturn]] void fail(const char* why) {
  std::fprintf(stderr, "fuzz_audit invariant broken: %s\n", why);
  std::abort();
}

const gpu_admission::policy::CompiledPolicy& policy() {
  static const auto load = gpu_admission::webhook::load_policy_file("");
  if (!load.ok()) fail("the built-in policy does not load");
  return *load.policy;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const std::vector<au::AuditKind> kinds = [] {
    auto all = au::wanted_kinds(policy());
    for (auto& k : all) {
      k.version = "v1";
      k.resource = "things";
    }
    return all;
  }();
  const au::AuditKind& kind = data[0] == 0xFF ? kinds.back() : kinds[data[0] % kinds.size()];  // 0xFF: pods
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);

  au::ServedResources served;
  (void)au::read_resource_list(body, served);
  std::vector<std::pair<std::string, std::string>> groups;
  (void)au::read_group_list(body, groups);

  simdjson::dom::parser parser;
  if (gpu_admission::webhook::cluster::allow_stored_depth(parser)) return 0;
  gpu_admission::webhook::cluster::ListPage page;
  if (gpu_admission::webhook::cluster::decode_list_page(parser, body, page)) return 0;
  au::Auditor auditor(policy(), 1'800'000'000);
  for (auto item : page.items) auditor.add(kind, item);
  const au::AuditResult result = auditor.finish();
  for (const auto& s : result.subjects)
    if (s.violating_pods > s.pods) fail("more violating pods than pods");
  (void)au::audit_text(result);
  (void)au::audit_json(result).dump();
  au::for_each_policy_report(result, 0, [](gpu_admission::Json&& report) {
    if (report.dump().size() > au::kMaxReportBytes) fail("a report over the size bound");
  });
  return 0;
}
