// `vigil fsck` on a real volume file: clean → exit 0; a flipped byte in a closed segment →
// exit 1 with the segment and the offset named; not a volume → exit 3 with a clear message.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <pqxx/pqxx>

#include "catalog/migrator.hpp"
#include "catalog/volume_reconcile.hpp"
#include "storage/file_device.hpp"
#include "storage/segment_writer.hpp"
#include "storage/volume.hpp"
#include "tests/support/script_frames.hpp"
#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil::storage;

namespace {

std::pair<int, std::string> run_vigil(std::vector<std::string> args, const std::filesystem::path& log) {
  auto r = vigil::test::run_to_exit(VIGIL_CLI_PATH, std::move(args), log);
  return {r.status, r.output};
}

// Records 60 frames into a new volume file; returns the device offset of GOP 2's keyframe.
std::uint64_t make_volume(const std::filesystem::path& file) {
  auto dev = FileDevice::open(file, {.create_bytes = 16 << 20});
  REQUIRE(dev.has_value());
  REQUIRE(Volume::format(**dev, {.extent_bytes = 1 << 20}).has_value());
  auto vol = *Volume::open(**dev);
  SegmentWriter w(*vol, 4, {.buffer_bytes = 64 * 1024});
  REQUIRE(w.open_segment(1, {}, 1, 0).has_value());
  for (std::uint64_t seq = 1; seq <= 60; ++seq) {
    auto f = vigil::test::script_frame(seq, 4);
    if (!w.append(f.header, f.payload)) {
      REQUIRE(w.write_cycle().has_value());
      REQUIRE(w.append(f.header, f.payload).has_value());
    }
  }
  REQUIRE(w.write_cycle().has_value());
  REQUIRE(flush_sync(**dev).has_value());
  w.mark_durable();
  auto s = w.close_segment();
  REQUIRE(s.gop_index.size() > 2);
  const auto& g = s.gop_index.entries()[2];
  return vol->extent_offset(s.extents[g.offset / vol->extent_bytes()]) + g.offset % vol->extent_bytes();
}

}  // namespace

TEST_CASE("vigil fsck passes a clean volume and names the damage in a corrupted one", "[fsck][cli]") {
  vigil::test::TempDir dir;
  const auto file = dir.path() / "vol";
  const std::uint64_t keyframe = make_volume(file);

  auto [clean, out] = run_vigil({"fsck", file.string()}, dir.path() / "a.log");
  INFO(out);
  CHECK(clean == 0);
  CHECK_THAT(out, ContainsSubstring("0 problem(s)"));

  // Flip one byte in the middle of the closed segment, behind vigil's back.
  int fd = ::open(file.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  unsigned char byte = 0;
  REQUIRE(::pread(fd, &byte, 1, static_cast<off_t>(keyframe + 300)) == 1);
  byte ^= 0x40;
  REQUIRE(::pwrite(fd, &byte, 1, static_cast<off_t>(keyframe + 300)) == 1);
  ::close(fd);

  auto [damaged, out2] = run_vigil({"fsck", file.string()}, dir.path() / "b.log");
  INFO(out2);
  CHECK(damaged == 1);
  CHECK_THAT(out2, ContainsSubstring("segment 1 (stream 4): damaged records"));
  CHECK_THAT(out2, ContainsSubstring("volume offset " + std::to_string(keyframe)));
}

TEST_CASE("vigil fsck refuses what is not a volume, clearly", "[fsck][cli]") {
  vigil::test::TempDir dir;
  const auto file = dir.path() / "junk";
  {
    auto dev = FileDevice::open(file, {.create_bytes = 1 << 20});
    REQUIRE(dev.has_value());
  }
  auto [code, out] = run_vigil({"fsck", file.string()}, dir.path() / "a.log");
  CHECK(code == 3);
  CHECK_THAT(out, ContainsSubstring("not a readable Vigil volume"));
  auto [missing, out2] = run_vigil({"fsck", (dir.path() / "nope").string()}, dir.path() / "b.log");
  CHECK(missing == 3);
  auto [usage, out3] = run_vigil({"fsck"}, dir.path() / "c.log");
  CHECK(usage == 2);
}

TEST_CASE("vigil fsck --db checks the catalog against the volume and --repair reconciles it", "[fsck][cli][catalog]") {
  vigil::test::TempDir dir;
  const auto file = dir.path() / "vol";
  make_volume(file);
  const std::string db = vigil::test::shared_cluster().create_database("fsck_cli");
  pqxx::connection conn(db);
  vigil::catalog::migrate(conn);
  {
    pqxx::work tx(conn);
    tx.exec0("INSERT INTO cameras (id, name) VALUES (1, 'door')");
    tx.exec0("INSERT INTO streams (id, camera_id, codec, declared_rate_bps) VALUES (4, 1, 'h264', 1000000)");
    tx.commit();
  }

  auto [unregistered, out0] = run_vigil({"fsck", file.string(), "--db", db}, dir.path() / "0.log");
  INFO(out0);
  CHECK(unregistered == 0);
  CHECK_THAT(out0, ContainsSubstring("is not registered"));

  {
    auto dev = FileDevice::open(file, {.exclusive = true});
    REQUIRE(dev.has_value());
    auto vol = *Volume::open(**dev);
    pqxx::work tx(conn);
    vigil::catalog::register_volume(tx, *vol, file.string());
    tx.commit();
    // While this process holds the volume, fsck must not touch it.
    auto [busy, out_busy] = run_vigil({"fsck", file.string()}, dir.path() / "busy.log");
    INFO(out_busy);
    CHECK(busy == 3);
    CHECK_THAT(out_busy, ContainsSubstring("in use by another process"));
  }

  auto [orphan, out1] = run_vigil({"fsck", file.string(), "--db", db}, dir.path() / "1.log");
  INFO(out1);
  CHECK(orphan == 1);
  CHECK_THAT(out1, ContainsSubstring("orphan_on_disk: segment 1 (stream 4)"));

  auto [repaired, out2] = run_vigil({"fsck", file.string(), "--db", db, "--repair"}, dir.path() / "2.log");
  INFO(out2);
  CHECK_THAT(out2, ContainsSubstring("1 adopted"));
  auto [clean, out3] = run_vigil({"fsck", file.string(), "--db", db}, dir.path() / "3.log");
  INFO(out3);
  CHECK(clean == 0);
  CHECK_THAT(out3, ContainsSubstring("catalog: volume id"));
  CHECK(pqxx::nontransaction(conn).exec1("SELECT frame_count FROM segments WHERE id = 1")[0].as<int>() == 60);

  auto [bad_db, out4] =
      run_vigil({"fsck", file.string(), "--db", "postgresql://nobody@127.0.0.1:1/none"}, dir.path() / "4.log");
  CHECK(bad_db == 3);
  CHECK_THAT(out4, ContainsSubstring("vigil fsck: catalog:"));
}
