// `vigil profile` as an operator uses it: a simulated disk profiles in virtual time and `show`
// derives the parameters; a real file target is created, measured and removed; a file that
// holds a Vigil volume is refused without --force; a bad preset or document is a clear error.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>
#include <sstream>

#include "storage/file_device.hpp"
#include "storage/volume.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;

namespace {
vigil::test::ExitResult vigil_cli(std::vector<std::string> args, const std::filesystem::path& log) {
  return vigil::test::run_to_exit(VIGIL_CLI_PATH, std::move(args), log);
}
}  // namespace

TEST_CASE("vigil profile sim:wd400bb writes a profile that show explains", "[profile][cli]") {
  vigil::test::TempDir dir;
  const auto json = dir.path() / "wd.json";
  auto r = vigil_cli({"profile", "sim:wd400bb", "--quick", "-o", json.string(), "--svg", (dir.path() / "svg").string()},
                     dir.path() / "a.log");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, ContainsSubstring("chunk size"));
  CHECK_THAT(r.output, ContainsSubstring("recommended cycle"));
  CHECK(std::filesystem::exists(dir.path() / "svg" / "admission-curve.svg"));
  if (std::filesystem::exists("/usr/bin/gnuplot")) {  // deploy/install-deps.sh installs it
    std::ifstream png(dir.path() / "svg" / "admission-curve.png", std::ios::binary);
    std::string magic(8, '\0');
    png.read(magic.data(), 8);
    CHECK(magic == "\x89PNG\r\n\x1a\n");
  }
  std::ifstream in(json);
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = boost::json::parse(ss.str()).as_object();
  CHECK(doc.at("format").as_int64() == 1);
  CHECK(doc.at("device").as_string() == "sim:wd400bb");
  CHECK(doc.at("random_read").as_object().at("sizes").as_array().size() >= 5);

  auto show = vigil_cli({"profile", "show", json.string(), "--rate-mbps", "8"}, dir.path() / "b.log");
  INFO(show.output);
  CHECK(show.status == 0);
  CHECK_THAT(show.output, ContainsSubstring("streams of 8 Mbit/s"));
}

TEST_CASE("vigil profile measures a real file it creates, and removes it", "[profile][cli]") {
  vigil::test::TempDir dir;
  const auto target = dir.path() / "disk.dat";
  auto r = vigil_cli({"profile", target.string(), "--quick", "--size", std::to_string(64 << 20), "-o",
                      (dir.path() / "p.json").string()},
                     dir.path() / "a.log");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_FALSE(std::filesystem::exists(target));
  CHECK(std::filesystem::exists(dir.path() / "p.json"));
}

TEST_CASE("vigil profile refuses a Vigil volume without --force, and bad input clearly", "[profile][cli]") {
  vigil::test::TempDir dir;
  const auto vol = dir.path() / "vol";
  {
    auto dev = vigil::storage::FileDevice::open(vol, {.create_bytes = 16 << 20});
    REQUIRE(dev.has_value());
    REQUIRE(vigil::storage::Volume::format(**dev, {.extent_bytes = 1 << 20}).has_value());
  }
  auto r = vigil_cli({"profile", vol.string(), "--quick"}, dir.path() / "a.log");
  CHECK(r.status == 3);
  CHECK_THAT(r.output, ContainsSubstring("holds a Vigil volume"));
  CHECK(vigil::storage::FileDevice::open(vol).has_value());  // untouched: still there

  auto bad = vigil_cli({"profile", "sim:floppy", "--quick"}, dir.path() / "b.log");
  CHECK(bad.status == 1);
  CHECK_THAT(bad.output, ContainsSubstring("unknown disk preset"));

  std::ofstream(dir.path() / "junk.json") << "{\"format\": 7}";
  auto junk = vigil_cli({"profile", "show", (dir.path() / "junk.json").string()}, dir.path() / "c.log");
  CHECK(junk.status == 1);
  CHECK_THAT(junk.output, ContainsSubstring("format 7 is not supported"));
  CHECK(vigil_cli({"profile"}, dir.path() / "d.log").status == 2);
}
