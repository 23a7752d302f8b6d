// The list/watch loop of one resource (see informer.h).
#include "webhook/cluster/informer.h"

#include <algorithm>
#include <random>

namespace gpu_admission::webhook::cluster {
namespace {

constexpr auto kMinHealthyWatch = std::chrono::seconds(30);  // a watch that lasted this long resets the backoff
constexpr auto kMinCleanWatch = std::chrono::seconds(1);     // a clean end sooner than this counts as an error
constexpr int kMaxContinueRestarts = 3;
// A parser keeps the memory it grew to for its largest document (several times its size); past
// this much it is given back after the page or the event.
constexpr size_t kKeptParserCapacity = 4u << 20;

std::chrono::milliseconds jittered(std::chrono::milliseconds base) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  std::uniform_real_distribution<double> factor(0.5, 1.0);
  return std::chrono::milliseconds(static_cast<long long>(static_cast<double>(base.count()) * factor(random)));
}

}  // namespace

std::string url_encode(std::string_view text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

void DecodeErrorLog::report(std::string_view namespace_name, std::string_view name, std::string_view error) {
  count_.fetch_add(1);
  if (metrics_ != nullptr) metrics_->count_cluster_decode_error(resource_);
  if (logger_ == nullptr) return;
  unsigned long long suppressed = 0;
  {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (last_log_.time_since_epoch().count() != 0 && now - last_log_ < throttle_) {
      ++suppressed_;
      return;
    }
    last_log_ = now;
    suppressed = suppressed_;
    suppressed_ = 0;
  }
  logger_->warn("cluster object cannot be decoded; it is left out of the cluster state (lookups of it answer "
                "not found), the watch goes on",
                {{"resource", resource_},
                 {"endpoint", endpoint_},
                 {"namespace", namespace_name},
                 {"name", name},
                 {"error", error},
                 {"suppressed", suppressed}});
}

Informer::Informer(std::string resource, std::string list_path, const KubeClient& client, InformerStore& store,
                   InformerOptions options, Metrics* metrics, Logger* logger)
    : resource_(std::move(resource)),
      list_path_(std::move(list_path)),
      client_(client),
      store_(store),
      options_(options),
      metrics_(metrics),
      logger_(logger),
      decode_errors_(resource_, client.url(list_path_), options.log_throttle, metrics, logger) {}

Informer::~Informer() { stop(); }

void Informer::start() {
  if (thread_.joinable()) return;
  if (metrics_ != nullptr) metrics_->set_cluster_synced(resource_, false);
  thread_ = std::thread([this] { run(); });
}

void Informer::stop() {
  {
    std::lock_guard lock(wake_mutex_);
    stopping_.store(true, std::memory_order_release);
  }
  wake_.notify_all();
  canceller_.cancel();
  if (thread_.joinable()) thread_.join();
}

bool Informer::pause(std::chrono::milliseconds duration) {
  std::unique_lock lock(wake_mutex_);
  wake_.wait_for(lock, duration, [&] { return stopping(); });
  return !stopping();
}

void Informer::count_restart(const char* reason, const std::string& detail) {
  restarts_.fetch_add(1);
  if (metrics_ != nullptr) {
    metrics_->count_cluster_watch_restart(resource_, reason);
    if (std::string_view(reason) != "closed") metrics_->set_cluster_synced(resource_, false);
  }
  if (logger_ == nullptr || std::string_view(reason) == "closed") return;
  const auto now = std::chrono::steady_clock::now();
  if (last_failure_log_.time_since_epoch().count() != 0 && now - last_failure_log_ < options_.log_throttle) {
    ++suppressed_logs_;
    return;
  }
  logger_->warn("cluster watch failed; serving on the last known state and retrying",
                {{"resource", resource_},
                 {"endpoint", failed_endpoint_},
                 {"reason", reason},
                 {"error", detail},
                 {"suppressed", suppressed_logs_}});
  last_failure_log_ = now;
  suppressed_logs_ = 0;
}

void Informer::trim_parser() {
  if (parser_.capacity() > kKeptParserCapacity) parser_ = simdjson::dom::parser();
}

bool Informer::list(std::string& resource_version, std::string& detail, bool& expired) {
  store_.begin_list();
  std::string continue_token;
  int continue_restarts = 0;
  size_t limit = std::max<size_t>(options_.page_size, 1);
  while (!stopping()) {
    std::string path = list_path_ + "?limit=" + std::to_string(limit);
    if (!continue_token.empty()) path += "&continue=" + url_encode(continue_token);
    failed_endpoint_ = client_.url(path);
    const HttpResult result = client_.get(path, options_.request_timeout, options_.max_page_bytes);
    if (result.status == 410 && !continue_token.empty() && ++continue_restarts <= kMaxContinueRestarts) {
      store_.begin_list();  // the continue token expired: list again from the start
      continue_token.clear();
      expired = true;
      continue;
    }
    if (result.too_large && limit > 1) {
      // Huge objects: the same page again, fewer objects at a time (for the rest of this list).
      limit = std::max<size_t>(limit / 2, 1);
      if (logger_ != nullptr)
        logger_->warn("cluster list page too large; asking for fewer objects per page",
                      {{"resource", resource_},
                       {"endpoint", failed_endpoint_},
                       {"max_bytes", options_.max_page_bytes},
                       {"limit", limit}});
      continue;
    }
    if (!result.ok()) {
      detail = "list " + path + ": " + result.describe();
      return false;
    }
    ListPage page;
    if (const auto error = decode_list_page(parser_, result.body, page)) {
      detail = "list " + path + ": " + *error;
      trim_parser();
      return false;
    }
    for (const auto item : page.items) {
      ObjectMeta meta;
      if (!read_object_meta(item, meta)) {
        decode_errors_.report(meta.namespace_name, meta.name, object_meta_problem(item));
        continue;
      }
      if (const std::string problem = store_.add_listed(item, meta); !problem.empty())
        decode_errors_.report(meta.namespace_name, meta.name, problem);
    }
    const bool last = page.continue_token.empty();
    if (last) resource_version = std::string(page.resource_version);
    else continue_token = std::string(page.continue_token);
    trim_parser();  // nothing of the page is used after this
    if (last) {
      store_.end_list();
      return true;
    }
  }
  detail = "stopped";
  return false;
}

Informer::WatchEnd Informer::watch(std::string& resource_version, std::string& detail) {
  std::uniform_int_distribution<int> spread(options_.watch_timeout_seconds, 2 * options_.watch_timeout_seconds);
  thread_local std::mt19937 random{std::random_device{}()};
  const int timeout_seconds = spread(random);
  const std::string path = list_path_ + "?watch=1&allowWatchBookmarks=true&resourceVersion=" +
                           url_encode(resource_version) + "&timeoutSeconds=" + std::to_string(timeout_seconds);
  failed_endpoint_ = client_.url(path);
  LineSplitter splitter;
  WatchEnd end = WatchEnd::Closed;
  const auto on_line = [&](std::string_view line) {
    WatchEvent event;
    if (const auto error = decode_watch_event(parser_, line, event)) {
      detail = *error;
      end = WatchEnd::Invalid;
      trim_parser();
      return false;
    }
    if (event.type == EventType::Error) {
      detail = "ERROR event " + std::to_string(event.error_code) + ": " + std::string(event.error_message);
      end = event.error_code == 410 ? WatchEnd::Expired : WatchEnd::Error;
      return false;
    }
    if (!event.problem.empty()) {
      decode_errors_.report(event.meta.namespace_name, event.meta.name, event.problem);
    } else if (event.type != EventType::Bookmark) {
      if (const std::string problem = store_.apply(event.type, event.object, event.meta); !problem.empty())
        decode_errors_.report(event.meta.namespace_name, event.meta.name, problem);
    }
    if (!event.meta.resource_version.empty()) resource_version = std::string(event.meta.resource_version);
    trim_parser();  // the event's elements are not used after this
    return true;
  };
  // A watch that opens resumes from resource_version: the cache is in step again (after a
  // broken watch, not only after the next list).
  const auto on_status = [&](int status) {
    if (status == 200 && metrics_ != nullptr) metrics_->set_cluster_synced(resource_, true);
  };
  const HttpResult result = client_.stream(
      path, std::chrono::seconds(timeout_seconds + 30),
      [&](const char* data, size_t size) {
        if (!splitter.feed(data, size, on_line)) {
          detail = "a watch event longer than " + std::to_string(kMaxWatchLineBytes) + " bytes";
          end = WatchEnd::Invalid;
        }
        return end == WatchEnd::Closed && !stopping();
      },
      &canceller_, on_status);
  if (stopping()) return WatchEnd::Stopped;
  if (end != WatchEnd::Closed) return end;
  if (result.status == 410) return detail = result.describe(), WatchEnd::Expired;
  if (result.status != 200) return detail = result.describe(), WatchEnd::Error;
  if (!result.error.empty()) return detail = result.error, WatchEnd::Disconnected;
  if (splitter.pending() > 0) return detail = "the stream ended inside an event", WatchEnd::Disconnected;
  return WatchEnd::Closed;
}

void Informer::run() {
  auto backoff = options_.initial_backoff;
  bool need_list = true;
  std::string resource_version;
  std::string detail;
  const auto back_off = [&](const char* reason) {
    count_restart(reason, detail);
    const bool go_on = pause(jittered(backoff));
    backoff = std::min(backoff * 2, options_.max_backoff);
    return go_on;
  };
  while (!stopping()) {
    if (need_list) {
      const auto started = std::chrono::steady_clock::now();
      bool expired = false;
      if (!list(resource_version, detail, expired)) {
        if (stopping() || !back_off("error")) break;
        continue;
      }
      if (expired) count_restart("expired", "a list continue token expired");
      need_list = false;
      synced_.store(true, std::memory_order_release);
      if (metrics_ != nullptr) metrics_->set_cluster_synced(resource_, true);
      if (logger_ != nullptr) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        logger_->info("cluster state synced", {{"resource", resource_},
                                               {"resource_version", resource_version},
                                               {"seconds", static_cast<int64_t>(seconds * 1000) / 1000.0}});
      }
    }
    const auto started = std::chrono::steady_clock::now();
    const WatchEnd end = watch(resource_version, detail);
    if (end == WatchEnd::Stopped) break;
    const auto lasted = std::chrono::steady_clock::now() - started;
    if (lasted >= kMinHealthyWatch) backoff = options_.initial_backoff;
    if (end == WatchEnd::Closed && lasted >= kMinCleanWatch) {
      count_restart("closed", "");  // the gauge went to 1 when this watch opened (a 200)
      continue;
    }
    if (end == WatchEnd::Expired || end == WatchEnd::Invalid) need_list = true;
    const char* reason = end == WatchEnd::Expired        ? "expired"
                         : end == WatchEnd::Invalid      ? "invalid"
                         : end == WatchEnd::Disconnected ? "disconnected"
                                                         : "error";
    if (end == WatchEnd::Closed) detail = "the watch ended at once";
    if (!back_off(reason)) break;
  }
}

}  // namespace gpu_admission::webhook::cluster
