// The batcher's spool (docs/catalog.md, "When the catalog is down"): rows that cannot reach the
// catalog are kept in a CRC'd append-only file, survive the batcher's end, and are committed in
// order by the next batcher on that file; a commit that a frozen PostgreSQL never answers is cut,
// and the batcher's stop stays bounded. Real PostgreSQL (SIGSTOPped for the hung case).
#include <signal.h>

#include <catch2/catch_test_macros.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <pqxx/pqxx>

#include "catalog/batcher.hpp"
#include "catalog/migrator.hpp"
#include "catalog/pending_rows.hpp"
#include "catalog/recording_rows.hpp"
#include "catalog/spool.hpp"
#include "catalog/volume_reconcile.hpp"
#include "storage/simulated_disk.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// A catalog with one volume, one camera and one stream 'recording' on it.
struct Catalog {
  explicit Catalog(const std::string& conninfo) : db(conninfo) {
    pqxx::connection conn(db);
    catalog::migrate(conn);
    storage::VirtualClock clock;
    storage::SimulatedDisk disk(clock, {.size_bytes = 16 << 20});
    REQUIRE(storage::Volume::format(disk, {.extent_bytes = 1 << 20}).has_value());
    auto vol = *storage::Volume::open(disk);
    pqxx::work tx(conn);
    volume_id = catalog::register_volume(tx, *vol, "sim:0");
    const auto disk_id = tx.exec_params1("SELECT disk_id FROM volumes WHERE id = $1", volume_id)[0].as<std::int64_t>();
    stream_id = catalog::open_stream(tx, {.camera_id = catalog::ensure_camera(tx, "gate"),
                                          .codec = "h264",
                                          .declared_rate_bps = 1'000'000,
                                          .admitted_rate_bps = 1'000'000,
                                          .disk_id = disk_id,
                                          .started_at_us = 1'000'000});
    tx.commit();
  }

  catalog::ClosedSegmentRow segment(std::uint64_t n) const {
    const auto id = (static_cast<std::uint64_t>(volume_id) << catalog::kSegmentIdVolumeShift) + n;
    return {.volume_id = volume_id,
            .segment_id = id,
            .stream_id = static_cast<std::uint64_t>(stream_id),
            .start_us = static_cast<std::int64_t>(1'000'000 * n),
            .end_us = static_cast<std::int64_t>(1'000'000 * (n + 1)),
            .data_bytes = 1000,
            .frame_count = 25,
            .extent_offsets = {(n + 1) << 20},
            .extent_bytes = 1 << 20,
            .closed_at_us = static_cast<std::int64_t>(1'000'000 * (n + 1)),
            .gop_count = 0,
            .gop_blob = {}};
  }
  catalog::StreamEndRow end() const {
    return {.stream_id = stream_id, .state = "stopped", .ended_us = 9'000'000, .gap_reason = {}, .gap_detail = {}};
  }

  catalog::GapRow gap() const {
    return {.stream_id = stream_id,
            .start_us = 2'000'000,
            .end_us = 2'600'000,
            .reason = "rate_exceeded",
            .detail = "15 frames (46000 payload bytes) refused and never stored"};
  }
  // The stream's gaps: "start end reason" each, in order.
  std::vector<std::string> gaps() const {
    pqxx::connection conn(db);
    pqxx::nontransaction q(conn);
    std::vector<std::string> out;
    for (const auto& row : q.exec_params("SELECT start_us, end_us, reason FROM gaps WHERE stream_id = $1 "
                                         "ORDER BY start_us",
                                         stream_id)) {
      out.push_back(row[0].as<std::string>() + " " + row[1].as<std::string>() + " " + row[2].as<std::string>());
    }
    return out;
  }

  long segments() const {
    pqxx::connection conn(db);
    pqxx::nontransaction q(conn);
    return q.exec1("SELECT count(*) FROM segments")[0].as<long>();
  }
  std::string state() const {
    pqxx::connection conn(db);
    pqxx::nontransaction q(conn);
    return q.exec_params1("SELECT state FROM streams WHERE id = $1", stream_id)[0].as<std::string>();
  }

  std::string db;
  std::int64_t volume_id = 0, stream_id = 0;
};

// A database nobody serves: every connection attempt fails at once.
const std::string kNowhere = "host=/nonexistent-vigil-socket-dir port=1 dbname=nowhere connect_timeout=2";

}  // namespace

