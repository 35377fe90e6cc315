// A worker's log rotated while the worker keeps its O_APPEND descriptor: the file stays within
// its bound, the rotated bytes are in LOG.1 … LOG.KEEP in order, at most KEEP of them are kept,
// the writer's next lines land at the new end (no hole of zeros), and — where the file system
// collapses ranges (ext4, XFS; the test says which it saw) — a writer appending at full speed
// during rotations loses no line.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "common/log_rotation.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using vigil::LogRotated;
using vigil::LogRotationLimits;
using vigil::rotate_log_if_large;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Line N, 64 bytes with its newline.
std::string line(int n) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "camera porch: line %08d ...................................\n", n);
  return std::string(buf).substr(0, 63) + "\n";
}

struct Writer {
  int fd;
  int next = 0;
  explicit Writer(const fs::path& p) : fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640)) {
    REQUIRE(fd >= 0);
  }
  ~Writer() { ::close(fd); }
  void lines(int count) {
    std::string text;
    for (int i = 0; i < count; ++i) text += line(next++);
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  }
};

// The lines of TEXT must be FIRST, FIRST+1, …; returns the one after the last.
int check_consecutive(const std::string& text, int first) {
  REQUIRE(text.size() % 64 == 0);
  for (std::size_t at = 0; at < text.size(); at += 64) {
    REQUIRE(text.substr(at, 64) == line(first));
    ++first;
  }
  return first;
}

}  // namespace

TEST_CASE("a log within its bound is left alone; a missing one is no error", "[log_rotation]") {
  vigil::test::TempDir dir("log-rotation");
  const auto log = dir.path() / "ingest-worker-0.log";
  CHECK(rotate_log_if_large(log, {}).outcome == LogRotated::no);
  Writer w(log);
  w.lines(100);
  const auto r = rotate_log_if_large(log, LogRotationLimits{.max_bytes = 6400, .keep = 2});
  CHECK(r.outcome == LogRotated::no);
  CHECK(fs::file_size(log) == 6400);
  CHECK_FALSE(fs::exists(dir.path() / "ingest-worker-0.log.1"));
}

TEST_CASE("a log past its bound moves to LOG.1 and the writer goes on at the new end", "[log_rotation]") {
  vigil::test::TempDir dir("log-rotation");
  const auto log = dir.path() / "ingest-worker-0.log";
  Writer w(log);
  w.lines(1000);  // 64,000 bytes
  const auto r = rotate_log_if_large(log, LogRotationLimits{.max_bytes = 16384, .keep = 3});
  INFO(r.error);
  REQUIRE((r.outcome == LogRotated::lossless || r.outcome == LogRotated::truncated));
  const auto rotated = read_all(dir.path() / "ingest-worker-0.log.1");
  CHECK(rotated.size() == r.moved_bytes);
  // Whatever stayed (less than a block, lossless) is the continuation of LOG.1.
  const auto kept = read_all(log);
  CHECK(kept.size() < 16384);
  CHECK(rotated + kept == [] {
    std::string all;
    for (int i = 0; i < 1000; ++i) all += line(i);
    return all;
  }());
  // The writer's descriptor appends after what is there now: no hole.
  w.lines(10);
  const auto after = read_all(log);
  CHECK(after.size() == kept.size() + 640);
  CHECK(after.find('\0') == std::string::npos);
  CHECK(after.substr(after.size() - 64) == line(1009));
}

TEST_CASE("at most KEEP rotated files stay, newest in LOG.1, in order", "[log_rotation]") {
  vigil::test::TempDir dir("log-rotation");
  const auto log = dir.path() / "w.log";
  const LogRotationLimits limits{.max_bytes = 8192, .keep = 2};
  Writer w(log);
  for (int round = 0; round < 6; ++round) {
    w.lines(300);  // 19,200 bytes each round
    const auto r = rotate_log_if_large(log, limits);
    INFO(r.error);
    REQUIRE((r.outcome == LogRotated::lossless || r.outcome == LogRotated::truncated));
  }
  CHECK(fs::exists(dir.path() / "w.log.1"));
  CHECK(fs::exists(dir.path() / "w.log.2"));
  CHECK_FALSE(fs::exists(dir.path() / "w.log.3"));
  // LOG.2, LOG.1, LOG: one run of consecutive lines ending with the last one written.
  const auto text = read_all(dir.path() / "w.log.2") + read_all(dir.path() / "w.log.1") + read_all(log);
  REQUIRE(text.size() % 64 == 0);
  const int first = 1800 - static_cast<int>(text.size() / 64);
  CHECK(first > 0);  // the oldest rotations were dropped
  CHECK(check_consecutive(text, first) == 1800);
  // Bounded: KEEP files of at most one round each, plus LOG under its bound.
  std::uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) total += fs::file_size(e.path());
  CHECK(total <= 3 * 19200 + 8192);
}

TEST_CASE("a writer appending during rotations loses no line where ranges collapse", "[log_rotation]") {
  vigil::test::TempDir dir("log-rotation");
  const auto log = dir.path() / "busy.log";
  const LogRotationLimits limits{.max_bytes = 32768, .keep = 1};
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::atomic<bool> write_failed{false};
  Writer w(log);
  std::thread writer([&] {  // no Catch2 assertion off the test's thread
    while (!stop.load()) {
      const auto text = line(written.load());
      if (::write(w.fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
        write_failed = true;
        return;
      }
      written.fetch_add(1);
    }
  });
  // Everything rotated out, in order, collected from LOG.1 after each rotation (keep 1: it is
  // replaced by the next one).
  std::string rotated_out;
  bool all_lossless = true;
  int rotations = 0;
  while (rotations < 20) {
    const auto r = rotate_log_if_large(log, limits);
    INFO(r.error);
    REQUIRE(r.outcome != LogRotated::failed);
    if (r.outcome == LogRotated::no) continue;  // not yet past the bound: the writer runs on
    ++rotations;
    all_lossless = all_lossless && r.outcome == LogRotated::lossless;
    rotated_out += read_all(dir.path() / "busy.log.1");
  }
  stop = true;
  writer.join();
  REQUIRE_FALSE(write_failed.load());
  const auto text = rotated_out + read_all(log);
  CHECK(text.find('\0') == std::string::npos);
  if (all_lossless) {
    // Every line the writer wrote, exactly once, in order.
    CHECK(check_consecutive(text, 0) == written.load());
  } else {
    WARN("this file system cannot collapse a range: rotation truncated, lines written during it may be lost");
  }
}
