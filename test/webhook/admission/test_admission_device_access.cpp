// gpu-device-access through /validate: the new routes (volume mounts at the toolkit's device list,
// the longer env list, the policy's own spec.gpuEnvVars, the default device annotation prefixes)
// on each decoding path of the webhook: the pod decoded in the envelope's pass (kind before
// object, as the API server writes it), decoded later from its text (object before kind), an
// UPDATE of pods/ephemeralcontainers (kubectl debug), a workload template, an ML kind, and a
// policy reload between requests.
#include <string>

#include "test/webhook/admission/admission_test_support.h"

using namespace admission_test;

namespace {

constexpr const char* kSitePolicy = R"(apiVersion: gpu-admission.io/v1alpha1
kind: GpuAdmissionPolicy
metadata: {name: site}
spec:
  gpuEnvVars: [SITE_GPU_DEVICES]
  mutations: {hide-gpus: false}
)";

struct SiteFixture {
  webhook::PolicyHolder holder;
  webhook::AdmissionService service{holder, nullptr, nullptr};
  explicit SiteFixture(const char* text = kSitePolicy) { use(text); }
  void use(const char* text) {
    auto load = webhook::load_policy_text(text, "site.yaml");
    INFO(load.report());
    REQUIRE(load.ok());
    holder.set(load.policy);
  }
  json validate(const std::string& body) {
    webhook::HttpReply reply = service.handle(webhook::Endpoint::Validate, body);
    INFO(reply.body);
    REQUIRE(reply.status == 200);
    return json::parse(reply.body)["response"];
  }
};

json plain_pod() {
  return json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"sandbox"},
    "spec":{"containers":[{"name":"main","image":"app","env":[{"name":"PATH","value":"/bin"}]}]}})");
}

std::string message(const json& response) {
  return response.contains("status") ? response["status"]["message"].get<std::string>() : std::string();
}

// The review's text with request.object written before request.kind: the envelope's pass cannot
// decode the object then (its kind is not known yet) and keeps its text.
std::string object_first(const json& r) {
  json request = r["request"];
  json object = request["object"];
  request.erase("object");
  std::string rest = request.dump();
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"object":)" + object.dump() + "," +
         rest.substr(1) + "}";
}

}  // namespace

TEST_CASE("/validate reads env entries naming the policy's gpuEnvVars on both decoding paths",
          "[admission][gpu-device-access]") {
  SiteFixture f;
  json pod = plain_pod();
  pod["spec"]["containers"][0]["env"].push_back({{"name", "SITE_GPU_DEVICES"}, {"value", "all"}});
  const json r = review(pod, "CREATE", "Pod", "sandbox");
  const std::string eager = r.dump();
  REQUIRE(eager.find(R"("kind":{)") < eager.find(R"("object":)"));  // kind first: decoded in the envelope's pass
  const std::string later = object_first(r);
  REQUIRE(later.find(R"("object":)") < later.find(R"("kind":{)"));
  for (const std::string& body : {eager, later}) {
    json resp = f.validate(body);
    CHECK(resp["allowed"] == false);
    CHECK(message(resp).find("container \"main\" sets SITE_GPU_DEVICES to \"all\"") != std::string::npos);
  }
  // The policy reloaded without the name: the same pod passes; reloaded with it: refused again.
  f.use("apiVersion: gpu-admission.io/v1alpha1\nkind: GpuAdmissionPolicy\nmetadata: {name: plain}\nspec:\n"
        "  mutations: {hide-gpus: false}\n");
  CHECK(f.validate(eager)["allowed"] == true);
  f.use(kSitePolicy);
  CHECK(f.validate(eager)["allowed"] == false);
  CHECK(f.validate(later)["allowed"] == false);
}

