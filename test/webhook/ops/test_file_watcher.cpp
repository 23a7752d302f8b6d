// FileWatcher (webhook/ops/file_watcher.h): rename-over, the Kubernetes ..data symlink swap, in-place
// writes, touch without change, deletion and re-creation; and the watcher thread.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "webhook/server/server_test_support.h"
#include "webhook/ops/file_watcher.h"

namespace fs = std::filesystem;
using gpu_admission::webhook::FileWatcher;
using server_test::TempDir;
using server_test::write_file;

namespace {

// The kubelet's AtomicWriter: files live in a timestamped directory, `..data` points at it, and
// each visible name is a symlink through `..data`. An update writes a new directory and renames
// a new `..data` symlink over the old one.
void kubelet_publish(const fs::path& dir, const std::string& name, const std::string& text, int generation) {
  const fs::path version = dir / ("..2026_01_01_00_00_0" + std::to_string(generation));
  fs::create_directory(version);
  write_file(version / name, text);
  const fs::path temporary = dir / "..data_tmp";
  fs::remove(temporary);
  fs::create_directory_symlink(version.filename(), temporary);
  fs::rename(temporary, dir / "..data");
  if (!fs::is_symlink(dir / name)) fs::create_symlink(fs::path("..data") / name, dir / name);
}

}  // namespace

TEST_CASE("file watcher: rename-over, in-place write, touch, delete and re-create", "[server][watch]") {
  TempDir dir;
  const fs::path file = dir.path / "policy.yaml";
  write_file(file, "one");
  int changes = 0;
  FileWatcher watcher;
  watcher.watch({file.string()}, [&] { ++changes; });

  watcher.poll_now();
  CHECK(changes == 0);

  write_file(dir.path / "next.yaml", "two");
  fs::rename(dir.path / "next.yaml", file);
  watcher.poll_now();
  CHECK(changes == 1);

  write_file(file, "three, written in place");
  watcher.poll_now();
  CHECK(changes == 2);

  // Same bytes, new mtime: no change.
  fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(5));
  watcher.poll_now();
  CHECK(changes == 2);

  fs::remove(file);
  watcher.poll_now();
  CHECK(changes == 3);
  watcher.poll_now();
  CHECK(changes == 3);
  write_file(file, "four");
  watcher.poll_now();
  CHECK(changes == 4);
}

TEST_CASE("file watcher: the Kubernetes ..data symlink swap of a mounted ConfigMap or Secret", "[server][watch]") {
  TempDir dir;
  kubelet_publish(dir.path, "tls.crt", "cert v1", 1);
  kubelet_publish(dir.path, "tls.key", "key v1", 1);
  int changes = 0;
  FileWatcher watcher;
  watcher.watch({(dir.path / "tls.crt").string(), (dir.path / "tls.key").string()}, [&] { ++changes; });

  // Both files of the group change in one swap: one notification.
  const fs::path version = dir.path / "..2026_01_01_00_00_02";
  fs::create_directory(version);
  write_file(version / "tls.crt", "cert v2");
  write_file(version / "tls.key", "key v2");
  fs::create_directory_symlink(version.filename(), dir.path / "..data_tmp");
  fs::rename(dir.path / "..data_tmp", dir.path / "..data");
  watcher.poll_now();
  CHECK(changes == 1);
  watcher.poll_now();
  CHECK(changes == 1);

  // A swap to identical content (another key of the Secret changed): nothing to reload.
  kubelet_publish(dir.path, "tls.crt", "cert v2", 3);
  fs::copy_file(version / "tls.key", dir.path / "..2026_01_01_00_00_03" / "tls.key");
  watcher.poll_now();
  CHECK(changes == 1);
}

TEST_CASE("file watcher: the thread calls back within a few intervals and stops promptly", "[server][watch]") {
  TempDir dir;
  const fs::path file = dir.path / "p.yaml";
  write_file(file, "a");
  std::atomic<int> changes{0};
  FileWatcher watcher(std::chrono::milliseconds(50));
  watcher.watch({file.string()}, [&] {
    ++changes;
    throw std::runtime_error("a failing callback must not end the watcher");
  });
  watcher.start();
  write_file(dir.path / "tmp", "b");
  fs::rename(dir.path / "tmp", file);
  CHECK(server_test::wait_until([&] { return changes == 1; }, std::chrono::seconds(5)));
  write_file(dir.path / "tmp", "c");
  fs::rename(dir.path / "tmp", file);
  CHECK(server_test::wait_until([&] { return changes == 2; }, std::chrono::seconds(5)));
  const auto start = std::chrono::steady_clock::now();
  watcher.stop();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
}
