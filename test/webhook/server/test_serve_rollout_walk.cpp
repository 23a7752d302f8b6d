// docs/deployment.md's rollout ("Roll out safely", and the probe of "Check the installation")
// run end to end through the real `gpu-admission serve`, as a platform team walks it: observe under
// --enforcement audit, warn, enforce one tenant (the cap at enforce, the policy's spec.enforcement
// audit, enforcement: enforce on the ready tenant), enforce all, an exception that expires while
// serve runs. The policies, the pod and the quoted outputs are read from the document's
// `<!-- doc-test: NAME -->` blocks, and the log fields and messages it quotes inline are checked to
// be in it, so the document cannot drift from the product. Policies change by rewriting the file
// (hot reload), the cap by restarting serve, as the chart does. Also: what observing records is
// what enforcement acts on (the same pods judged both ways), and NOTES.txt quotes the probe's answers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include "webhook/cluster/serve_child.h"
#include "webhook/doc_blocks.h"
#include "webhook/io/yaml_json.h"
#include "webhook/ops/base64.h"
#include "webhook/server/server_test_support.h"

namespace {

using cluster_test::Child;
using cluster_test::eventually;
using cluster_test::TempDir;
using gpu_admission::Json;
using namespace std::chrono_literals;

const std::string& deployment_doc() {
  static const std::string text = doc_test::read_doc("docs/deployment.md");
  return text;
}
std::string block(const std::string& name) { return doc_test::marked_block(deployment_doc(), name); }

// The document says `quote` somewhere, verbatim as Markdown renders it (a line break inside a
// paragraph or a code span reads as a space).
void check_doc_says(const std::string& quote) {
  static const std::string folded = [] {
    std::string text = deployment_doc();
    std::replace(text.begin(), text.end(), '\n', ' ');
    return text;
  }();
  INFO("docs/deployment.md should contain: " << quote);
  CHECK(folded.find(quote) != std::string::npos);
}

Json yaml_object(const std::string& text) {
  const auto parsed = gpu_admission::webhook::parse_yaml_or_json(text);
  REQUIRE_FALSE(parsed.error);
  REQUIRE(parsed.documents.size() == 1);
  return parsed.documents[0].value;
}

// A JSON block of the document (a log line spread over several lines for reading).
Json json_block(const std::string& name) {
  Json value = Json::parse(block(name), nullptr, false);
  REQUIRE(value.is_object());
  return value;
}

std::string rfc3339(std::time_t t) {
  char text[32];
  std::tm utc{};
  gmtime_r(&t, &utc);
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

struct Request {
  std::string uid;
  std::string user = "alice@example.com";
  bool dry_run = false;
};

std::string review(const Json& pod, const Request& request) {
  return Json{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
              {"request", {{"uid", request.uid}, {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                           {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                           {"name", pod["metadata"]["name"]}, {"namespace", pod["metadata"]["namespace"]},
                           {"operation", "CREATE"}, {"userInfo", {{"username", request.user}}},
                           {"dryRun", request.dry_run}, {"object", pod}}}}
      .dump();
}

// What `kubectl run gpu-admission-probe --image=busybox --privileged -n default -- true` sends.
Json probe_pod() {
  return {{"apiVersion", "v1"}, {"kind", "Pod"},
          {"metadata", {{"name", "gpu-admission-probe"}, {"namespace", "default"}, {"labels", {{"run", "gpu-admission-probe"}}}}},
          {"spec", {{"containers", Json::array({{{"name", "gpu-admission-probe"}, {"image", "busybox"}, {"args", {"true"}},
                                                 {"securityContext", {{"privileged", true}}}, {"resources", Json::object()}}})},
                    {"restartPolicy", "Always"}, {"dnsPolicy", "ClusterFirst"}}}};
}

Json in_namespace(Json pod, const std::string& ns) {
  pod["metadata"]["namespace"] = ns;
  return pod;
}

Json strings(const Json& response, const char* key) { return response.contains(key) ? response[key] : Json::array(); }

// `serve --enforcement CAP` on the policy file `dir/policy.yaml`, its log in `dir/CAP.log`.
class Webhook {
 public:
  Webhook(const TempDir& dir, const std::string& cap, const std::string& policy) : dir_(dir) {
    cluster_test::write_text(dir.file("policy.yaml"), policy);
    child_ = std::make_unique<Child>(
        std::vector<std::string>{"serve", "--policy", dir.file("policy.yaml"), "--enforcement", cap, "--cluster", "off",
                                 "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--grace-period", "1"},
        dir.file(cap + ".log"));
    serving = child_->log_line("gpu-admission serving");
    INFO(child_->log());
    REQUIRE(serving.is_object());
    metrics_port_ = serving["metrics_port"];
    REQUIRE(client_.connect(serving["port"]));
  }

  Json answer(const char* path, const std::string& body) {
    auto reply = client_.request("POST", path, body);
    REQUIRE(reply.status == 200);
    return Json::parse(reply.body)["response"];
  }
  Json validate(const Json& pod, const Request& request) { return answer("/validate", review(pod, request)); }
  Json mutate(const Json& pod, const Request& request) { return answer("/mutate", review(pod, request)); }

  // The API server's chain: /mutate, its patch applied, /validate of the result.
  std::pair<Json, Json> chain(const Json& pod, const Request& request) {
    const Json mutated = mutate(pod, request);
    Json object = pod;
    if (mutated.contains("patch")) {
      const auto patch = gpu_admission::webhook::base64_decode(mutated["patch"].get<std::string>());
      REQUIRE(patch);
      object = object.patch(Json::parse(*patch));
    }
    return {mutated, validate(object, request)};
  }

  // Rewrites the policy file (atomically, as tools do) and waits for its reload; the line.
  Json reload(const std::string& policy) {
    const size_t before = lines("policy reloaded").size();
    cluster_test::write_text(dir_.file("policy.yaml.tmp"), policy);
    std::filesystem::rename(dir_.file("policy.yaml.tmp"), dir_.file("policy.yaml"));
    REQUIRE(eventually([&] { return lines("policy reloaded").size() > before; }));
    return lines("policy reloaded").back();
  }

  // Every log line whose msg starts with `message`, in order.
  std::vector<Json> lines(const std::string& message) const {
    std::vector<Json> found;
    for (const std::string& line : doc_test::lines_of(child_->log())) {
      Json entry = Json::parse(line, nullptr, false);
      if (entry.is_object() && entry.value("msg", "").rfind(message, 0) == 0) found.push_back(std::move(entry));
    }
    return found;
  }
  // The raw text of the first log line with msg `message` (fields in the order serve writes them).
  std::string raw_line(const std::string& message) const {
    for (const std::string& line : doc_test::lines_of(child_->log()))
      if (line.find("\"msg\":\"" + message + "\"") != std::string::npos) return line;
    return "";
  }
  // The decision line of request `uid` (waiting for it).
  Json decision(const std::string& uid) {
    Json found;
    eventually([&] {
      for (const Json& line : lines(""))
        if (line.value("uid", "") == uid && line.contains("decision")) found = line;
      return found.is_object();
    });
    INFO("no decision line for " << uid << " in\n" << child_->log());
    REQUIRE(found.is_object());
    return found;
  }
  std::string metrics() const { return cluster_test::scrape(metrics_port_); }
  std::string log() const { return child_->log(); }

  Json serving;

 private:
  const TempDir& dir_;
  std::unique_ptr<Child> child_;
  server_test::TlsClient client_;
  int metrics_port_ = 0;
};

// `sample` ("name{labels} value") is a line of the scrape.
void check_metric(const std::string& metrics, const std::string& sample) {
  INFO(metrics);
  CHECK(metrics.find("\n" + sample + "\n") != std::string::npos);
}

// Pods with findings of several rules, judged while observing and while enforcing.
std::vector<Json> comparison_pods(const Json& train) {
  std::vector<Json> pods = {train, in_namespace(train, "vision-dev")};
  Json hostnet = in_namespace(train, "vision-dev");
  hostnet["metadata"]["name"] = "hostnet";
  hostnet["spec"]["hostNetwork"] = true;
  hostnet["spec"]["containers"][0].erase("securityContext");
  pods.push_back(hostnet);
  Json two_types = train;
  two_types["metadata"]["name"] = "two-types";
  two_types["spec"]["containers"][0]["resources"]["limits"] = {{"nvidia.com/mig-3g.40gb", 1}, {"nvidia.com/mig-1g.10gb", 1}};
  pods.push_back(two_types);
  Json untolerated = in_namespace(train, "vision-dev");
  untolerated["metadata"]["name"] = "untolerated";
  untolerated["spec"].erase("tolerations");
  pods.push_back(untolerated);
  Json foreign = train;
  foreign["metadata"]["name"] = "foreign-pool";
  foreign["spec"]["nodeSelector"] = {{"gpu.example.com/pool", "h100"}};
  pods.push_back(foreign);
  Json visible = train;
  visible["metadata"]["name"] = "visible-devices";
  visible["spec"]["containers"][0].erase("resources");
  visible["spec"]["containers"][0]["env"] = Json::array({{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}}});
  pods.push_back(visible);
  return pods;
}

// A decision's findings as (rule, field, message, would enforcement deny it).
using Findings = std::set<std::tuple<std::string, std::string, std::string, bool>>;
Findings findings_of(const Json& decision_line) {
  Findings out;
  for (const Json& f : decision_line["findings"])
    out.emplace(f["rule"], f["field"], f["message"], f.value("wouldDeny", false) || f["action"] == "deny");
  return out;
}

// The walk's state: the document's blocks, and what observing recorded (pod -> findings).
struct Walk {
  TempDir dir;
  const std::string observe = block("policy-observe");
  const std::string tenant_by_tenant = block("policy-tenant");
  const Json train = yaml_object(block("train-pod"));
  const Json probe_line = json_block("probe-log");
  const Json train_line = json_block("decision-log");
  std::map<std::string, Findings> observed;

  static std::string key(const Json& pod) {
    return pod["metadata"]["namespace"].get<std::string>() + "/" + pod["metadata"]["name"].get<std::string>();
  }

  // Steps 1 and 2: the probe and train.yaml are admitted and recorded as the document shows.
  void observe_and_read(Webhook& w) {
    const std::string modes = R"("enforcement":"audit","enforcementCap":"audit","tenantModes":{"research":"audit","vision":"audit"})";
    CHECK(w.raw_line("gpu-admission serving").find(modes) != std::string::npos);
    check_doc_says(modes);
    CHECK(w.lines("a tenant's mode is above").empty());  // inherited modes under the cap: no noise

    // The probe: admitted, nothing shown; its log line is the one the document quotes.
    const Request probe{probe_line["uid"].get<std::string>(), probe_line["user"].get<std::string>(), true};
    const Json probe_validated = w.validate(probe_pod(), probe);
    CHECK(probe_validated["allowed"] == true);
    CHECK_FALSE(probe_validated.contains("warnings"));
    CHECK_FALSE(probe_validated.contains("status"));
    CHECK_FALSE(w.mutate(probe_pod(), probe).contains("warnings"));
    Json logged = w.decision(probe.uid);
    logged.erase("time");
    Json quoted = probe_line;
    quoted.erase("time");
    CHECK(logged == quoted);

    // train.yaml: admitted as written, recorded with wouldDeny; the withheld patch logged and counted.
    const Request request{train_line["uid"].get<std::string>(), train_line["user"].get<std::string>()};
    const Json mutated = w.mutate(train, request);
    CHECK_FALSE(mutated.contains("patch"));
    CHECK_FALSE(mutated.contains("warnings"));
    const Json validated = w.validate(train, request);
    CHECK(validated["allowed"] == true);
    CHECK_FALSE(validated.contains("warnings"));
    logged = w.decision(request.uid);
    logged.erase("time");
    quoted = train_line;
    quoted.erase("time");
    CHECK(logged == quoted);
    REQUIRE_FALSE(w.lines("mutations withheld").empty());
    CHECK(w.lines("mutations withheld").back()["uid"] == request.uid);
    const std::string metrics = w.metrics();
    check_metric(metrics, R"(gpu_admission_rule_results_total{action="deny",mode="audit",rule="privileged",tenant="research"} 1)");
    for (const char* mutation : {"pool-selector", "tenant-labels", "mig-resources"})
      check_metric(metrics, std::string(R"(gpu_admission_mutations_withheld_total{mutation=")") + mutation +
                                R"(",tenant="research"} 1)");
    check_doc_says(R"(sum by (tenant, rule) (increase(gpu_admission_rule_results_total{action="deny"}[1d])))");
    check_doc_says(R"(sum by (tenant, mutation) (increase(gpu_admission_mutations_withheld_total[1d])))");
  }

  // What observing records, for the comparison with enforcement (as the API server sends it:
  // /mutate changed nothing, so /validate gets the pod as written).
  void record_observed(Webhook& w) {
    int n = 0;
    for (const Json& pod : comparison_pods(train)) {
      const Request r{"observe-" + std::to_string(n++)};
      CHECK(w.validate(pod, r)["allowed"] == true);
      observed[key(pod)] = findings_of(w.decision(r.uid));
    }
  }

  // The step-4 policy while the chart is still at audit: research's own mode has no effect, said.
  void tenant_mode_over_cap(Webhook& w) {
    const Json reloaded = w.reload(tenant_by_tenant);
    CHECK(reloaded["tenants"] == Json{{"research", "audit"}, {"vision", "audit"}});
    const auto warnings = w.lines("a tenant's mode is above serve --enforcement and has no effect");
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0]["tenant"] == "research");
    const std::string quote = R"("msg":"a tenant's mode is above serve --enforcement and has no effect","tenant":"research","tenantMode":"enforce","enforcementCap":"audit","effectiveMode":"audit")";
    CHECK(w.log().find(quote) != std::string::npos);
    check_doc_says(quote);
  }

