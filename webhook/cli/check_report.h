// The outputs of `gpu-admission check`: what the results of a run are printed as (text for a
// person, JSON for a program, YAML for kubectl, JUnit for a CI system, PolicyReports for the
// cluster), the summary that counts them, and the exit code they make.
//
// An *object* is what a person edits: a workload whose templates are judged one by one
// (ML kinds) prints one result per template but counts once, denied when any template is.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "webhook/cli/offline.h"

namespace gpu_admission::webhook {

// `N objects: A allowed, D denied; W warned, U audited; S skipped` (docs/ci.md). `objects` are
// the judged ones (allowed + denied); warned / audited count objects with at least one warn /
// audit finding, whatever their verdict; skipped objects are neither Pods, workloads nor claims
// (or AdmissionReviews /validate lets through unjudged); errors could not be judged.
struct CheckSummary {
  size_t objects = 0, allowed = 0, denied = 0, warned = 0, audited = 0, skipped = 0, errors = 0;
};

// The results of each object: [first, last) index ranges (a template result marked `repeat`
// belongs to the object before it).
struct ObjectSpan {
  size_t first = 0, last = 0;
};
std::vector<ObjectSpan> object_spans(const std::vector<OfflineResult>& results);

CheckSummary summarize(const std::vector<OfflineResult>& results);
// Every count is printed, zero or not; "; N error(s)" is added only when some object could not be judged.
std::string summary_line(const CheckSummary& summary);

// `--fail-on`: what makes the run exit 1. None is for pipelines that only publish a report.
enum class FailOn : uint8_t { Deny, Warn, None };
// 1 when an object is denied (or, with --fail-on warn, has a warn finding), else 0; always 0
// with --fail-on none. Errors (exit 2) are the caller's.
int check_exit_code(const CheckSummary& summary, FailOn fail_on);

struct CheckPrintOptions {
  bool colour = false;       // ANSI colours on the verdicts and finding labels
  bool only_denied = false;  // print only denied objects (and errors); summaries count all
  FailOn fail_on = FailOn::Deny;  // with only_denied and Warn: warned objects are printed too
  bool verbose = false;      // text: list each skipped object with why
  std::string default_namespace = "default";
  std::string policy;        // the policy judged with, as policy_title() names it
};

// What the outputs call the policy: the file as given ("examples/policy.yaml"), with the
// ConfigMap key when it carried the policy, "standard input" for `-`, or "built-in default".
std::string policy_title(const std::string& path, const std::string& carrier);

// `--color auto|always|never`: auto colours only a terminal, and never while NO_COLOR is set
// (any value) or TERM is "dumb". nullopt: not one of the three words.
std::optional<bool> colour_wanted(std::string_view when, bool stdout_is_terminal, const char* no_color_env,
                                  const char* term_env);

// "Pod research/train [spec.template]", as every output names a result (kind, namespace and name
// bounded as messages bound a value: policy/base/quoted_value.h).
std::string object_title(const OfflineResult& r);
// The note for an object judged in the default namespace (empty when it named its own).
std::string namespace_note(const OfflineResult& r);
// Whether `r` is printed under `options`: everything, or with --only-denied the denied and
// unjudgeable results (and, with --fail-on warn, those with a warn finding: what fails the run).
bool printed(const OfflineResult& r, const CheckPrintOptions& options);

void print_text(const std::vector<OfflineResult>& results, const CheckPrintOptions& options);
void print_json(const std::vector<OfflineResult>& results, const CheckPrintOptions& options);
void print_yaml(const std::vector<OfflineResult>& results, const CheckPrintOptions& options);
void print_junit(const std::vector<OfflineResult>& results, const CheckPrintOptions& options);
// One PolicyReport (wgpolicyk8s.io/v1alpha2) per namespace, as a YAML stream (`kubectl apply -f -`
// takes it); print_open_reports: the same as OpenReports Reports (openreports.io/v1alpha1).
void print_policy_reports(const std::vector<OfflineResult>& results, const CheckPrintOptions& options);
void print_open_reports(const std::vector<OfflineResult>& results, const CheckPrintOptions& options);

}  // namespace gpu_admission::webhook
