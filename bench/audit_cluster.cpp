// What the audit benchmark's cluster holds where (audit_cluster.h): the system namespaces' node
// agents and services first, then one workload at a time in every other namespace in turn, of
// the kinds a namespace of that role and tenant runs, until the pods asked for are made. Each
// top-level object gets a violation with probability kViolationChance.
#include "bench/audit_cluster.h"

#include <algorithm>

#include "bench/audit_builder.h"

namespace gpu_admission::bench::audit {
namespace {

// With the exempt node agents (about a sixth of the pods) and finished pods never violating,
// this makes about a tenth of all pods violate something (9.9% at 150,000 pods, seed 1).
constexpr double kViolationChance = 0.14;

const std::vector<std::string> kModels = {"llama-3-70b-chat", "mixtral-8x7b", "qwen2-72b", "embed-e5-large",
                                          "rerank-bge", "whisper-large-v3", "sdxl-turbo", "codellama-34b"};
const std::vector<std::string> kTrainers = {"llama-pretrain", "vit-huge", "wav2vec-ft", "diffusion-xl",
                                            "dlrm-v2", "bert-mlm", "gpt-moe", "protein-lm"};
const std::vector<std::string> kBatch = {"data-prep", "tokenize", "eval-harness", "feature-backfill", "shard-export", "dedup"};
const std::vector<std::string> kCron = {"nightly-eval", "embedding-refresh", "checkpoint-gc", "metrics-rollup"};
const std::vector<std::string> kServices = {"gateway", "router", "feature-store", "tensorboard", "label-studio"};
const std::vector<std::string> kUsers = {"alice", "bob", "chen", "dana", "eli", "fatima", "gus", "hana", "ivan", "jo"};

class Planner {
 public:
  explicit Planner(ClusterBuilder& b) : b_(b), rng_(b.rng()) {}

  void system_workloads();
  void next_workload(const Namespace& ns);

 private:
  TemplatePlan plan(const Namespace& ns, AppShape shape, const std::string& base, int gpus);
  // A violation for a top-level object of `plan`, or none (kViolationChance).
  void maybe_violate(TemplatePlan& plan);
  void training_namespace(const Namespace& ns, const Tenant& t);
  void serving_namespace(const Namespace& ns, const Tenant& t);
  void dev_namespace(const Namespace& ns);
  void platform_namespace(const Namespace& ns);

