// vigild rotates its ingest workers' logs (DATA/log/ingest-worker-K.log) by size: a log past the
// bound (16 MiB) when vigild starts — as one grows while cameras fail for days — is moved to
// LOG.1 at the camera manager's first poll, every byte kept in order across LOG.1 and LOG, and
// vigild says so in its log.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/support/eventually.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("vigild rotates an ingest worker's log past its size bound, keeping every line", "[camera_log]") {
  test::TempDir dir;
  const auto data = dir.path() / "data";
  const auto log = data / "log" / "ingest-worker-0.log";
  fs::create_directories(log.parent_path());
  std::string written;
  for (int i = 0; written.size() <= (17u << 20); ++i) {
    written +=
        "ts=2026-11-26T09:00:00Z level=warn msg=\"camera unreachable\" camera=porch n=" + std::to_string(i) + "\n";
  }
  std::ofstream(log, std::ios::binary) << written;

  test::VigildProcess d(data, {"--volume", (dir.path() / "vol").string(), "--volume-size", std::to_string(256 << 20)});
  REQUIRE(d.wait_ready());
  const auto rotated = log.string() + ".1";
  REQUIRE(test::eventually([&] { return d.output().find("ingest worker log rotated") != std::string::npos; }, 30s));
  CHECK(fs::file_size(log) < (16u << 20));
  CHECK(slurp(rotated) + slurp(log) == written);
  CHECK_THAT(d.output(), ContainsSubstring(log.string()));
  CHECK(d.stop() == 0);
}
