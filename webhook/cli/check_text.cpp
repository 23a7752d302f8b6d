// `check`'s text output (check_report.h): one block per result, verdicts and finding labels
// coloured on a terminal, skipped objects folded into the summary line that ends the output;
// and the counting that the summary, the JSON summary and the exit code share, and which results
// --only-denied keeps. What an object says (names, messages, fields, patches) is printed through
// terminal_text (webhook/io/terminal_text.h).
#include <algorithm>
#include <array>
#include <cstdio>

#include "policy/base/ids.h"
#include "policy/base/quoted_value.h"
#include "policy/dra/gpu_request.h"
#include "webhook/cli/check_report.h"
#include "webhook/io/finding_label.h"
#include "webhook/io/terminal_text.h"

namespace gpu_admission::webhook {
namespace {

constexpr std::string_view kReset = "\033[0m";
constexpr std::string_view kRed = "\033[31m";
constexpr std::string_view kGreen = "\033[32m";
constexpr std::string_view kYellow = "\033[33m";
constexpr std::string_view kCyan = "\033[36m";

// How each finding label looks in text.
struct LabelStyle {
  FindingLabel label;
  std::string_view colour;
};
constexpr std::array<LabelStyle, kFindingLabelCount> kLabelStyles = {{
    {FindingLabel::Deny, kRed},
    {FindingLabel::Warn, kYellow},
    {FindingLabel::Audit, kCyan},
    {FindingLabel::Excepted, kCyan},
}};

std::string paint(std::string_view text, std::string_view colour, bool on) {
  if (!on || colour.empty()) return std::string(text);
  std::string out(colour);
  out += text;
  out += kReset;
  return out;
}

std::string label_text(FindingLabel label, bool colour) {
  std::string name(name_of(label));
  if (name.size() < 5) name.resize(5, ' ');  // "deny ", "warn ", "audit": the messages line up
  for (const auto& style : kLabelStyles)
    if (style.label == label) return paint(name, style.colour, colour);
  return name;
}

std::string plural(size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

void print_skipped(const OfflineResult& r) {
  std::printf("%s %s: skipped (%s)  [%s]\n\n", r.kind.empty() ? "object" : terminal_text(policy::bounded(r.kind)).c_str(),
              r.name.empty() ? "(unnamed)" : terminal_text(policy::bounded(r.name)).c_str(),
              terminal_text(r.note).c_str(), terminal_text(r.source).c_str());
}

void print_context(const policy::Decision& d) {
  std::string context = "  tenant: " + (d.tenant ? d.tenant->name : std::string("(none)")) +
                        ", pool: " + (d.pool ? d.pool->name : std::string("(none)"));
  if (d.gpu_slices > 0 || !d.gpu_sources.empty()) {
    context += ", GPUs: " + policy::gpus_text(d.gpu_slices, d.slices_per_gpu);
    if (!d.gpu_sources.empty()) context += " (" + d.gpu_sources + ")";
  }
  std::printf("%s\n", terminal_text(context).c_str());
}

void print_patch(const policy::Patch& patch) {
  if (patch.empty()) return;
  std::printf("  mutations (%zu patch operations):\n", patch.size());
  for (const auto& op : patch) {
    const std::string path = terminal_text(op.path);
    if (op.kind == policy::PatchOp::Kind::Remove) std::printf("    remove %s\n", path.c_str());
    else std::printf("    add    %s = %s\n", path.c_str(), terminal_text(op.value).c_str());
  }
}

void print_evaluated(const OfflineResult& r, const CheckPrintOptions& options) {
  const auto& d = r.decision;
  const std::string verdict = d.exempt    ? paint("ALLOWED (exempt)", kGreen, options.colour)
                              : d.allowed ? paint("ALLOWED", kGreen, options.colour)
                                          : paint("DENIED", kRed, options.colour);
  std::printf("%s: %s  [%s]\n", terminal_text(object_title(r)).c_str(), verdict.c_str(), terminal_text(r.source).c_str());
  if (const std::string note = namespace_note(r); !note.empty()) std::printf("  note: %s\n", terminal_text(note).c_str());
  if (d.exempt) {
    std::printf("  exempt by %.*s: no rule or mutation applies\n\n", static_cast<int>(d.exempt_by.size()),
                d.exempt_by.data());
    return;
  }
  print_context(d);
  for (const auto& f : d.findings) {
    std::printf("  %s [%s] %s\n", label_text(label_of(f), options.colour).c_str(),
                std::string(policy::name_of(f.rule)).c_str(), terminal_text(f.message).c_str());
    if (f.excepted())
      std::printf("        by exception %s (would %s)\n", terminal_text(f.exception).c_str(),
                  std::string(policy::name_of(f.action)).c_str());
    else if (f.would_deny())
      std::printf("        would deny under enforcement (mode %s)\n", std::string(policy::name_of(d.mode)).c_str());
    std::printf("        at %s\n", terminal_text(f.field).c_str());
  }
  print_patch(d.patch);
  if (!d.withheld_patch.empty()) {
    std::printf("  not applied (mode %s):\n", std::string(policy::name_of(d.mode)).c_str());
    print_patch(d.withheld_patch);
  }
  for (const auto& notice : d.notices)
    std::printf("  %s%s\n", d.withheld_patch.empty() ? "" : "would have ", terminal_text(notice).c_str());
  std::printf("\n");
}

}  // namespace

std::vector<ObjectSpan> object_spans(const std::vector<OfflineResult>& results) {
  std::vector<ObjectSpan> spans;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].repeat && !spans.empty()) spans.back().last = i + 1;
    else spans.push_back({i, i + 1});
  }
  return spans;
}