TEST_CASE("/validate denies the new device routes in a pod, a Deployment template and a kubectl debug UPDATE",
          "[admission][gpu-device-access]") {
  SiteFixture f;
  // The longer env list and the default annotation prefixes (a bare key included).
  for (const char* name : {"NVIDIA_MOFED", "NVIDIA_NVSWITCH", "NVIDIA_GDS", "NVIDIA_GDRCOPY", "CUDA_DISABLE_CONTROL"}) {
    json pod = plain_pod();
    pod["spec"]["containers"][0]["env"].push_back({{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", "x"}}}}}});
    json resp = f.validate(review(pod, "CREATE", "Pod", "sandbox").dump());
    INFO(name);
    CHECK(resp["allowed"] == false);
    CHECK(message(resp).find(std::string("sets ") + name + " through valueFrom") != std::string::npos);
  }
  for (const char* key : {"nvidia.cdi.k8s.io", "nvidia.cdi.k8s.io/container.main", "devices.noderesource.dev/pod",
                          "mounts.noderesource.dev/container.main", "mounts.nri.io", "io.kubernetes.cri-o.Devices"}) {
    json pod = plain_pod();
    pod["metadata"]["annotations"] = {{key, "nvidia.com/gpu=all"}};
    INFO(key);
    json resp = f.validate(review(pod, "CREATE", "Pod", "sandbox").dump());
    CHECK(resp["allowed"] == false);
    CHECK(message(resp).find(std::string("annotation \"") + key + "\"") != std::string::npos);
  }
  // A key whose domain merely begins with a default prefix is another key.
  json near = plain_pod();
  near["metadata"]["annotations"] = {{"mounts.nri.io.example.com/x", "/"}};
  CHECK(f.validate(review(near, "CREATE", "Pod", "sandbox").dump())["allowed"] == true);

  // A Deployment whose template mounts a volume at the device list.
  json deploy = {{"apiVersion", "apps/v1"},
                 {"kind", "Deployment"},
                 {"metadata", {{"name", "web"}, {"namespace", "sandbox"}}},
                 {"spec", {{"template", {{"spec", plain_pod()["spec"]}}}}}};
  deploy["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = {
      {{"name", "scratch"}, {"mountPath", "/var/run/nvidia-container-devices/all"}}};
  json resp = f.validate(review(deploy, "CREATE", "Deployment", "sandbox").dump());
  CHECK(resp["allowed"] == false);
  CHECK(message(resp).find("mounts volume \"scratch\" at \"/var/run/nvidia-container-devices/all\"") != std::string::npos);

  // kubectl debug: an ephemeral container added by UPDATE of pods/ephemeralcontainers, with a
  // mount at the device list and a policy env name; the old pod had neither.
  json old_pod = plain_pod();
  json debug = old_pod;
  debug["spec"]["ephemeralContainers"] = {{{"name", "debugger"},
                                           {"image", "busybox"},
                                           {"env", {{{"name", "SITE_GPU_DEVICES"}, {"value", "0"}}}},
                                           {"volumeMounts", {{{"name", "v"}, {"mountPath", "/run/nvidia-container-devices/0"}}}}}};
  json e = review(debug, "UPDATE", "Pod", "sandbox");
  e["request"]["subResource"] = "ephemeralcontainers";
  e["request"]["oldObject"] = old_pod;
  for (const std::string& body : {e.dump(), object_first(e)}) {
    resp = f.validate(body);
    CHECK(resp["allowed"] == false);
    CHECK(message(resp).find("ephemeral container \"debugger\" sets SITE_GPU_DEVICES to \"0\"") != std::string::npos);
    CHECK(message(resp).find("ephemeral container \"debugger\" mounts volume \"v\"") != std::string::npos);
  }
  // The same UPDATE when the old pod already had both: nothing new, allowed.
  json again = e;
  again["request"]["oldObject"] = debug;
  CHECK(f.validate(again.dump())["allowed"] == true);
}

TEST_CASE("/validate judges an ML kind's templates with the policy's gpuEnvVars", "[admission][gpu-device-access]") {
  SiteFixture f;
  json job = json::parse(R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"t","namespace":"sandbox"},
    "spec":{"pytorchReplicaSpecs":{"Worker":{"template":{"spec":{"containers":[{"name":"main","image":"app",
      "env":[{"name":"SITE_GPU_DEVICES","value":"all"}]}]}}}}}})");
  json r = review(job, "CREATE", "PyTorchJob", "sandbox");
  r["request"]["kind"]["group"] = "kubeflow.org";
  r["request"]["resource"] = {{"group", "kubeflow.org"}, {"version", "v1"}, {"resource", "pytorchjobs"}};
  json resp = f.validate(r.dump());
  CHECK(resp["allowed"] == false);
  CHECK(message(resp).find("sets SITE_GPU_DEVICES to \"all\"") != std::string::npos);
}
