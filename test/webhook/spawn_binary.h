// Starting the real `gpu-admission` binary (test_paths::binary()) as a child process for the
// tests that run it as a server: stdout to /dev/null, stderr to a log file, every signal at its
// default disposition and none blocked (so SIGTERM and SIGKILL behave as under a kubelet).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>

#include <string>
#include <vector>
#include "test_paths.h"

extern char** environ;

namespace webhook_test {

// The child's pid, or -1 when it could not be started. `environment` ("NAME=value" entries):
// the child's whole environment instead of ours.
inline pid_t spawn_binary(std::vector<std::string> args, const std::string& log,
                          const std::vector<std::string>* environment = nullptr) {
  args.insert(args.begin(), test_paths::binary());
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> envp;
  if (environment != nullptr) {
    for (const std::string& entry : *environment) envp.push_back(const_cast<char*>(entry.c_str()));
    envp.push_back(nullptr);
  }
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), environment ? envp.data() : environ) != 0)
    pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  return pid;
}

}  // namespace webhook_test