  // Step 3: users are warned of what enforcement would do; nothing changes.
  void warn(Webhook& w) {
    CHECK(w.serving["tenantModes"] == Json{{"research", "warn"}, {"vision", "warn"}});
    const Request request{"warn-train"};
    const Json mutated = w.mutate(train, request);
    const Json validated = w.validate(train, request);
    CHECK_FALSE(mutated.contains("patch"));
    CHECK(validated["allowed"] == true);
    std::vector<std::string> shown;  // what kubectl prints: /mutate's warnings, then /validate's
    for (const Json* response : {&mutated, &validated})
      for (const Json& warning : strings(*response, "warnings")) shown.push_back("Warning: " + warning.get<std::string>());
    shown.push_back("pod/train created");
    CHECK(shown == doc_test::lines_of(block("warn-output")));
    check_metric(w.metrics(), R"(gpu_admission_rule_results_total{action="deny",mode="warn",rule="privileged",tenant="research"} 1)");

    const Request probe{"warn-probe", "kubernetes-admin", true};
    const Json probe_mutated = w.mutate(probe_pod(), probe);
    const Json probe_validated = w.validate(probe_pod(), probe);
    CHECK(probe_validated["allowed"] == true);
    REQUIRE(strings(probe_validated, "warnings").size() == 1);
    REQUIRE(strings(probe_mutated, "warnings").size() == 1);
    const std::string warned = "Warning: " + probe_validated["warnings"][0].get<std::string>();
    CHECK(warned == R"(Warning: [privileged] would deny: container "gpu-admission-probe" is privileged)");
    check_doc_says(warned);
    check_doc_says("Warning: " + probe_mutated["warnings"][0].get<std::string>());
    CHECK(doc_test::read_doc("charts/gpu-admission/templates/NOTES.txt").find(warned) != std::string::npos);
  }

