// PolicyHolder::snapshot, the request path's lock-free read of the policy in force: a reload is
// seen by the next snapshot on every thread, a thread's snapshot of one holder is never
// another holder's, and a replaced policy is released once the threads that held it move on.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "webhook/io/policy_file.h"
#include "webhook/ops/policy_holder.h"

using gpu_admission::webhook::PolicyHolder;
namespace policy = gpu_admission::policy;

namespace {
policy::PolicyPtr fresh_policy() {
  auto load = gpu_admission::webhook::load_policy_file("");
  REQUIRE(load.policy);
  return load.policy;
}
}  // namespace

TEST_CASE("policy holder: snapshot follows set() on this thread and others", "[policy-holder]") {
  PolicyHolder holder;
  CHECK(holder.snapshot() == nullptr);
  const policy::PolicyPtr first = fresh_policy();
  holder.set(first);
  CHECK(holder.snapshot() == first);
  CHECK(holder.snapshot() == first);  // unchanged: the same snapshot

  const policy::PolicyPtr second = fresh_policy();
  holder.set(second);
  CHECK(holder.snapshot() == second);
  policy::PolicyPtr seen_elsewhere;
  std::thread([&] { seen_elsewhere = holder.snapshot(); }).join();
  CHECK(seen_elsewhere == second);
}

TEST_CASE("policy holder: two holders on one thread keep their own policies", "[policy-holder]") {
  const policy::PolicyPtr a = fresh_policy(), b = fresh_policy();
  PolicyHolder one(a), two(b);
  for (int i = 0; i < 3; ++i) {
    CHECK(one.snapshot() == a);
    CHECK(two.snapshot() == b);
  }
  PolicyHolder empty;
  CHECK(empty.snapshot() == nullptr);
  CHECK(one.snapshot() == a);
}

TEST_CASE("policy holder: a replaced policy is released when this thread snapshots again", "[policy-holder]") {
  PolicyHolder holder(fresh_policy());
  std::weak_ptr<const policy::CompiledPolicy> old = holder.snapshot();
  holder.set(fresh_policy());
  CHECK_FALSE(old.expired());  // this thread's last snapshot still holds it
  holder.snapshot();
  CHECK(old.expired());
}

TEST_CASE("policy holder: readers during reloads always see a policy that was set", "[policy-holder]") {
  std::vector<policy::PolicyPtr> policies;
  for (int i = 0; i < 4; ++i) policies.push_back(fresh_policy());
  PolicyHolder holder(policies[0]);
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!done.load()) {
        const policy::PolicyPtr& p = holder.snapshot();
        if (std::find(policies.begin(), policies.end(), p) == policies.end()) ++wrong;
      }
    });
  }
  for (int i = 0; i < 2000; ++i) holder.set(policies[static_cast<size_t>(i) % policies.size()]);
  done = true;
  for (auto& t : readers) t.join();
  CHECK(wrong == 0);
  CHECK(holder.snapshot() == policies[1999 % policies.size()]);
}