CheckSummary summarize(const std::vector<OfflineResult>& results) {
  CheckSummary s;
  for (const ObjectSpan& span : object_spans(results)) {
    const OfflineResult& head = results[span.first];
    if (head.status == OfflineResult::Status::Skipped) {
      ++s.skipped;
      continue;
    }
    bool error = false, denied = false, warned = false, audited = false;
    for (size_t i = span.first; i < span.last; ++i) {
      const OfflineResult& r = results[i];
      error = error || r.status == OfflineResult::Status::Error;
      denied = denied || !r.allowed();
      for (const auto& f : r.decision.findings) {
        warned = warned || label_of(f) == FindingLabel::Warn;
        audited = audited || label_of(f) == FindingLabel::Audit;
      }
    }
    if (error) {
      ++s.errors;
      continue;
    }
    ++s.objects;
    (denied ? s.denied : s.allowed)++;
    s.warned += warned;
    s.audited += audited;
  }
  return s;
}

std::string summary_line(const CheckSummary& s) {
  std::string line = plural(s.objects, "object", "objects") + ": " + std::to_string(s.allowed) + " allowed, " +
                     std::to_string(s.denied) + " denied; " + std::to_string(s.warned) + " warned, " +
                     std::to_string(s.audited) + " audited; " + std::to_string(s.skipped) + " skipped";
  if (s.errors) line += "; " + plural(s.errors, "error", "errors");
  return line;
}

int check_exit_code(const CheckSummary& s, FailOn fail_on) {
  if (fail_on == FailOn::None) return 0;
  if (s.denied) return 1;
  if (fail_on == FailOn::Warn && s.warned) return 1;
  return 0;
}

std::optional<bool> colour_wanted(std::string_view when, bool stdout_is_terminal, const char* no_color_env,
                                  const char* term_env) {
  if (when == "always") return true;
  if (when == "never") return false;
  if (when != "auto") return std::nullopt;
  if (no_color_env != nullptr) return false;
  if (term_env != nullptr && std::string_view(term_env) == "dumb") return false;
  return stdout_is_terminal;
}

std::string object_title(const OfflineResult& r) {
  using policy::bounded;
  std::string out = r.kind.empty() ? "object" : bounded(r.kind);
  out += ' ';
  out += r.namespace_name.empty() ? "" : bounded(r.namespace_name) + "/";
  out += r.name.empty() ? "(unnamed)" : bounded(r.name);
  if (!r.template_path.empty()) out += " [" + r.template_path + "]";
  return out;
}

std::string namespace_note(const OfflineResult& r) {
  if (!r.namespace_defaulted || r.status != OfflineResult::Status::Evaluated) return {};
  return "the object names no namespace: judged in namespace \"" + r.namespace_name + "\" (--namespace)";
}

bool printed(const OfflineResult& r, const CheckPrintOptions& options) {
  if (!options.only_denied) return true;
  if (r.status == OfflineResult::Status::Error || !r.allowed()) return true;
  if (options.fail_on != FailOn::Warn || r.status != OfflineResult::Status::Evaluated) return false;
  return std::any_of(r.decision.findings.begin(), r.decision.findings.end(),
                     [](const policy::Finding& f) { return label_of(f) == FindingLabel::Warn; });
}

std::string policy_title(const std::string& path, const std::string& carrier) {
  if (path.empty()) return "built-in default";
  std::string title = path == "-" ? "standard input" : path;
  if (!carrier.empty()) title += " (" + carrier + ")";
  return title;
}

void print_text(const std::vector<OfflineResult>& results, const CheckPrintOptions& options) {
  for (const auto& r : results) {
    if (r.status == OfflineResult::Status::Skipped) {
      if (options.verbose && !options.only_denied) print_skipped(r);
      continue;
    }
    if (!printed(r, options)) continue;
    if (r.status == OfflineResult::Status::Error) {
      std::printf("%s: %s  [%s]\n  %s\n\n", terminal_text(object_title(r)).c_str(),
                  paint("ERROR", kRed, options.colour).c_str(), terminal_text(r.source).c_str(),
                  terminal_text(r.note).c_str());
      continue;
    }
    print_evaluated(r, options);
  }
  // The policy just before the summary line, which stays the last line for scripts to match.
  if (!options.policy.empty()) std::printf("policy: %s\n", terminal_text(options.policy).c_str());
  std::printf("%s\n", summary_line(summarize(results)).c_str());
}

}  // namespace gpu_admission::webhook