TEST_CASE("the spool reads back its records in order and stops at a torn or damaged one", "[catalog][spool]") {
  test::TempDir dir;
  const auto path = dir.path() / "catalog.spool";
  {
    catalog::Spool s(path);
    const std::vector<std::string> first{"one", std::string("t\0o", 3)};
    s.append(first);
    const std::vector<std::string> second{"three"};
    s.append(second);
  }
  auto c = catalog::Spool::read(path);
  CHECK(c.records == std::vector<std::string>{"one", std::string("t\0o", 3), "three"});
  CHECK(c.unreadable_bytes == 0);

  // A torn append (a crash mid-write): what was complete before it is read.
  { std::ofstream(path, std::ios::app | std::ios::binary) << "VGSP\x05"; }
  c = catalog::Spool::read(path);
  CHECK(c.records.size() == 3);
  CHECK(c.unreadable_bytes == 5);

  // A flipped byte in the second record's payload: its CRC stops the read there.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(12 + 3 + 12);
    f.put('X');
  }
  c = catalog::Spool::read(path);
  CHECK(c.records == std::vector<std::string>{"one"});
  CHECK(c.unreadable_bytes > 0);

  catalog::Spool s(path);
  s.clear();
  CHECK(fs::file_size(path) == 0);
  CHECK(catalog::Spool::read(path).records.empty());
}

