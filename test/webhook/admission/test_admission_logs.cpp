// What the admission service tells the on-call engineer: a line per deny, warn and audit decision
// naming the request, its user, tenant and pool and every finding (rule, action, field, message);
// a line per request answered with an error, with its reason, rate limited per kind; and the
// tenant and dry_run labels of gpu_admission_requests_total.
#include <catch2/catch.hpp>

#include <stdio.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "webhook/admission/admission_test_support.h"

using namespace admission_test;

namespace {

// The service of admission_test::Fixture, logging at info into a temporary file.
struct LoggedService {
  FILE* file = tmpfile();
  webhook::PolicyHolder holder;
  webhook::Metrics metrics;
  webhook::Logger logger{webhook::LogLevel::Info, fileno(file)};
  webhook::AdmissionService service{holder, &metrics, &logger};
  LoggedService() {
    auto load = webhook::load_policy_text(kPolicy, "codec.yaml");
    REQUIRE(load.ok());
    holder.set(load.policy);
    metrics.set_policy(*load.policy);
  }
  ~LoggedService() { fclose(file); }

  webhook::HttpReply handle(const std::string& body) { return service.handle(webhook::Endpoint::Validate, body); }

  // Log lines written since the last call.
  std::vector<json> new_lines() {
    const off_t end = lseek(fileno(file), 0, SEEK_END);
    std::string text(static_cast<size_t>(end - read_), '\0');
    REQUIRE(pread(fileno(file), text.data(), text.size(), read_) == static_cast<ssize_t>(text.size()));
    read_ = end;
    std::vector<json> lines;
    for (size_t start = 0; start < text.size();) {
      const size_t newline = text.find('\n', start);
      lines.push_back(json::parse(text.substr(start, newline - start)));
      start = newline == std::string::npos ? text.size() : newline + 1;
    }
    return lines;
  }
  // The one line written since the last call.
  json one_line() {
    std::vector<json> lines = new_lines();
    REQUIRE(lines.size() == 1);
    return lines[0];
  }

 private:
  off_t read_ = 0;
};

// A GPU pod of tenant alpha pinned to pool a100 (judged as it arrives: its whole GPU in the MIG pool
// is a mig-profile finding too).
json pinned_pod() {
  json pod = gpu_pod();
  pod["spec"]["nodeSelector"] = {{"pool", "a100"}};
  return pod;
}

const json* finding(const json& line, const std::string& rule) {
  for (const auto& f : line["findings"])
    if (f["rule"] == rule) return &f;
  return nullptr;
}

double metric(const webhook::Metrics& metrics, const std::string& series) {
  const std::string text = "\n" + metrics.serialize();
  const size_t at = text.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size() + 2));
}

}  // namespace

TEST_CASE("decision logs: a denial names the request, its user, tenant and pool, and each finding",
          "[admission][logs]") {
  LoggedService s;
  json pod = pinned_pod();
  pod["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  json body = review(pod);
  body["request"]["dryRun"] = true;
  REQUIRE(s.handle(body.dump()).status == 200);
  const json line = s.one_line();
  CHECK(line["level"] == "warn");
  CHECK(line["msg"] == "denied");
  CHECK(line["decision"] == "denied");
  CHECK(line["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002");
  CHECK(line["namespace"] == "team-alpha");
  CHECK(line["name"] == "train");
  CHECK(line["kind"] == "Pod");
  CHECK(line["operation"] == "CREATE");
  CHECK(line["dryRun"] == true);
  CHECK(line["user"] == "alice");
  CHECK(line["tenant"] == "alpha");
  CHECK(line["pool"] == "a100");
  const json* privileged = finding(line, "privileged");
  REQUIRE(privileged != nullptr);
  CHECK((*privileged)["action"] == "deny");
  CHECK((*privileged)["field"] == "spec.containers[0].securityContext.privileged");
  CHECK((*privileged)["message"].get<std::string>().find("\"main\"") != std::string::npos);
  CHECK(finding(line, "mig-profile") != nullptr);

  // Counted under the tenant, as a dry run.
  CHECK(metric(s.metrics, R"(gpu_admission_requests_total{decision="denied",dry_run="true",endpoint="validate",)"
                          R"(kind="Pod",operation="CREATE",tenant="alpha"})") == 1);
  CHECK(metric(s.metrics, R"(gpu_admission_rule_results_total{action="deny",mode="enforce",rule="privileged",tenant="alpha"})") == 1);
}

TEST_CASE("decision logs: warn and audit decisions admit, and say so", "[admission][logs]") {
  LoggedService s;
  json pod = gpu_pod();  // as /mutate leaves it: nothing for mig-profile, tenant-pool or tenant-label
  pod["spec"]["nodeSelector"] = {{"pool", "a100"}};
  pod["metadata"]["labels"] = {{"gpu-admission.io/tenant", "alpha"}, {"cost-center", "cc-1"}};
  pod["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-1g.10gb", 1}};
  pod["spec"]["hostNetwork"] = true;  // host-namespaces: warn in this policy
  REQUIRE(s.handle(review(pod).dump()).status == 200);
  json line = s.one_line();
  CHECK(line["level"] == "info");
  CHECK(line["msg"] == "admitted with findings");
  CHECK(line["decision"] == "warned");
  REQUIRE(finding(line, "host-namespaces") != nullptr);
  CHECK((*finding(line, "host-namespaces"))["action"] == "warn");
  CHECK((*finding(line, "host-namespaces"))["field"] == "spec.hostNetwork");

  pod["spec"]["hostNetwork"] = false;
  pod["spec"]["containers"][0]["env"] = {{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}}};  // audit here
  REQUIRE(s.handle(review(pod).dump()).status == 200);
  line = s.one_line();
  CHECK(line["decision"] == "audited");
  REQUIRE(finding(line, "gpu-device-access") != nullptr);
  CHECK((*finding(line, "gpu-device-access"))["action"] == "audit");
  CHECK(!(*finding(line, "gpu-device-access"))["message"].get<std::string>().empty());
}

