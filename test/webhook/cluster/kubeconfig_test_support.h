// Helpers for the kubeconfig and exec-plugin tests: kubeconfigs built as JSON trees (JSON is
// YAML, so kubectl reads them too), exec plugins written as small shell scripts, the binary run
// with an environment of its own, and kubectl as the reference client (skipped where it is not
// installed).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cluster_test_support.h"
#include "test_paths.h"

extern char** environ;

namespace cluster_test {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A kubeconfig under construction.
struct Kubeconfig {
  Json config = {{"apiVersion", "v1"}, {"kind", "Config"}, {"clusters", Json::array()},
                 {"users", Json::array()}, {"contexts", Json::array()}};
  Kubeconfig& cluster(const std::string& name, Json cluster) {
    config["clusters"].push_back({{"name", name}, {"cluster", std::move(cluster)}});
    return *this;
  }
  Kubeconfig& user(const std::string& name, Json user) {
    config["users"].push_back({{"name", name}, {"user", std::move(user)}});
    return *this;
  }
  Kubeconfig& context(const std::string& name, const std::string& cluster, const std::string& user) {
    config["contexts"].push_back({{"name", name}, {"context", {{"cluster", cluster}, {"user", user}}}});
    return *this;
  }
  Kubeconfig& current(const std::string& name) {
    config["current-context"] = name;
    return *this;
  }
  void write(const std::string& path) const { write_text(path, config.dump(2)); }
};

// The fake server's cluster entry, its CA written to `ca_file`.
inline Json fake_cluster(const FakeApiServer& server, const std::string& ca_file) {
  write_text(ca_file, server.ca_pem());
  return {{"server", server.server_url()}, {"certificate-authority", ca_file}};
}

// An exec user: `command`, apiVersion v1 (interactiveMode Never) unless told otherwise, `env`.
inline Json exec_user(const std::string& command, const std::vector<std::pair<std::string, std::string>>& env = {},
                      const std::string& api_version = "client.authentication.k8s.io/v1") {
  Json exec = {{"apiVersion", api_version}, {"command", command}, {"interactiveMode", "Never"}};
  for (const auto& [name, value] : env) exec["env"].push_back({{"name", name}, {"value", value}});
  return {{"exec", exec}};
}

// An executable shell script `name` in `dir` with `body`; its path.
inline std::string write_script(const TempDir& dir, const std::string& name, const std::string& body) {
  const std::string path = dir.file(name);
  write_text(path, "#!/bin/sh\n" + body);
  ::chmod(path.c_str(), 0755);
  return path;
}

// A token plugin. Each run appends to `runs` beside it, keeps its KUBERNETES_EXEC_INFO in
// exec-info and its args in args, and answers token tok-N (N: the run; $FIXED_TOKEN when set)
// expiring in $EXPIRES_IN seconds (default 3600), in the apiVersion KUBERNETES_EXEC_INFO names
// (or $ANSWER_VERSION), as real plugins do. $SAY goes to its stderr.
inline std::string write_token_plugin(const TempDir& dir, const std::string& name = "token-plugin") {
  return write_script(dir, name, R"sh(here=$(dirname "$0")
echo run >> "$here/runs"
n=$(wc -l < "$here/runs" | tr -d ' ')
printf '%s' "$KUBERNETES_EXEC_INFO" > "$here/exec-info"
printf '%s\n' "$@" > "$here/args"
[ -n "$SAY" ] && echo "$SAY" >&2
version=$(printf '%s' "$KUBERNETES_EXEC_INFO" | sed -n 's/.*"apiVersion":"\([^"]*\)".*/\1/p')
expires=$(date -u -d "+${EXPIRES_IN:-3600} seconds" +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' \
  "${ANSWER_VERSION:-$version}" "${FIXED_TOKEN:-tok-$n}" "$expires"
)sh");
}

// How often a plugin in `dir` has run.
inline int plugin_runs(const TempDir& dir) {
  std::istringstream lines(read_text(dir.file("runs")));
  int runs = 0;
  for (std::string line; std::getline(lines, line);) ++runs;
  return runs;
}

// Our environment with `set` over it and the names in `unset` removed ("NAME=value" entries).
inline std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& set,
                                                 const std::vector<std::string>& unset = {}) {
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const std::string name = text.substr(0, text.find('='));
    bool dropped = false;
    for (const auto& [key, value] : set) dropped = dropped || key == name;
    for (const auto& key : unset) dropped = dropped || key == name;
    if (!dropped) out.push_back(text);
  }
  for (const auto& [key, value] : set) out.push_back(key + "=" + value);
  return out;
}

struct BinaryRun {
  int code = -1;
  std::string out, err;
};

// The gpu-admission binary with `args` and exactly `environment`; stdin from /dev/null.
inline BinaryRun run_binary(const std::vector<std::string>& args, const std::vector<std::string>& environment) {
  TempDir dir;
  std::vector<std::string> argv_text = {test_paths::binary()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (auto& arg : argv_text) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text = environment;
  for (auto& entry : env_text) envp.push_back(entry.data());
  envp.push_back(nullptr);
  const std::string out = dir.file("out"), err = dir.file("err");
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int in_fd = ::open("/dev/null", O_RDONLY);
    const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in_fd < 0 || out_fd < 0 || err_fd < 0) ::_exit(126);
    ::dup2(in_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  BinaryRun run;
  int status = 0;
  if (pid > 0 && ::waitpid(pid, &status, 0) == pid) run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = read_text(out);
  run.err = read_text(err);
  return run;
}

inline bool have_kubectl() { return std::system("kubectl version --client >/dev/null 2>&1") == 0; }

struct KubectlRun {
  int status = -1;
  std::string output;  // stdout and stderr
};

// kubectl `args` with HOME=`home` (its cache goes there), `env` ("NAME=value ...") in front,
// stdin from /dev/null (no terminal, as serve and audit have none).
inline KubectlRun kubectl(const std::string& args, const std::string& home, const std::string& env = "") {
  const std::string out = home + "/kubectl.out";
  const std::string command = "cd " + home + " && HOME=" + home + " " + env + " kubectl --request-timeout=5s " + args +
                              " </dev/null >" + out + " 2>&1";
  KubectlRun run;
  run.status = std::system(command.c_str());
  run.output = read_text(out);
  return run;
}

}  // namespace cluster_test
