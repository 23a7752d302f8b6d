// Fuzz target: a sequence of admission reviews of every kind through one admission service and
// one connection engine, as one API server sends them to one replica. Each input is a program:
// every step picks a review (pods small and large, pods with DRA claims, claims, claim templates,
// claim allocations, workloads, ML kinds, bad bodies) with names and sizes from the input, and
// sends it either straight to the service, from a buffer that is overwritten and freed once
// answered (as a connection's buffer is reused), or over a kept-alive TLS connection to the
// in-process server. State that outlives a request (per-thread scratch, views, the connection's
// buffers) is what this target attacks: a view of an earlier request read by a later one is a
// use-after-free that ASan reports. Every answer must be an HTTP error or an AdmissionReview
// that echoes its request's uid. Steps of the tenant's own pod (commit_point_scenario.h) check the
// promise of commit points: an allowed ungating, re-pointing or allocation never starts a pod that
// a CREATE of it, as it now is, would be refused.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "commit_point_scenario.h"
#include "webhook/server/server_test_support.h"

using namespace gpu_admission;
using nlohmann::json;

namespace {

[[noreturn]] void fail(const char* why, const std::string& detail) {
  std::fprintf(stderr, "fuzz_review_sequence invariant broken: %s\n%.2000s\n", why, detail.c_str());
  std::abort();
}

// The pods an allocation review reserves: the tenant's pod as stored, by its name; else whatever
// the last pod step sent.
struct LastPods final : policy::PodSource {
  std::string text;
  std::string tenant_pod;  // "" while the tenant has none
  Outcome pod_json(std::string_view, std::string_view name, std::string& out) const override {
    const std::string& found = name == commit_points::kPodName ? tenant_pod : text;
    if (found.empty()) return Outcome::NotFound;
    out = found;
    return Outcome::Found;
  }
};

// The whole webhook once per process: service, engine, and one client connection.
struct Harness {
  server_test::InProcessServer server{[] {
    auto options = server_test::test_options();
    options.worker_threads = 2;  // steps over inline_request_bytes (256 KiB) go to the worker pool
    return options;
  }()};
  webhook::Logger logger{webhook::LogLevel::Info, server_test::dev_null_fd()};
  LastPods pods;
  commit_points::Claims claims;
  webhook::AdmissionService direct{server.policies, &server.metrics, &logger};
  server_test::TlsClient client;
  Harness() {
    if (!server.started) fail("the server did not start", server.start_error);
    server.admission.set_pod_source(&pods);
    direct.set_pod_source(&pods);
  }
  // Each input starts with no tenant pod and two claims that ask for no GPU.
  void reset_tenant() {
    pods.tenant_pod.clear();
    for (const char* name : commit_points::kClaimNames) claims.put(name, commit_points::claim_devices(0));
    use_claims();
  }
  // Between requests only: no review is in flight while the resolver changes.
  void use_claims() {
    server.admission.set_claim_resolver(claims.resolver.get());
    direct.set_claim_resolver(claims.resolver.get());
  }
};

Harness& harness() {
  static Harness* h = new Harness();  // never destroyed: libFuzzer exits without unwinding
  return *h;
}

// Reads the input as a program, byte by byte; zeros once it is used up.
class Program {
 public:
  Program(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  size_t size_up_to(size_t max) {
    const size_t high = byte();
    return ((high << 8) | byte()) * max / 65536;
  }
  std::string name() {
    static constexpr char kLetters[] = "abcdefghijklmnopqrstuvwxyz0123456789-";
    std::string out(1 + byte() % 12, 'a');
    for (auto& c : out) c = kLetters[byte() % (sizeof kLetters - 1)];
    return out;
  }
  std::string bytes(size_t max) {
    const size_t n = std::min<size_t>(byte() % (max + 1), size_ - std::min(pos_, size_));
    std::string out(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

json envelope(const std::string& uid, const json& kind, const std::string& resource, const json& object,
              const char* operation = "CREATE", const char* sub_resource = nullptr) {
  json r = {{"uid", uid},
            {"kind", kind},
            {"resource", {{"group", kind["group"]}, {"version", kind["version"]}, {"resource", resource}}},
            {"namespace", "research"},
            {"operation", operation},
            {"userInfo", {{"username", "tenant"}}},
            {"object", object}};
  if (object.contains("metadata") && object["metadata"].contains("name")) r["name"] = object["metadata"]["name"];
  if (sub_resource) r["subResource"] = sub_resource;
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", r}};
}

json pod(Program& p, size_t annotation_bytes) {
  json object = {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", p.name()}, {"namespace", "research"}, {"uid", "pod-uid"}}},
                 {"spec", {{"containers", {{{"name", "main"}, {"image", "cuda"}}}}}}};
  if (annotation_bytes) object["metadata"]["annotations"] = {{"notes", std::string(annotation_bytes, 'n')}};
  if (p.byte() & 1) object["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  if (p.byte() & 1) object["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", p.byte() % 5}}}};
  if (p.byte() & 1) {
    object["spec"]["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimName", p.name()}}};
    object["spec"]["containers"][0]["resources"]["claims"] = {{{"name", "gpu"}}};
  }
  return object;
}

json claim(Program& p, bool is_template) {
  json exactly = {{"deviceClassName", p.byte() & 1 ? "gpu.nvidia.com" : "mig.nvidia.com"}, {"count", 1 + p.byte() % 9}};
  if (p.byte() & 1) exactly["adminAccess"] = true;
  json devices = {{"requests", {{{"name", "gpu"}, {"exactly", exactly}}}}};
  json object = {{"apiVersion", "resource.k8s.io/v1"},
                 {"kind", is_template ? "ResourceClaimTemplate" : "ResourceClaim"},
                 {"metadata", {{"name", p.name()}, {"namespace", "research"}}}};
  if (is_template) object["spec"] = {{"spec", {{"devices", devices}}}};
  else object["spec"] = {{"devices", devices}};
  return object;
}

const json kPodKind = {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}};
json claim_kind(bool is_template) {
  return {{"group", "resource.k8s.io"}, {"version", "v1"}, {"kind", is_template ? "ResourceClaimTemplate" : "ResourceClaim"}};
}

// One step of the program: the body of the review it sends. `crafted`: false for bodies made of
// the input's bytes, whose uid is the input's.
std::string step_body(Program& p, const std::string& uid, Harness& h, bool& crafted) {
  crafted = true;
  switch (p.byte() % 9) {
    case 0: {
      json object = pod(p, 0);
      h.pods.text = object.dump();
      return envelope(uid, kPodKind, "pods", object).dump();
    }
    case 1: return envelope(uid, kPodKind, "pods", pod(p, 1 + p.size_up_to(400 << 10))).dump();
    case 2:
    case 3: {
      const bool is_template = p.byte() & 1;
      return envelope(uid, claim_kind(is_template), is_template ? "resourceclaimtemplates" : "resourceclaims",
                      claim(p, is_template)).dump();
    }
    case 4: {
      json object = claim(p, false);
      json old_object = object;
      object["status"] = {{"allocation", json::object()},
                          {"reservedFor", {{{"resource", "pods"}, {"name", p.name()}, {"uid", "pod-uid"}}}}};
      json review = envelope(uid, claim_kind(false), "resourceclaims", object, "UPDATE", "status");
      review["request"]["oldObject"] = old_object;
      return review.dump();
    }
    case 5: {
      json templ = pod(p, p.size_up_to(64 << 10));
      json object = {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"metadata", {{"name", p.name()}}},
                     {"spec", {{"template", {{"spec", templ["spec"]}}}}}};
      return envelope(uid, {{"group", "apps"}, {"version", "v1"}, {"kind", "Deployment"}}, "deployments", object).dump();
    }
    case 6: {
      json templ = pod(p, 0);
      json object = {{"apiVersion", "kubeflow.org/v1"}, {"kind", "PyTorchJob"}, {"metadata", {{"name", p.name()}}},
                     {"spec", {{"pytorchReplicaSpecs", {{"Worker", {{"template", {{"spec", templ["spec"]}}}}}}}}}};
      return envelope(uid, {{"group", "kubeflow.org"}, {"version", "v1"}, {"kind", "PyTorchJob"}}, "pytorchjobs", object)
          .dump();
    }
    case 7: {  // a review cut short, or with bytes of the input spliced in
      crafted = false;
      std::string body = envelope(uid, kPodKind, "pods", pod(p, p.size_up_to(8 << 10))).dump();
      body.resize(p.size_up_to(body.size() + 1));
      return body + p.bytes(64);
    }
    default: crafted = false; return p.bytes(255);  // raw bytes
  }
}

// The reply's invariants: an HTTP error, or an AdmissionReview echoing `uid` (when not empty).
// FUZZ_REVIEW_SEQUENCE_TRACE=1 prints each step's answer (to write seeds by hand).
void check_reply(int status, const std::string& body, const std::string& uid) {
  static const bool trace = std::getenv("FUZZ_REVIEW_SEQUENCE_TRACE") != nullptr;
  if (trace) std::fprintf(stderr, "step %s: HTTP %d %.160s\n", uid.c_str(), status, body.c_str());
  if (status == 400 || status == 413 || status == 415) return;
  if (status != 200) fail("unexpected HTTP status", std::to_string(status) + " " + body);
  json out = json::parse(body, nullptr, false);
  if (out.is_discarded() || !out.contains("response") || !out["response"].contains("allowed"))
    fail("reply is not an AdmissionReview", body);
  const json& got = out["response"]["uid"];
  if (!uid.empty() && (!got.is_string() || got.get<std::string>() != uid))
    fail("reply echoes another request's uid", body);
}

// Straight to the service, from a buffer freed once answered.
void send_direct(Harness& h, webhook::Endpoint endpoint, const std::string& body, const std::string& uid) {
  const size_t size = body.size();
  auto buffer = std::make_unique<char[]>(size + webhook::AdmissionService::kBodyPadding);
  std::memcpy(buffer.get(), body.data(), size);
  std::memset(buffer.get() + size, ' ', webhook::AdmissionService::kBodyPadding);
  webhook::HttpReply reply = h.direct.handle(endpoint, std::string_view(buffer.get(), size), true);
  std::memset(buffer.get(), 'X', size);
  buffer.reset();
  check_reply(reply.status, reply.body, uid);
}

// Over the kept-alive TLS connection (reconnecting after the server closed it).
void send_engine(Harness& h, webhook::Endpoint endpoint, const std::string& body, const std::string& uid) {
  if (!h.client.connected() && !h.client.connect(h.server.port())) fail("cannot connect", "");
  auto response = h.client.request("POST", endpoint == webhook::Endpoint::Validate ? "/validate" : "/mutate", body);
  if (!response.ok) {  // the server may close a connection after an error; one fresh try
    h.client.close();
    if (!h.client.connect(h.server.port())) fail("cannot reconnect", "");
    response = h.client.request("POST", endpoint == webhook::Endpoint::Validate ? "/validate" : "/mutate", body);
    if (!response.ok) fail("no response from the engine", body.substr(0, 200));
  }
  check_reply(response.status, response.body, uid);
  if (response.header("connection") == "close") h.client.close();
}

// Sends a review straight to the service and returns its response (an AdmissionReview's).
json answer(Harness& h, webhook::Endpoint endpoint, const json& review) {
  const std::string body = review.dump();
  auto buffer = std::make_unique<char[]>(body.size() + webhook::AdmissionService::kBodyPadding);
  std::memcpy(buffer.get(), body.data(), body.size());
  std::memset(buffer.get() + body.size(), ' ', webhook::AdmissionService::kBodyPadding);
  webhook::HttpReply reply = h.direct.handle(endpoint, std::string_view(buffer.get(), body.size()), true);
  check_reply(reply.status, reply.body, review["request"]["uid"]);
  return json::parse(reply.body)["response"];
}

// The promise of a commit point that was just allowed: the stored pod, created now, is admitted.
void check_admitted_now(Harness& h, const std::string& uid, const char* step) {
  const json pod = json::parse(h.pods.tenant_pod);
  const json created = answer(h, webhook::Endpoint::Validate, envelope(uid + "-now", kPodKind, "pods", pod));
  if (created["allowed"] != true)
    fail("a commit point was allowed for a pod a CREATE refuses",
         std::string(step) + "\npod: " + pod.dump() + "\nclaims: " + json(h.claims.objects).dump() +
             "\nCREATE: " + created.dump());
}

// One step of the tenant's own pod and claims.
void tenant_step(Program& p, Harness& h, const std::string& uid) {
  namespace cp = commit_points;
  const uint8_t op = p.byte();
  const bool have_pod = !h.pods.tenant_pod.empty();
  // `moves`: a re-point or an ungating, a commit point when it changes the pod (re-pointing where
  // it already points, or ungating an ungated pod, changes nothing and starts nothing).
  auto update = [&](const json& object, const char* step, bool moves) {
    const json old_object = json::parse(h.pods.tenant_pod);
    json review = envelope(uid, kPodKind, "pods", object, "UPDATE");
    review["request"]["oldObject"] = old_object;
    if (answer(h, webhook::Endpoint::Validate, review)["allowed"] != true) return;
    h.pods.tenant_pod = object.dump();
    if (moves && object != old_object) check_admitted_now(h, uid, step);
  };
  switch (have_pod ? op % 6 : 0) {
    case 0: {
      const json pod = cp::gated_pod(p.byte());
      if (answer(h, webhook::Endpoint::Validate, envelope(uid, kPodKind, "pods", pod))["allowed"] == true)
        h.pods.tenant_pod = pod.dump();
      return;
    }
    case 1: return update(cp::repointed(json::parse(h.pods.tenant_pod), p.byte()), "re-point", true);
    case 2: return update(cp::ungated(json::parse(h.pods.tenant_pod)), "ungate", true);
    case 3: return update(cp::labelled(json::parse(h.pods.tenant_pod)), "label", false);
    case 4: {  // the tenant deletes a claim and creates another of the same name
      h.claims.put(cp::kClaimNames[p.byte() & 1], cp::claim_devices(p.byte()));
      h.use_claims();
      return;
    }
    default: {  // the scheduler allocates one of the pod's claims
      const json& claim = h.claims.objects[cp::kClaimNames[p.byte() & 1]];
      json review = envelope(uid, claim_kind(false), "resourceclaims", cp::allocation(claim), "UPDATE", "status");
      review["request"]["oldObject"] = claim;
      review["request"]["userInfo"]["username"] = "system:kube-scheduler";
      if (answer(h, webhook::Endpoint::Validate, review)["allowed"] == true) check_admitted_now(h, uid, "allocate");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Harness& h = harness();
  h.reset_tenant();
  Program p(data, size);
  for (int step = 0; step < 24 && !p.done(); ++step) {
    const uint8_t how = p.byte();
    const std::string uid = "uid-" + std::to_string(step) + "-" + p.name();
    if (how >= 0xc0) {  // a quarter of the steps: the tenant's pod and claims
      tenant_step(p, h, uid);
      continue;
    }
    bool crafted = true;
    const std::string body = step_body(p, uid, h, crafted);
    const std::string expected_uid = crafted ? uid : "";
    const auto endpoint = how & 1 ? webhook::Endpoint::Mutate : webhook::Endpoint::Validate;
    if (how & 2) send_engine(h, endpoint, body, expected_uid);
    else send_direct(h, endpoint, body, expected_uid);
  }
  return 0;
}
