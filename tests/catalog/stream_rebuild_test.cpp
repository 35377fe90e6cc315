// Rebuilding the catalog from a volume (catalog/stream_rebuild.hpp): the planning on its own
// (which streams, from which description, what a description the catalog would refuse becomes,
// where the holes between a camera's streams are), then on a simulated disk and a real
// PostgreSQL: an empty catalog gets cameras, streams, segments, GOP index and gaps from the
// volume alone, a segment without a description is kept under a stand-in camera, and a second
// run changes nothing.
#include <catch2/catch_test_macros.hpp>
#include <pqxx/pqxx>

#include "catalog/migrator.hpp"
#include "catalog/stream_rebuild.hpp"
#include "catalog/volume_reconcile.hpp"
#include "storage/simulated_disk.hpp"
#include "storage/stream_description.hpp"
#include "tests/support/segment_fixture.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;
using namespace vigil::storage;

namespace {

StreamDescription described(const std::string& camera, std::int64_t started_at_us = 1000) {
  StreamDescription d;
  d.camera = camera;
  d.codec = "h264";
  d.extradata = {std::byte{1}, std::byte{0x64}, std::byte{0}, std::byte{0x1f}};
  d.width = 1280;
  d.height = 720;
  d.time_base_num = 1;
  d.time_base_den = 90'000;
  d.declared_rate_bps = 2'000'000;
  d.admitted_rate_bps = 2'000'000;
  d.started_at_us = started_at_us;
  return d;
}

catalog::VolumeSegment segment(std::uint64_t id, std::uint64_t stream, std::int64_t start_us, std::int64_t end_us,
                               std::vector<std::byte> description, std::uint64_t frames = 10) {
  catalog::VolumeSegment v;
  v.segment_id = id;
  v.stream_id = stream;
  v.frame_count = frames;
  v.start_us = start_us;
  v.end_us = end_us;
  v.data_bytes = 125'000;
  v.description = std::move(description);
  return v;
}

}  // namespace

