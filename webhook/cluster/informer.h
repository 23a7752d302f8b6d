// List + watch of one resource kept in an InformerStore: a paged list
// (`limit`/`continue`), then a watch from its resourceVersion with bookmarks; after `410 Gone`
// (HTTP 410, an ERROR event with code 410, or an expired continue token) a fresh list; after a
// cut or an error, a reconnect with capped exponential backoff and jitter (and a fresh list
// after a line that is not a watch event or is over-long). An object that cannot be used (not
// decodable, no name) is skipped, logged and counted: it never ends a list or a watch. One
// thread per informer; stop() cancels the stream in progress and joins. Every (re)sync and every
// failure is logged as one JSON line (failures throttled) and counted.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "webhook/cluster/kube_client.h"
#include "webhook/cluster/watch_decoder.h"
#include "webhook/ops/logger.h"
#include "webhook/ops/metrics.h"

namespace gpu_admission::webhook::cluster {

// Where an informer puts what it lists and watches. Called from the informer's thread only.
// add_listed and apply get objects that have a metadata.name; they return why the object could
// not be decoded ("" when it could), and keep what they decided for it (an object that cannot be
// used answers "not found"); the informer logs and counts the problem and goes on. An object
// that cannot be used never stops a list or a watch.
class InformerStore {
 public:
  virtual ~InformerStore() = default;
  virtual void begin_list() = 0;  // a list starts (drop a half-done one)
  virtual std::string add_listed(simdjson::dom::element object, const ObjectMeta& meta) = 0;
  virtual void end_list() = 0;    // the list is complete: it replaces everything
  virtual std::string apply(EventType type, simdjson::dom::element object, const ObjectMeta& meta) = 0;
};

struct InformerOptions {
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30'000};
  int watch_timeout_seconds = 300;     // asked of the server (timeoutSeconds); randomized up to 2x
  size_t page_size = 500;              // list `limit`
  // A list page may be this large at most. A larger one is asked for again with half the limit
  // (down to one object, at most ~3 MiB: the API server's request limit), so a page of huge
  // objects (up to ~1.5 MiB each) makes a list slower, never impossible. Parsing a page takes
  // a few times its size in memory.
  size_t max_page_bytes = 64u << 20;
  std::chrono::milliseconds request_timeout{30'000};  // each list page
  std::chrono::milliseconds log_throttle{10'000};     // at most one failure line per this, per resource
};

// Objects of one resource that cannot be used (a list item or a watched object that is not a
// JSON object, has no metadata.name or cannot be decoded, or a fetched claim that cannot): each
// is counted in gpu_admission_cluster_decode_errors_total{resource} and logged as one JSON line
// naming the resource, the collection's URL (`endpoint`), the object and the error, at most one
// line per `throttle` (the next line says how many were not logged). Thread-safe: the informer's thread and admission's GET
// fallback both report.
class DecodeErrorLog {
 public:
  DecodeErrorLog(std::string resource, std::string endpoint, std::chrono::milliseconds throttle, Metrics* metrics,
                 Logger* logger)
      : resource_(std::move(resource)),
        endpoint_(std::move(endpoint)),
        throttle_(throttle),
        metrics_(metrics),
        logger_(logger) {}
  void report(std::string_view namespace_name, std::string_view name, std::string_view error);
  unsigned long long count() const { return count_.load(); }

 private:
  const std::string resource_;
  const std::string endpoint_;
  const std::chrono::milliseconds throttle_;
  Metrics* metrics_;
  Logger* logger_;
  std::atomic<unsigned long long> count_{0};
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_log_{};
  unsigned long long suppressed_ = 0;
};

class Informer {
 public:
  // `resource` names it in metrics and logs; `list_path` is the collection ("/api/v1/namespaces").
  Informer(std::string resource, std::string list_path, const KubeClient& client, InformerStore& store,
           InformerOptions options, Metrics* metrics, Logger* logger);
  ~Informer();  // stop()
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void start();
  void stop();
  // The first complete list has been stored (stays true after; serving goes on on the last state).
  bool synced() const { return synced_.load(std::memory_order_acquire); }
  const std::string& resource() const { return resource_; }
  unsigned long long restarts() const { return restarts_.load(); }
  DecodeErrorLog& decode_errors() { return decode_errors_; }

 private:
  enum class WatchEnd { Closed, Expired, Disconnected, Error, Invalid, Stopped };
  void run();
  bool list(std::string& resource_version, std::string& detail, bool& expired);
  WatchEnd watch(std::string& resource_version, std::string& detail);
  // Counts a restart and logs it (throttled) with the URL of the request that failed.
  void count_restart(const char* reason, const std::string& detail);
  void trim_parser();  // frees what the parser grew to for a large document
  bool pause(std::chrono::milliseconds duration);  // false when stopping
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }

  const std::string resource_;
  const std::string list_path_;
  const KubeClient& client_;
  InformerStore& store_;
  const InformerOptions options_;
  Metrics* metrics_;
  Logger* logger_;

  simdjson::dom::parser parser_;  // list pages and watch events (decode_* give it kMaxDocumentDepth)
  DecodeErrorLog decode_errors_;
  std::atomic<bool> synced_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<unsigned long long> restarts_{0};
  StreamCanceller canceller_;
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  std::string failed_endpoint_;  // the URL of the last list page or watch asked for
  std::chrono::steady_clock::time_point last_failure_log_{};
  unsigned long long suppressed_logs_ = 0;
};

// Percent-encodes a query parameter value.
std::string url_encode(std::string_view text);

}  // namespace gpu_admission::webhook::cluster