TEST_CASE("every pending row survives its encoding", "[catalog][spool]") {
  catalog::ClosedSegmentRow seg{.volume_id = 3,
                                .segment_id = 77,
                                .stream_id = 5,
                                .start_us = -1,
                                .end_us = 1 << 30,
                                .data_bytes = 123,
                                .frame_count = 9,
                                .extent_offsets = {4096, 8192},
                                .extent_bytes = 4096,
                                .closed_at_us = 42,
                                .gop_count = 2,
                                .gop_blob = std::string("\x00\x01\x02", 3),
                                .checksum_crc32c = 0xdeadbeef};
  auto back = catalog::decode(catalog::encode(seg));
  REQUIRE(back.has_value());
  const auto& s = std::get<catalog::ClosedSegmentRow>(*back);
  CHECK(s.segment_id == 77);
  CHECK(s.start_us == -1);
  CHECK(s.extent_offsets == seg.extent_offsets);
  CHECK(s.gop_blob == seg.gop_blob);
  CHECK(s.closed_at_us == 42);
  CHECK(s.checksum_crc32c == 0xdeadbeef);
  // A row spooled before the segment checksum existed ends before it: read as unknown.
  auto old = catalog::encode(seg);
  old.resize(old.size() - sizeof(std::uint32_t));
  back = catalog::decode(old);
  REQUIRE(back.has_value());
  CHECK(std::get<catalog::ClosedSegmentRow>(*back).checksum_crc32c == 0);
  CHECK(std::get<catalog::ClosedSegmentRow>(*back).gop_blob == seg.gop_blob);

  catalog::StreamEndRow end{
      .stream_id = 8, .state = "stalled", .ended_us = 5, .gap_reason = "source_stalled", .gap_detail = "quiet"};
  back = catalog::decode(catalog::encode(end));
  REQUIRE(back.has_value());
  CHECK(std::get<catalog::StreamEndRow>(*back).gap_detail == "quiet");
  CHECK(catalog::label(*back) == "end stream 8");

  catalog::AdmissionDecisionRow d{
      .decision = {}, .disk_id = 2, .stream_id = std::nullopt, .cycle_s = 0.5, .camera = "porch"};
  d.decision.reason = "cycle full";
  d.decision.requested_rate = Rate::from_bps(4'000'000);
  back = catalog::decode(catalog::encode(d));
  REQUIRE(back.has_value());
  const auto& dd = std::get<catalog::AdmissionDecisionRow>(*back);
  CHECK(dd.decision.reason == "cycle full");
  CHECK(dd.decision.requested_rate.bps() == 4'000'000);
  CHECK_FALSE(dd.stream_id.has_value());
  CHECK(dd.camera == "porch");

  catalog::GapRow gap{
      .stream_id = 4, .start_us = -7, .end_us = 1ll << 40, .reason = "deadline_missed", .detail = "late"};
  back = catalog::decode(catalog::encode(gap));
  REQUIRE(back.has_value());
  const auto& g = std::get<catalog::GapRow>(*back);
  CHECK(g.stream_id == 4);
  CHECK(g.start_us == -7);
  CHECK(g.end_us == 1ll << 40);
  CHECK(g.reason == "deadline_missed");
  CHECK(g.detail == "late");
  CHECK(catalog::label(*back) == "deadline_missed gap of stream 4");
  // A stream opened during an outage keeps its track; one spooled before tracks existed (no
  // role and media kind after its gap reason) is the camera's main video.
  catalog::StreamOpenRow open{.stream_id = 9,
                              .camera = "porch",
                              .codec = "h264",
                              .width = 320,
                              .height = 180,
                              .declared_rate_bps = 256'000,
                              .admitted_rate_bps = 256'000,
                              .disk_id = 1,
                              .started_at_us = 5,
                              .gap_why = "camera unreachable",
                              .role = TrackRole::sub};
  back = catalog::decode(catalog::encode(open));
  REQUIRE(back.has_value());
  CHECK(std::get<catalog::StreamOpenRow>(*back).role == TrackRole::sub);
  CHECK(std::get<catalog::StreamOpenRow>(*back).media_kind == MediaKind::video);
  CHECK(std::get<catalog::StreamOpenRow>(*back).gap_why == "camera unreachable");
  // An audio stream keeps its sample rate and channels; one spooled before they were kept has none.
  open.media_kind = MediaKind::audio;
  open.codec = "aac";
  open.width = open.height = 0;
  open.sample_rate_hz = 48000;
  open.channels = 2;
  back = catalog::decode(catalog::encode(open));
  REQUIRE(back.has_value());
  CHECK(std::get<catalog::StreamOpenRow>(*back).media_kind == MediaKind::audio);
  CHECK(std::get<catalog::StreamOpenRow>(*back).sample_rate_hz == 48000);
  CHECK(std::get<catalog::StreamOpenRow>(*back).channels == 2);
  const auto with_rates = catalog::encode(open);
  back = catalog::decode(with_rates.substr(0, with_rates.size() - 8));  // without the two int32
  REQUIRE(back.has_value());
  CHECK(std::get<catalog::StreamOpenRow>(*back).media_kind == MediaKind::audio);
  CHECK(std::get<catalog::StreamOpenRow>(*back).sample_rate_hz == 0);
  CHECK(std::get<catalog::StreamOpenRow>(*back).channels == 0);
  CHECK_FALSE(catalog::decode(with_rates.substr(0, with_rates.size() - 1)).has_value());  // torn channels
  open.media_kind = MediaKind::video;
  open.sample_rate_hz = open.channels = 0;
  open.role = TrackRole::main;
  const auto current = catalog::encode(open);
  // Without the rates (8 bytes), "main" and "video".
  const std::string older = current.substr(0, current.size() - 8 - (4 + 4) - (4 + 5));
  back = catalog::decode(older);
  REQUIRE(back.has_value());
  CHECK(std::get<catalog::StreamOpenRow>(*back).role == TrackRole::main);
  CHECK(std::get<catalog::StreamOpenRow>(*back).gap_why == "camera unreachable");
  CHECK_FALSE(catalog::decode(current.substr(0, current.size() - 8 - 1)).has_value());  // a torn track word
  // The kinds written before gap rows existed keep their bytes: an older spool still decodes.
  CHECK(static_cast<std::uint8_t>(catalog::encode(seg)[1]) == 1);
  CHECK(static_cast<std::uint8_t>(catalog::encode(end)[1]) == 2);
  CHECK(static_cast<std::uint8_t>(catalog::encode(gap)[1]) == 7);

  // Anything else is refused, not half-read.
  auto bytes = catalog::encode(seg);
  CHECK_FALSE(catalog::decode(bytes.substr(0, bytes.size() - 1)).has_value());
  CHECK_FALSE(catalog::decode(bytes + "x").has_value());
  CHECK_FALSE(catalog::decode("").has_value());
}

