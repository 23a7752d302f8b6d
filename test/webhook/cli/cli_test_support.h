// Running the real gpu-admission binary from tests: arguments, working directory and standard
// input in; exit code, stdout and stderr out.
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include "test_paths.h"

namespace cli_test {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs gpu-admission with `args` in `cwd` (empty: ours), stdin from `stdin_file`; captures stdout,
// stderr and the exit code.
inline CliRun run_cli(const std::vector<std::string>& args, const std::string& cwd = {},
               const std::string& stdin_file = "/dev/null") {
  CliRun r;
  char out_name[] = "/tmp/gpa-cli-out-XXXXXX";
  char err_name[] = "/tmp/gpa-cli-err-XXXXXX";
  int out_fd = mkstemp(out_name);
  int err_fd = mkstemp(err_name);
  REQUIRE(out_fd >= 0);
  REQUIRE(err_fd >= 0);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(test_paths::binary()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    int in_fd = open(stdin_file.c_str(), O_RDONLY);
    if (in_fd < 0) _exit(126);
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    execv(test_paths::binary(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(out_fd);
  close(err_fd);
  r.out = slurp(out_name);
  r.err = slurp(err_name);
  unlink(out_name);
  unlink(err_name);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

inline std::string describe(const CliRun& r) {
  return "exit " + std::to_string(r.code) + "\n--- stdout ---\n" + r.out + "\n--- stderr ---\n" + r.err;
}

// A file (pod.yaml) in a fresh temporary folder, removed with it.
struct TempFile {
  std::filesystem::path dir, path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/gpa-cli-XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    dir = name;
    path = dir / "pod.yaml";
    std::ofstream(path) << text;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

// A fresh temporary folder for several files (paths inside it created as needed), removed with it.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char name[] = "/tmp/gpa-cli-dir-XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    path = name;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name, const std::string& text) const {
    std::filesystem::path p = path / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
};

}  // namespace cli_test
