// The real `gpu-admission` binary as a child process for the cluster tests (serve against the
// fake API server): its stderr in a file, its JSON log lines waited for, killed at the end of
// the scope.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <httplib.h>

#include "cluster_test_support.h"
#include "webhook/spawn_binary.h"

namespace cluster_test {

// The binary as a child process, stderr to `log`; killed at the end of the scope.
class Child {
 public:
  Child(std::vector<std::string> args, const std::string& log)
      : pid_(webhook_test::spawn_binary(std::move(args), log)), log_(log) {}
  // With `environment` ("NAME=value") as its whole environment.
  Child(std::vector<std::string> args, const std::string& log, const std::vector<std::string>& environment)
      : pid_(webhook_test::spawn_binary(std::move(args), log, &environment)), log_(log) {}
  ~Child() {
    if (pid_ > 0 && exit_code_ == -2) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  int wait_exit(std::chrono::milliseconds timeout) {
    eventually([&] {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return exit_code_ != -2;
    }, timeout);
    return exit_code_;
  }
  std::string log() const {
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // A field of the first log line containing `message`, waiting for it.
  Json log_line(const std::string& message, std::chrono::milliseconds timeout = 10s) {
    Json found;
    eventually([&] {
      std::istringstream lines(log());
      for (std::string line; std::getline(lines, line);) {
        if (line.find(message) == std::string::npos || line.empty() || line.front() != '{') continue;
        found = Json::parse(line, nullptr, false);
        return !found.is_discarded();
      }
      return false;
    }, timeout);
    return found;
  }

 private:
  pid_t pid_ = -1;
  int exit_code_ = -2;
  std::string log_;
};

// GET /metrics of a serving child's metrics port ("" when it does not answer).
inline std::string scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  auto result = client.Get("/metrics");
  return result ? result->body : "";
}

}  // namespace cluster_test
