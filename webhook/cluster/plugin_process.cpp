// The plugin child process (see plugin_process.h): pipes read with poll() until both close or
// the deadline passes; the child in a process group of its own so that a timeout also ends
// whatever it started; signal dispositions reset to their defaults in the child.
#include "webhook/cluster/plugin_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace gpu_admission::webhook::cluster {
namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  int read = -1, write = -1;
  bool open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    read = fds[0];
    write = fds[1];
    return true;
  }
  void close_read() {
    if (read >= 0) ::close(read);
    read = -1;
  }
  void close_write() {
    if (write >= 0) ::close(write);
    write = -1;
  }
};

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Reads both pipes until they close, the deadline passes or stdout grows too large.
void read_output(Pipe& out, Pipe& err, Clock::time_point deadline, const ProcessOptions& options,
                 ProcessResult& result) {
  char buffer[16384];
  while (out.read >= 0 || err.read >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      result.timed_out = true;
      return;
    }
    pollfd fds[2] = {{out.read, POLLIN, 0}, {err.read, POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) return;
    for (int i = 0; i < 2 && ready > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      Pipe& pipe = i == 0 ? out : err;
      const ssize_t n = ::read(pipe.read, buffer, sizeof buffer);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        pipe.close_read();
        continue;
      }
      const size_t size = static_cast<size_t>(n);
      if (i == 0) {
        if (result.out.size() + size > options.max_stdout) {
          result.stdout_too_large = true;
          return;
        }
        result.out.append(buffer, size);
      } else {
        if (options.echo_stderr_fd >= 0) write_all(options.echo_stderr_fd, buffer, size);
        if (result.err.size() < options.max_stderr)
          result.err.append(buffer, std::min(size, options.max_stderr - result.err.size()));
      }
    }
  }
}

// Waits for the child until the deadline, then kills its group and reaps it.
void reap(pid_t pid, Clock::time_point deadline, bool kill_now, ProcessResult& result) {
  int status = 0;
  pid_t done = 0;
  while (!kill_now && (done = ::waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline)
    ::usleep(5'000);
  if (done != pid) {
    if (!kill_now) result.timed_out = true;
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    while ((done = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
  }
  if (done != pid) return;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
}

}  // namespace

ProcessResult run_process(const std::string& command, const std::vector<std::string>& args,
                          const std::vector<std::string>& environment, const ProcessOptions& options) {
  ProcessResult result;
  Pipe out, err;
  if (!out.open() || !err.open()) {
    result.spawn_error = errno;
    out.close_read(), out.close_write(), err.close_read(), err.close_write();
    return result;
  }
  std::vector<char*> argv, envp;
  argv.push_back(const_cast<char*>(command.c_str()));
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  for (const std::string& entry : environment) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write, 1);
  posix_spawn_file_actions_adddup2(&actions, err.write, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);  // no socket of ours leaks into the plugin
#endif
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, command.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  out.close_write();
  err.close_write();
  if (spawned != 0) {
    result.spawn_error = spawned;
    out.close_read();
    err.close_read();
    return result;
  }
  const auto deadline = Clock::now() + options.timeout;
  read_output(out, err, deadline, options, result);
  out.close_read();
  err.close_read();
  reap(pid, deadline, result.timed_out || result.stdout_too_large, result);
  return result;
}

}  // namespace gpu_admission::webhook::cluster