  // Step 4: research enforces, vision and namespace default observe.
  void enforce_one_tenant(Webhook& w) {
    const std::string modes = R"("enforcement":"audit","enforcementCap":"enforce","tenantModes":{"research":"enforce","vision":"audit"})";
    CHECK(w.raw_line("gpu-admission serving").find(modes) != std::string::npos);
    check_doc_says(modes);
    CHECK(w.lines("a tenant's mode is above").empty());
    const auto [research_mutated, research] = w.chain(train, {"tenant-research"});
    CHECK(research_mutated.contains("patch"));
    CHECK(research["allowed"] == false);
    const std::string message = research["status"]["message"];
    CHECK(message == R"([privileged] container "main" is privileged)");
    check_doc_says(R"(Error from server (Forbidden): error when creating "train.yaml": admission webhook "validate.gpu-admission.io" denied the request: )" +
                   message + "`");
    const auto [vision_mutated, vision] = w.chain(in_namespace(train, "vision-dev"), {"tenant-vision"});
    CHECK_FALSE(vision_mutated.contains("patch"));
    CHECK(vision["allowed"] == true);
    CHECK(w.decision("tenant-vision")["mode"] == "audit");
    CHECK(w.decision("tenant-vision")["findings"][0]["wouldDeny"] == true);
    // Namespace default has spec.enforcement (audit) here: the probe is only recorded.
    CHECK(w.validate(probe_pod(), {"tenant-probe", "kubernetes-admin", true})["allowed"] == true);
  }