TEST_CASE("rebuild planning: one stream per unknown stream id, described by its segment headers",
          "[rebuild][catalog]") {
  const auto gate = encode_stream_description(described("gate"));
  std::vector<catalog::VolumeSegment> found = {
      segment(2, 7, 20'000, 30'000, gate),
      segment(1, 7, 10'000, 20'000, {}),  // first by time, but without a description: the next one describes
      segment(3, 8, 5'000, 6'000, {}),    // never described: a stand-in camera
      segment(4, 9, 0, 1'000, encode_stream_description(described("gate"))),  // known to the catalog
      segment(5, 10, 0, 1'000, gate, 0),                                      // no frames: nothing to rebuild
      segment(6, 11, 0, 1'000, {std::byte{'x'}, std::byte{'y'}}),             // garbage: a stand-in, with why
      segment(7, 12, 0, 1'000, encode_stream_description(described("bad name!"))),
  };
  auto unreadable = segment(8, 13, 0, 1'000, gate);
  unreadable.readable = false;
  found.push_back(unreadable);

  const auto plan = catalog::plan_stream_rebuild(found, {9});
  REQUIRE(plan.size() == 4);
  const auto& s7 = plan[0];
  CHECK(s7.stream_id == 7);
  CHECK(s7.warning.empty());
  CHECK(s7.description.camera == "gate");
  CHECK(s7.description.codec == "h264");
  CHECK(s7.description.width == 1280);
  CHECK(s7.description.extradata.size() == 4);
  CHECK(s7.description.time_base_den == 90'000);
  CHECK(s7.start_us == 10'000);
  CHECK(s7.end_us == 30'000);
  CHECK(s7.segments == 2);
  CHECK(s7.frames == 20);
  CHECK(s7.description.started_at_us == 1000);

  const auto& s8 = plan[1];
  CHECK(s8.stream_id == 8);
  CHECK(s8.description.camera == "unknown-stream-8");
  CHECK(s8.description.codec == "unknown");
  CHECK(s8.description.width == 0);
  CHECK(s8.description.started_at_us == 5'000);              // its first frame
  CHECK(s8.description.declared_rate_bps == 1'000'000'000);  // 125 000 bytes over 1 ms
  CHECK(s8.warning.find("no stream description") != std::string::npos);

  CHECK(plan[2].stream_id == 11);
  CHECK(plan[2].description.camera == "unknown-stream-11");
  CHECK(plan[2].warning.find("does not decode") != std::string::npos);

  CHECK(plan[3].stream_id == 12);
  CHECK(plan[3].description.camera == "unknown-stream-12");
  CHECK(plan[3].description.codec == "h264");  // the rest of the description stands
  CHECK(plan[3].warning.find("not one the catalog accepts") != std::string::npos);
}

TEST_CASE("rebuild planning: holes between a camera's streams", "[rebuild][catalog]") {
  using catalog::StreamSpan;
  CHECK(catalog::plan_stream_holes({}).empty());
  const auto holes = catalog::plan_stream_holes({StreamSpan{3, 500, 900}, StreamSpan{1, 0, 100},
                                                 StreamSpan{2, 50, 300},     // overlaps 1: no hole between them
                                                 StreamSpan{4, 600, 700}});  // inside 3: no hole
  REQUIRE(holes.size() == 1);
  CHECK(holes[0].stream_id == 2);
  CHECK(holes[0].from_us == 300);
  CHECK(holes[0].to_us == 500);
}

TEST_CASE("an empty catalog is rebuilt from a volume, and a second rebuild changes nothing", "[rebuild][catalog]") {
  pqxx::connection conn(test::shared_cluster().create_database("stream_rebuild"));
  catalog::migrate(conn);

  VirtualClock clock;
  SimulatedDisk disk(clock, {.size_bytes = 4 << 20});
  REQUIRE(Volume::format(disk, {.extent_bytes = 64 * 1024}).has_value());
  auto vol = *Volume::open(disk);
  // Camera gate: stream 40 (two segments), then stream 41 after a hole; stream 42 from before
  // descriptions; an empty segment of stream 43.
  const auto gate40 = encode_stream_description(described("gate", 3600));
  const auto gate41 = encode_stream_description(described("gate", 100 * 3600));
  test::write_described_segment(*vol, 100, 40, 1, 20, gate40);
  test::write_described_segment(*vol, 101, 40, 21, 20, gate40);   // frames end at 41 * 3600
  test::write_described_segment(*vol, 102, 41, 100, 30, gate41);  // starts at 100 * 3600
  test::write_described_segment(*vol, 103, 42, 1, 5, {});         // no description
  test::write_described_segment(*vol, 104, 43, 1, 0, gate40);     // no frames

  std::int64_t volume_id = 0;
  {
    pqxx::work tx(conn);
    volume_id = catalog::register_volume(tx, *vol, "sim:0");
    tx.commit();
  }
  {  // What `vigil fsck --db` says first: orphans whose stream --repair rebuilds, by camera.
    pqxx::work tx(conn);
    const auto problems = catalog::check_against_catalog(tx, catalog::scan_volume(*vol), volume_id);
    std::size_t orphans = 0;
    for (const auto& p : problems) {
      INFO(p.describe());
      if (p.kind != catalog::CatalogProblem::Kind::orphan_on_disk) continue;
      ++orphans;
      CHECK(p.describe().find(p.stream_id == 42 ? "camera unknown-stream-42" : "camera gate") != std::string::npos);
    }
    CHECK(orphans == 4);
  }
  const auto r = catalog::reconcile_volume(conn, *vol, volume_id, 50'000'000);
  REQUIRE(r.rebuilt.size() == 3);
  CHECK(r.plan.adopt.size() == 4);
  CHECK(r.plan.kept.empty());
  CHECK(r.plan.reclaim == std::vector<std::uint64_t>{104});
  std::set<std::int64_t> rebuilt;
  for (const auto& s : r.rebuilt) rebuilt.insert(s.stream_id);
  CHECK(catalog::write_rebuild_gaps(conn, rebuilt) == 1);

  const auto snapshot = [&] {
    pqxx::nontransaction q(conn);
    std::string out;
    for (const auto& row : q.exec(
             "SELECT s.id, c.name, s.codec, s.width, s.height, encode(s.extradata, 'hex'), s.state, s.started_at_us, "
             "s.ended_at_us FROM streams s JOIN cameras c ON c.id = s.camera_id ORDER BY s.id")) {
      for (const auto& f : row) out += (f.is_null() ? std::string("NULL") : f.as<std::string>()) + " ";
      out += "\n";
    }
    for (const auto& row :
         q.exec("SELECT g.id, g.stream_id, g.state, g.start_us, g.end_us, g.frame_count, i.gop_count, "
                "(SELECT count(*) FROM segment_extents e WHERE e.segment_id = g.id) FROM segments g "
                "JOIN gop_index i ON i.segment_id = g.id ORDER BY g.id")) {
      for (const auto& f : row) out += f.as<std::string>() + " ";
      out += "\n";
    }
    for (const auto& row : q.exec("SELECT stream_id, start_us, end_us, reason, detail FROM gaps ORDER BY id")) {
      for (const auto& f : row) out += f.as<std::string>() + " ";
      out += "\n";
    }
    return out;
  };
  const auto first = snapshot();
  INFO(first);
  {
    pqxx::nontransaction q(conn);
    auto s40 = q.exec1(
        "SELECT c.name, s.codec, s.width, s.height, encode(s.extradata, 'hex'), s.state, s.started_at_us, "
        "s.ended_at_us, s.disk_id IS NOT NULL FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE s.id = 40");
    CHECK(s40[0].as<std::string>() == "gate");
    CHECK(s40[1].as<std::string>() == "h264");
    CHECK(s40[2].as<int>() == 1280);
    CHECK(s40[3].as<int>() == 720);
    CHECK(s40[4].as<std::string>() == "0164001f");
    CHECK(s40[5].as<std::string>() == "interrupted");
    CHECK(s40[6].as<std::int64_t>() == 3600);
    CHECK(s40[7].as<std::int64_t>() == 41 * 3600);
    CHECK(s40[8].as<bool>());
    CHECK(q.exec1("SELECT c.name FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE s.id = 42")[0]
              .as<std::string>() == "unknown-stream-42");
    CHECK(q.exec1("SELECT count(*) FROM cameras")[0].as<int>() == 2);
    CHECK(q.exec1("SELECT sum(frame_count) FROM segments WHERE state = 'closed'")[0].as<int>() == 75);
    auto gap = q.exec1("SELECT stream_id, start_us, end_us, reason, detail FROM gaps");
    CHECK(gap[0].as<std::int64_t>() == 40);
    CHECK(gap[1].as<std::int64_t>() == 41 * 3600);
    CHECK(gap[2].as<std::int64_t>() == 100 * 3600);
    CHECK(gap[3].as<std::string>() == "source_lost");
    CHECK(gap[4].as<std::string>() == catalog::kRebuiltGapDetail);
    // New streams never take a rebuilt id.
    CHECK(q.exec1("SELECT nextval(pg_get_serial_sequence('streams', 'id'))")[0].as<std::int64_t>() > 42);
  }

  // Again, from the volume as it is now: nothing to rebuild, nothing changed.
  const auto again = catalog::reconcile_volume(conn, *vol, volume_id, 60'000'000);
  CHECK(again.rebuilt.empty());
  CHECK(again.plan.adopt.empty());
  CHECK(again.plan.reclaim.empty());
  CHECK(catalog::write_rebuild_gaps(conn, rebuilt) == 0);
  CHECK(snapshot() == first);
}