TEST_CASE("decision logs: a pod of no tenant and no pool says none", "[admission][logs]") {
  LoggedService s;
  json pod = json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"elsewhere"},
    "spec":{"containers":[{"name":"c","image":"nginx","securityContext":{"privileged":true}}]}})");
  REQUIRE(s.handle(review(pod, "CREATE", "Pod", "elsewhere").dump()).status == 200);
  const json line = s.one_line();
  CHECK(line["msg"] == "denied");
  CHECK(line["tenant"] == "none");
  CHECK(line["pool"] == "none");
  CHECK(metric(s.metrics, R"(gpu_admission_requests_total{decision="denied",dry_run="false",endpoint="validate",)"
                          R"(kind="Pod",operation="CREATE",tenant="none"})") == 1);
}

TEST_CASE("error logs: each request answered with an error is logged with its reason and counted",
          "[admission][logs]") {
  LoggedService s;
  // Not an AdmissionReview: HTTP 400.
  REQUIRE(s.handle("not json").status == 400);
  json line = s.one_line();
  CHECK(line["level"] == "warn");
  CHECK(line["error"] == "bad_request");
  CHECK(line["class"] == "client");
  CHECK(line["endpoint"] == "validate");
  CHECK(!line["reason"].get<std::string>().empty());

  // An object that cannot be read: allowed=false, code 400, naming the field.
  json pod = gpu_pod();
  pod["spec"]["containers"][0]["securityContext"] = {{"privileged", "yes"}};
  json unreadable = review(pod);
  unreadable["request"]["name"] = "train";  // as the API server sends it: the object's own name is not read
  REQUIRE(s.handle(unreadable.dump()).status == 200);
  line = s.one_line();
  CHECK(line["error"] == "unreadable_object");
  CHECK(line["reason"].get<std::string>().find("spec.containers[0].securityContext.privileged") != std::string::npos);
  CHECK(line["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002");
  CHECK(line["name"] == "train");
  CHECK(line["user"] == "alice");

  // An evaluation that throws: code 500, an error line.
  s.service.set_evaluation_probe([] { throw std::runtime_error("injected fault"); });
  REQUIRE(s.handle(review(gpu_pod()).dump()).status == 200);
  line = s.one_line();
  CHECK(line["level"] == "error");
  CHECK(line["error"] == "evaluation_error");
  CHECK(line["class"] == "server");
  CHECK(line["reason"] == "internal error: injected fault");
  s.service.set_evaluation_probe(nullptr);

  CHECK(metric(s.metrics, R"(gpu_admission_request_errors_total{class="client",reason="bad_request"})") == 1);
  CHECK(metric(s.metrics, R"(gpu_admission_request_errors_total{class="client",reason="unreadable_object"})") == 1);
  CHECK(metric(s.metrics, R"(gpu_admission_request_errors_total{class="server",reason="evaluation_error"})") == 1);
}

TEST_CASE("error logs: a flood of junk is counted in full and logged only at the rate limit", "[admission][logs]") {
  LoggedService s;
  for (int i = 0; i < 2000; ++i) REQUIRE(s.handle("{\"junk\":" + std::to_string(i) + "}").status == 400);
  const std::vector<json> lines = s.new_lines();
  CHECK(lines.size() >= static_cast<size_t>(webhook::Logger::kErrorBurst));
  CHECK(lines.size() < 100);  // the burst, plus the rate for as long as the flood lasted
  for (const auto& line : lines) CHECK(line["error"] == "bad_request");
  CHECK(metric(s.metrics, R"(gpu_admission_request_errors_total{class="client",reason="bad_request"})") == 2000);
  // Unreadable objects have a bucket of their own: the flood of bad bodies does not hide them.
  json pod = gpu_pod();
  pod["spec"]["containers"][0]["securityContext"] = {{"privileged", "yes"}};
  REQUIRE(s.handle(review(pod).dump()).status == 200);
  CHECK(s.one_line()["error"] == "unreadable_object");
}

TEST_CASE("decision logs: a pod of 1.4 MB values is refused in a bounded message and one bounded line",
          "[admission][logs][bounded]") {
  LoggedService s;
  const std::string big(1400000, 'a');
  const std::string shown = std::string(256, 'a') + "\u2026\" (1.4 MB)";
  json pod = pinned_pod();
  auto& main = pod["spec"]["containers"][0];
  main["name"] = big;
  main["securityContext"] = {{"privileged", true}};                       // privileged: deny
  main["env"] = {{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", big}}};   // gpu-device-access: audit here
  pod["metadata"]["annotations"] = {{"cdi.k8s.io/" + big, "nvidia.com/gpu=all"}};
  pod["spec"]["volumes"] = {{{"name", "host"}, {"hostPath", {{"path", "/dev/nvidia" + big}}}}};
  pod["spec"]["hostNetwork"] = true;                                      // host-namespaces: warn
  const webhook::HttpReply reply = s.handle(review(pod).dump());
  REQUIRE(reply.status == 200);
  CHECK(reply.body.size() < 16384);
  const json response = json::parse(reply.body)["response"];
  CHECK(response["allowed"] == false);
  const std::string message = response["status"]["message"];
  CHECK(message.size() < 4096);
  CHECK(message.find("[privileged] container \"" + shown + " is privileged") != std::string::npos);
  REQUIRE(response.contains("auditAnnotations"));
  const std::string audited = response["auditAnnotations"]["gpu-device-access"];
  CHECK(audited.size() < 4096);
  CHECK(audited.find("to \"" + shown + ",") != std::string::npos);                     // the env value
  CHECK(audited.find("annotation \"cdi.k8s.io/" + std::string(245, 'a')) != std::string::npos);
  CHECK(audited.find("mounts \"/dev/nvidia" + std::string(245, 'a')) != std::string::npos);
  REQUIRE(response.contains("warnings"));
  for (const auto& w : response["warnings"]) CHECK(w.get<std::string>().size() < 120);

  const std::vector<json> lines = s.new_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].dump().size() < 16384);
  CHECK(lines[0]["msg"] == "denied");
  for (const auto& f : lines[0]["findings"]) {
    CHECK(f["message"].get<std::string>().size() < 4096);
    CHECK(f["field"].get<std::string>().size() < 1024);
  }
  const json* dga = finding(lines[0], "gpu-device-access");
  REQUIRE(dga != nullptr);
}

TEST_CASE("decision logs: a line lists 20 findings and counts the rest", "[admission][logs][bounded]") {
  LoggedService s;
  json pod = pinned_pod();
  json containers = json::array();
  for (int i = 0; i < 30; ++i)
    containers.push_back({{"name", "c" + std::to_string(i)}, {"image", "i"}, {"securityContext", {{"privileged", true}}}});
  pod["spec"]["containers"] = containers;
  const webhook::HttpReply reply = s.handle(review(pod).dump());
  REQUIRE(reply.status == 200);
  const std::string message = json::parse(reply.body)["response"]["status"]["message"];
  CHECK(message.find("container \"c29\" is privileged") != std::string::npos);  // the answer names them all
  const json line = s.one_line();
  CHECK(line["findings"].size() == 20);
  CHECK(line["moreFindings"].get<size_t>() >= 10);  // 30 privileged containers, and the pod's other findings
  json few = pinned_pod();
  few["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  REQUIRE(s.handle(review(few).dump()).status == 200);
  CHECK(!s.one_line().contains("moreFindings"));
}