  ClusterBuilder& b_;
  Rng& rng_;
};

TemplatePlan Planner::plan(const Namespace& ns, AppShape shape, const std::string& base, int gpus) {
  TemplatePlan p;
  p.ns = &ns;
  p.tenant = ns.tenant >= 0 ? &tenants()[static_cast<size_t>(ns.tenant)] : nullptr;
  p.shape = shape;
  p.app = ns.role == NamespaceRole::System ? base : b_.unique_name(ns.name, base);
  p.gpus = gpus;
  if (gpus > 0 && p.tenant) {
    p.pool = p.tenant->default_pool;
    // Training tenants also use a100-train, by naming it; others name their default pool half
    // the time (pool-selector pins the rest).
    if (p.tenant->kind == TenantKind::Training && rng_.chance(0.3)) p.pool = 1;
    p.pin_in_template = p.pool != p.tenant->default_pool || rng_.chance(0.5);
  }
  p.restart_policy = shape == AppShape::Batch ? "Never" : shape == AppShape::Trainer ? "OnFailure" : "Always";
  maybe_violate(p);
  return p;
}

void Planner::maybe_violate(TemplatePlan& p) {
  if (p.ns->role == NamespaceRole::System || !rng_.chance(kViolationChance)) return;
  std::vector<Violation> choices = {Violation::Privileged, Violation::HostNetwork, Violation::DeviceEnv};
  if (p.pool >= 0) {
    choices.push_back(Violation::Tolerations);
    choices.push_back(Violation::ForeignPool);
    if (p.tenant->cap < 8) choices.push_back(Violation::GpuCap);
  }
  apply_violation(p, rng_.pick(choices));
}

void Planner::system_workloads() {
  const auto& all = namespaces();
  auto ns = [&](const char* name) -> const Namespace& {
    return *std::find_if(all.begin(), all.end(), [&](const Namespace& n) { return n.name == name; });
  };
  const int coredns = static_cast<int>(std::max<size_t>(2, b_.all_nodes() / 250));
  b_.daemon_set(plan(ns("kube-system"), AppShape::NodeAgent, "kube-proxy", 0), false);
  b_.daemon_set(plan(ns("kube-system"), AppShape::NodeAgent, "calico-node", 0), false);
  b_.deployment(plan(ns("kube-system"), AppShape::CpuService, "coredns", 0), coredns);
  b_.daemon_set(plan(ns("gpu-operator"), AppShape::NodeAgent, "nvidia-device-plugin-daemonset", 0), true);
  b_.daemon_set(plan(ns("gpu-operator"), AppShape::NodeAgent, "nvidia-dcgm-exporter", 0), true);
  b_.deployment(plan(ns("gpu-operator"), AppShape::CpuService, "gpu-operator", 0), 1);
  b_.daemon_set(plan(ns("monitoring"), AppShape::NodeAgent, "node-exporter", 0), false);
  b_.stateful_set(plan(ns("monitoring"), AppShape::CpuService, "prometheus-k8s", 0), 2);
  b_.deployment(plan(ns("monitoring"), AppShape::CpuService, "kube-state-metrics", 0), 1);
}

void Planner::training_namespace(const Namespace& ns, const Tenant& t) {
  const int r = rng_.between(0, 99);
  switch (t.kind) {
    case TenantKind::Training:
      if (r < 45)
        return b_.pytorch_job(plan(ns, AppShape::Trainer, rng_.pick(kTrainers), 8),
                              rng_.pick(std::vector<int>{1, 3, 3, 7, 7, 15, 15, 31}), rng_.chance(0.15));
      if (r < 65) return b_.cron_job(plan(ns, AppShape::Batch, rng_.pick(kCron), 1), 3, rng_.chance(0.3), 1);
      return b_.job(plan(ns, AppShape::Batch, rng_.pick(kBatch), rng_.chance(0.5) ? 1 : 0), rng_.between(2, 16),
                    rng_.chance(0.3));
    case TenantKind::Inference:
      if (r < 40)
        return b_.pytorch_job(plan(ns, AppShape::Trainer, rng_.pick(kTrainers), 4), rng_.pick(std::vector<int>{1, 1, 3}),
                              rng_.chance(0.15));
      if (r < 70) return b_.cron_job(plan(ns, AppShape::Batch, rng_.pick(kCron), 1), 3, rng_.chance(0.3), 1);
      return b_.job(plan(ns, AppShape::Batch, rng_.pick(kBatch), 1), rng_.between(1, 8), rng_.chance(0.3));
    case TenantKind::Research:
      if (r < 30)
        return b_.pytorch_job(plan(ns, AppShape::Trainer, rng_.pick(kTrainers), 1), rng_.pick(std::vector<int>{1, 3}),
                              rng_.chance(0.15));
      if (r < 50) return b_.cron_job(plan(ns, AppShape::Batch, rng_.pick(kCron), 1), 3, rng_.chance(0.3), 1);
      return b_.job(plan(ns, AppShape::Batch, rng_.pick(kBatch), 1), rng_.between(1, 8), rng_.chance(0.3));
  }
}

void Planner::serving_namespace(const Namespace& ns, const Tenant& t) {
  const int r = rng_.between(0, 99);
  switch (t.kind) {
    case TenantKind::Training:
      if (r < 75)
        return b_.deployment(plan(ns, AppShape::ModelServer, rng_.pick(kModels), rng_.between(1, 2)), rng_.between(2, 12));
      return b_.deployment(plan(ns, AppShape::CpuService, rng_.pick(kServices), 0), rng_.between(2, 4));
    case TenantKind::Inference:
      if (r < 60)
        return b_.deployment(plan(ns, AppShape::ModelServer, rng_.pick(kModels), rng_.pick(std::vector<int>{1, 1, 2, 4})),
                             rng_.pick(std::vector<int>{4, 8, 8, 16, 16, 32, 64}));
      if (r < 75) return b_.stateful_set(plan(ns, AppShape::CpuService, "vector-db", 0), rng_.between(3, 6));
      return b_.deployment(plan(ns, AppShape::CpuService, rng_.pick(kServices), 0), rng_.between(2, 10));
    case TenantKind::Research:
      if (r < 80) return b_.deployment(plan(ns, AppShape::ModelServer, rng_.pick(kModels), 1), rng_.between(1, 4));
      return b_.deployment(plan(ns, AppShape::CpuService, rng_.pick(kServices), 0), rng_.between(1, 2));
  }
}

void Planner::dev_namespace(const Namespace& ns) {
  const int r = rng_.between(0, 99);
  if (r < 60) return b_.notebook(plan(ns, AppShape::Notebook, "nb-" + rng_.pick(kUsers), rng_.chance(0.8) ? 1 : 0));
  if (r < 80) return b_.job(plan(ns, AppShape::Batch, rng_.pick(kBatch), 1), rng_.between(1, 2), rng_.chance(0.5));
  b_.deployment(plan(ns, AppShape::CpuService, "tensorboard", 0), 1);
}

void Planner::platform_namespace(const Namespace& ns) {
  const int r = rng_.between(0, 99);
  if (r < 50) return b_.deployment(plan(ns, AppShape::CpuService, rng_.pick(kServices), 0), rng_.between(2, 8));
  if (r < 75) return b_.cron_job(plan(ns, AppShape::Batch, rng_.pick(kCron), 0), 3, rng_.chance(0.3), 1);
  b_.stateful_set(plan(ns, AppShape::CpuService, "controller", 0), rng_.between(1, 3));
}

void Planner::next_workload(const Namespace& ns) {
  if (ns.tenant < 0) return platform_namespace(ns);
  const Tenant& t = tenants()[static_cast<size_t>(ns.tenant)];
  switch (ns.role) {
    case NamespaceRole::Train: return training_namespace(ns, t);
    case NamespaceRole::Serve: return serving_namespace(ns, t);
    default: return dev_namespace(ns);
  }
}

}  // namespace

GeneratedCluster generate_cluster(long pods, uint64_t seed) {
  ClusterBuilder builder(pods, seed);
  Planner planner(builder);
  planner.system_workloads();
  while (builder.budget() > 0)
    for (const Namespace& ns : namespaces()) {
      if (builder.budget() <= 0) break;
      if (ns.role != NamespaceRole::System) planner.next_workload(ns);
    }
  return builder.finish();
}

}  // namespace gpu_admission::bench::audit
