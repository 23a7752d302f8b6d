// Running a credential plugin as a child process, never through a shell: posix_spawnp (a bare
// name is looked up on PATH), standard input from /dev/null, standard output captured up to a
// bound, standard error captured (its first bytes kept) and optionally echoed as it arrives, the
// whole run within a deadline, after which its process group is killed. Never throws.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace gpu_admission::webhook::cluster {

struct ProcessOptions {
  std::chrono::milliseconds timeout{30'000};
  size_t max_stdout = 1u << 20;   // more: killed, stdout_too_large
  size_t max_stderr = 16u << 10;  // kept; the rest is read and dropped
  int echo_stderr_fd = -1;        // >= 0: stderr is also written there as it arrives
};

struct ProcessResult {
  int spawn_error = 0;  // errno of a start that failed (ENOENT: no such command)
  int exit_code = -1;   // when it exited
  int signal = 0;       // when a signal ended it
  bool timed_out = false;
  bool stdout_too_large = false;
  std::string out, err;
  bool succeeded() const { return spawn_error == 0 && exit_code == 0 && !timed_out && !stdout_too_large; }
};

// Runs `command` with `args` (argv[0] is the command) and exactly `environment` ("NAME=value").
ProcessResult run_process(const std::string& command, const std::vector<std::string>& args,
                          const std::vector<std::string>& environment, const ProcessOptions& options);

}  // namespace gpu_admission::webhook::cluster
