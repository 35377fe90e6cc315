// Fast restart on a real vigild (docs/durability.md, "Fast restart"): a 1 TiB sparse volume whose
// every extent but a reserve is in use by closed segments the catalog knows — what start-up sees
// after 1 TiB of recording (the extents past each segment's first hold no records: start-up never
// reads a closed segment's data, which is the point) — comes up without scanning one segment,
// and records again. The time from spawn to listening is printed (docs/durability.md quotes it),
// not asserted: the assertion is on what start-up read (its own log line), not on this machine's
// speed.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <pqxx/pqxx>

#include "catalog/migrator.hpp"
#include "catalog/recording_rows.hpp"
#include "catalog/volume_reconcile.hpp"
#include "client/wire/wire_client.hpp"
#include "storage/file_device.hpp"
#include "storage/volume.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/segment_fixture.hpp"
#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kVolumeBytes = 1ull << 40;   // 1 TiB, sparse
constexpr std::uint64_t kExtentBytes = 64ull << 20;  // vigild's default: 16383 extents
constexpr std::uint64_t kSegments = 60;
constexpr std::uint64_t kExtentsPerSegment = 266;  // 15960 in use: all but ~2.6 % (retention's reserve is 1 %)

// Fills the volume at PATH with kSegments closed segments of STREAM, kExtentsPerSegment extents
// each, and their catalog rows in DB. Each segment's first extent holds real records (written by
// a SegmentWriter); its other extents get their headers only, written in bulk (start-up reads
// headers, never a closed segment's data).
void fill_volume(const std::filesystem::path& path, const std::string& db, std::int64_t stream) {
  auto dev = *storage::FileDevice::open(path);
  auto vol = *storage::Volume::open(*dev);
  pqxx::connection conn(db);
  pqxx::work tx(conn);
  const auto volume_id = catalog::register_volume(tx, *vol, path.string());
  const std::uint64_t first_id = static_cast<std::uint64_t>(volume_id) << catalog::kSegmentIdVolumeShift;
  std::vector<storage::SegmentSummary> segments;
  for (std::uint64_t s = 0; s < kSegments; ++s) {
    segments.push_back(test::write_script_segment(*vol, first_id + s, static_cast<std::uint64_t>(stream), 12));
    REQUIRE(segments.back().extents == std::vector<std::uint64_t>{s});  // the lowest free extent
  }
  // The other extents: segment s owns kSegments + s·(kExtentsPerSegment-1) onwards.
  const std::uint32_t block = vol->block_bytes();
  storage::AlignedBuffer headers(256 * block, block);
  std::vector<storage::IoCommand> writes;
  std::uint64_t generation = 1'000'000;
  for (std::uint64_t s = 0; s < kSegments; ++s) {
    auto& seg = segments[s];
    for (std::uint32_t ordinal = 1; ordinal < kExtentsPerSegment; ++ordinal) {
      const std::uint64_t extent = kSegments + s * (kExtentsPerSegment - 1) + (ordinal - 1);
      seg.extents.push_back(extent);
      storage::ExtentHeader h;
      h.ordinal = ordinal;
      h.volume_uuid = vol->superblock().volume_uuid;
      h.segment_id = seg.segment_id;
      h.stream_id = static_cast<std::uint64_t>(stream);
      h.generation = ++generation;
      const std::size_t slot = writes.size();
      storage::encode_extent_header(headers.span().subspan(slot * block, block), h);
      writes.push_back({vol->extent_offset(extent), headers.span().subspan(slot * block, block)});
      if (writes.size() == 256) {
        REQUIRE(storage::write_many_sync(*dev, writes).has_value());
        writes.clear();
      }
    }
    std::vector<std::uint64_t> offsets;
    for (auto e : seg.extents) offsets.push_back(vol->extent_offset(e));
    catalog::record_closed_segment(tx, volume_id, seg, offsets, kExtentBytes, 1);
  }
  REQUIRE(storage::write_many_sync(*dev, writes).has_value());
  REQUIRE(storage::flush_sync(*dev).has_value());
  tx.commit();
}

}  // namespace

TEST_CASE("vigild restarts on a 1 TiB volume in use without reading its closed segments",
          "[vigild][recovery][fast_restart]") {
  test::TempDir dir;
  const auto db = test::shared_cluster().create_database("fast_restart_vigild");
  const auto path = dir.path() / "vol";
  std::ofstream(path).close();
  std::filesystem::resize_file(path, kVolumeBytes);  // a hole: nothing is allocated
  {
    auto dev = *storage::FileDevice::open(path);
    REQUIRE(storage::Volume::format(*dev, {.extent_bytes = kExtentBytes}).has_value());
  }
  std::int64_t stream = 0;
  {
    pqxx::connection conn(db);
    catalog::migrate(conn);
    pqxx::work tx(conn);
    auto cam = tx.exec1("INSERT INTO cameras (name) VALUES ('atrium') RETURNING id")[0].as<std::int64_t>();
    stream = tx.exec_params1(
                   "INSERT INTO streams (camera_id, codec, declared_rate_bps) VALUES ($1, 'h264', 4000000) "
                   "RETURNING id",
                   cam)[0]
                 .as<std::int64_t>();
    tx.commit();
  }
  fill_volume(path, db, stream);

  auto args = test::sim_volume_args(dir.path(), test::make_sim_profile(dir.path()));
  args.insert(args.end(), {"--db", db});
  const auto spawned = std::chrono::steady_clock::now();
  test::VigildProcess d(dir.path() / "data", args);
  REQUIRE(d.wait_ready());
  const auto listening_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - spawned).count();
  INFO(d.output());
  // Every segment trusted from the catalog, none scanned; every extent header read.
  CHECK_THAT(d.output(), ContainsSubstring("segments=" + std::to_string(kSegments) +
                                           " scanned=0 trusted=" + std::to_string(kSegments)));
  CHECK_THAT(d.output(), ContainsSubstring("extents=16383"));

  // And it records again.
  client::WireClient c(d.wire(), 20s);
  const auto recording = test::open_admitted(c, "atrium-2", 2'000'000);
  test::PacedSender sender(c, recording);
  sender.send_until(50, 25);
  sender.finish();
  CHECK(sender.counts().acked == 50);
  const auto acked_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - spawned).count();
  std::cerr << "fast restart: 1 TiB volume, " << kSegments * kExtentsPerSegment
            << " extents in use by closed segments: vigild listening " << listening_ms
            << " ms after spawn; 50 frames recorded and acknowledged " << acked_ms << " ms after spawn\n";
}