  // Step 5: every tenant enforces; enforcement acts on exactly what observing recorded.
  std::string enforce_all(Webhook& w) {
    std::string all;
    for (const std::string& line : doc_test::lines_of(tenant_by_tenant))
      if (line.find("enforcement:") == std::string::npos) all += line + "\n";
    const std::string reloaded = R"("enforcement":"enforce","enforcementCap":"enforce","tenants":{"research":"enforce","vision":"enforce"})";
    w.reload(all);
    CHECK(w.log().find(reloaded) != std::string::npos);
    check_doc_says(reloaded);
    CHECK(w.chain(in_namespace(train, "vision-dev"), {"all-vision"}).second["allowed"] == false);
    const Json probe_denied = w.validate(probe_pod(), {"all-probe", "kubernetes-admin", true});
    const std::string denial = R"(Error from server (Forbidden): admission webhook "validate.gpu-admission.io" denied the request: )" +
                               probe_denied["status"]["message"].get<std::string>();
    CHECK(denial.ends_with(R"( [privileged] container "gpu-admission-probe" is privileged)"));
    check_doc_says(denial);
    CHECK(doc_test::read_doc("charts/gpu-admission/templates/NOTES.txt").find(denial) != std::string::npos);
    int n = 0;
    for (const Json& pod : comparison_pods(train)) {
      const Request r{"enforce-" + std::to_string(n++)};
      w.chain(pod, r);
      INFO(key(pod));
      CHECK_FALSE(observed[key(pod)].empty());
      CHECK(findings_of(w.decision(r.uid)) == observed[key(pod)]);
    }
    return all;
  }