TEST_CASE("rows the catalog cannot take are spooled, and the next batcher commits them in order, once",
          "[catalog][spool][batcher]") {
  Catalog cat(test::shared_cluster().create_database("spool_replay"));
  test::TempDir dir;
  const auto spool = dir.path() / "catalog.spool";
  {
    // The catalog is unreachable: the rows wait, and go to the spool without waiting for a stop.
    catalog::Batcher down(kNowhere, {.max_delay = 10ms, .spool_path = spool, .spool_after = 100ms});
    down.enqueue(cat.segment(1));
    down.enqueue(cat.segment(2));
    down.enqueue(cat.end());
    CHECK(test::eventually([&] { return down.down() && down.spooled() == 3; }, 30s));
    CHECK(catalog::Spool::read(spool).records.size() == 3);
  }
  CHECK(catalog::Spool::read(spool).records.size() == 3);
  const auto kept = dir.path() / "kept";
  fs::copy_file(spool, kept);
  CHECK(cat.segments() == 0);

  {
    catalog::Batcher up(cat.db, {.spool_path = spool});
    CHECK(up.waiting() == 3);
    up.flush();
    CHECK(up.committed() == 3);
    CHECK(up.rejected() == 0);
    // Everything it held is committed: the spool is emptied.
    CHECK(test::eventually([&] { return fs::file_size(spool) == 0; }, 30s));
  }
  CHECK(cat.segments() == 2);
  CHECK(cat.state() == "stopped");

  // Replayed again (a crash between the commit and the spool's truncation): nothing changes and
  // nothing is refused.
  fs::copy_file(kept, spool, fs::copy_options::overwrite_existing);
  catalog::Batcher again(cat.db, {.spool_path = spool});
  again.flush();
  CHECK(again.committed() == 3);
  CHECK(again.rejected() == 0);
  CHECK(cat.segments() == 2);
  CHECK(cat.state() == "stopped");
}

TEST_CASE("a gap row of refused frames survives an outage in the spool, and a replay does not duplicate it",
          "[catalog][spool][batcher][gaps]") {
  Catalog cat(test::shared_cluster().create_database("spool_gap_replay"));
  test::TempDir dir;
  const auto spool = dir.path() / "catalog.spool";
  {
    catalog::Batcher down(kNowhere, {.max_delay = 10ms, .spool_path = spool, .spool_after = 100ms});
    down.enqueue(cat.gap());
    CHECK(test::eventually([&] { return down.down() && down.spooled() == 1; }, 30s));
  }
  const auto kept = dir.path() / "kept";
  fs::copy_file(spool, kept);
  CHECK(cat.gaps().empty());
  {
    catalog::Batcher up(cat.db, {.spool_path = spool});
    up.flush();
    CHECK(up.committed() == 1);
    CHECK(up.rejected() == 0);
  }
  CHECK(cat.gaps() == std::vector<std::string>{"2000000 2600000 rate_exceeded"});

  // Replayed (a crash between the commit and the spool's truncation), twice: still one gap.
  for (int i = 0; i < 2; ++i) {
    fs::copy_file(kept, spool, fs::copy_options::overwrite_existing);
    catalog::Batcher again(cat.db, {.spool_path = spool});
    again.flush();
    CHECK(again.committed() == 1);
    CHECK(again.rejected() == 0);
  }
  CHECK(cat.gaps() == std::vector<std::string>{"2000000 2600000 rate_exceeded"});
}

TEST_CASE("a commit a frozen PostgreSQL never answers is cut; the stop is bounded and loses nothing",
          "[catalog][spool][batcher][outage]") {
  test::TempCluster cluster;  // its own: this one is frozen
  Catalog cat(cluster.create_database("spool_hung"));
  test::TempDir dir;
  const auto spool = dir.path() / "catalog.spool";
  auto batcher = std::make_unique<catalog::Batcher>(cat.db, catalog::BatcherOptions{.max_delay = 10ms,
                                                                                    .spool_path = spool,
                                                                                    .spool_after = 200ms,
                                                                                    .commit_timeout = 1s,
                                                                                    .stop_grace = 1s});
  batcher->enqueue(cat.segment(1));
  batcher->flush();  // connected, and the first row is in
  CHECK(cat.segments() == 1);

  const auto postgres = test::postgres_processes_under(cluster.postgres().cluster_dir());
  REQUIRE_FALSE(postgres.empty());
  for (auto pid : postgres) ::kill(pid, SIGSTOP);
  batcher->enqueue(cat.segment(2));
  batcher->enqueue(cat.end());
  // The commit hangs (no error ever comes); the rows go to the spool meanwhile.
  const bool spooled = test::eventually([&] { return batcher->spooled() == 2; }, 30s);
  // The stop ends within a deadline, however long the database stays frozen.
  auto stopped = std::async(std::launch::async, [&] { batcher.reset(); });
  const bool bounded = stopped.wait_for(20s) == std::future_status::ready;
  for (auto pid : postgres) ::kill(pid, SIGCONT);
  stopped.wait();
  CHECK(spooled);
  CHECK(bounded);
  CHECK(catalog::Spool::read(spool).records.size() == 2);

  catalog::Batcher next(cat.db, {.spool_path = spool});
  next.flush();
  CHECK(next.rejected() == 0);
  CHECK(cat.segments() == 2);
  CHECK(cat.state() == "stopped");
}