  // Step 5's exception, expiring a few seconds from now (the document's time replaced): it
  // admits until then, then refuses saying so, and serve logs the expiry once.
  void exception_expires(Webhook& w, const std::string& all) {
    std::string exception = block("exception");
    REQUIRE(exception.rfind("spec:\n", 0) == 0);
    exception.erase(0, 6);
    const std::string documented = "2027-03-31T00:00:00Z";
    REQUIRE(exception.find(documented) != std::string::npos);
    const int lasts = static_cast<int>(4 * server_test::kSanitizerSlowdown);  // seconds: long enough to be used
    const std::time_t expires = std::time(nullptr) + lasts;
    exception.replace(exception.find(documented), documented.size(), rfc3339(expires));
    w.reload(all + exception);
    const Json debug = in_namespace(train, "vision-debug-1");
    CHECK(w.chain(debug, {"excepted"}).second["allowed"] == true);
    CHECK(w.decision("excepted")["findings"][0]["exception"] == "vision-debug-pods");
    check_metric(w.metrics(), R"(gpu_admission_exception_expiry_timestamp_seconds{exception="vision-debug-pods"} )" +
                                  std::to_string(expires));
    REQUIRE(eventually([&] { return std::time(nullptr) > expires; }, std::chrono::seconds(lasts + 4)));
    const Json refused = w.chain(debug, {"expired"}).second;
    CHECK(refused["allowed"] == false);
    const std::string expired_message = refused["status"]["message"];
    CHECK(expired_message == R"([privileged] container "main" is privileged (exception vision-debug-pods expired )" +
                                 rfc3339(expires) + ")");
    check_doc_says(R"([privileged] container "main" is privileged (exception vision-debug-pods expired )" + documented + ")");
    const std::string expired_line = "exception expired: its rules apply again to what it selected";
    CHECK(eventually([&] { return !w.lines(expired_line).empty(); }, 12s));
    check_doc_says("\"msg\":\"" + expired_line + "\"");
    std::this_thread::sleep_for(6s);  // serve looks every 5 s: a second look says nothing more
    const auto expiries = w.lines(expired_line);
    REQUIRE(expiries.size() == 1);
    CHECK(expiries[0]["exception"] == "vision-debug-pods");
  }
};

}  // namespace

TEST_CASE("the rollout of docs/deployment.md, run through serve step by step", "[rollout][binary][docs]") {
  Walk walk;
  {
    INFO("steps 1-2: observe (the chart's default, --enforcement audit), read what would be denied");
    Webhook w(walk.dir, "audit", walk.observe);
    walk.observe_and_read(w);
    walk.record_observed(w);
    walk.tenant_mode_over_cap(w);
  }
  {
    INFO("step 3: warn (--enforcement warn)");
    Webhook w(walk.dir, "warn", walk.observe);
    walk.warn(w);
  }
  INFO("steps 4-5: --enforcement enforce; one tenant, then all, then an exception that expires");
  Webhook w(walk.dir, "enforce", walk.tenant_by_tenant);
  walk.enforce_one_tenant(w);
  const std::string all = walk.enforce_all(w);
  walk.exception_expires(w, all);
}
