// Damage inside a segment, on a real vigild: a recording is acknowledged and vigild killed with
// the segment still open; a byte in the middle of one frame's record is flipped in the volume
// file; at the next start recovery scans that segment, skips the damaged record by
// resynchronising on the next valid one, and keeps everything after it. The timeline shows a
// corruption gap of exactly the damaged frame, and a playback serves every frame before and
// after the damaged GOP, byte for byte, reporting that GOP as a gap.
#include <signal.h>
#include <sys/socket.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <map>
#include <pqxx/pqxx>

#include "client/wire/wire_client.hpp"
#include "storage/file_device.hpp"
#include "storage/segment_recovery.hpp"
#include "storage/volume.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/script_frames.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kFrames = 250;     // 10 s at 25 fps, a keyframe every 25 (1, 26, ...)
constexpr std::uint64_t kHit = 110;        // the damaged frame: inside the GOP of keyframe 101
constexpr std::int64_t kFrameUs = 40'000;  // 25 fps

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Flips a byte inside the payload of frame SEQ of STREAM's segment on the volume file PATH
// (vigild is not running: nothing holds the volume).
void damage_frame(const std::filesystem::path& path, std::uint64_t stream, std::uint64_t seq) {
  auto dev = *storage::FileDevice::open(path);
  auto vol = *storage::Volume::open(*dev);
  std::optional<std::uint64_t> segment;
  for (const auto& [id, uses] : vol->segments()) {
    if (uses.front().header.stream_id == stream) segment = id;
  }
  REQUIRE(segment.has_value());
  // Where frame SEQ's record lies: its extent (ordinals advance when the offset starts over).
  std::uint64_t ordinal = 0, last_offset = 0;
  std::optional<std::uint64_t> device_offset;
  const auto& uses = vol->segments().at(*segment);
  auto rec = storage::recover_segment(*vol, *segment, [&](const storage::ScannedRecord& r) {
    if (r.offset < last_offset) ++ordinal;
    last_offset = r.offset;
    if (r.header.sequence == seq) device_offset = vol->extent_offset(uses[ordinal].extent) + r.offset;
  });
  REQUIRE(rec.has_value());
  REQUIRE(rec->summary.frame_count == kFrames);
  REQUIRE(device_offset.has_value());
  const std::uint64_t at = *device_offset + storage::kRecordHeaderBytes + 100;
  storage::AlignedBuffer block(4096);
  REQUIRE(storage::read_sync(*dev, at / 4096 * 4096, block.span()).has_value());
  block.data()[at % 4096] ^= std::byte{0xff};
  REQUIRE(storage::write_sync(*dev, at / 4096 * 4096, block.span(), true).has_value());
}

proto::Envelope open_playback(const std::string& name, std::int64_t from_us, std::int64_t to_us) {
  proto::Envelope e;
  auto* o = e.mutable_open_playback();
  o->set_stream_name(name);
  o->set_start_us(from_us);
  o->set_end_us(to_us);
  o->set_rate(8.0);
  return e;
}

}  // namespace

TEST_CASE("damage inside a segment: recovery skips it, a corruption gap covers it, what follows plays",
          "[vigild][recovery]") {
  test::TempDir dir;
  const auto profile = test::make_sim_profile(dir.path());
  const auto args = test::sim_volume_args(dir.path(), profile);
  const auto data = dir.path() / "data";
  std::uint64_t stream = 0;
  {
    test::VigildProcess d(data, args);
    REQUIRE(d.wait_ready());
    client::WireClient c(d.wire(), 20s);
    stream = test::open_admitted(c, "dock", 64'000'000);  // every frame fits in a cycle: no policing
    for (std::uint64_t seq = 1; seq <= kFrames; ++seq) {
      auto [p, payload] = test::media_packet(stream, seq, stream);
      c.send(p, payload);
    }
    std::uint64_t acked = 0;
    while (acked < kFrames) {
      auto r = c.receive();
      REQUIRE_FALSE(r.msg.has_refuse());
      if (r.msg.has_durable_ack()) acked = r.msg.durable_ack().last_sequence();
    }
    // Killed with the recording still open: its segment is on the volume, not in the catalog.
    d.stop(SIGKILL);
  }
  damage_frame(dir.path() / "vol", stream, kHit);

  test::VigildProcess d(data, args);
  REQUIRE(d.wait_ready());
  INFO(d.output());
  pqxx::connection conn("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  {
    pqxx::nontransaction q(conn);
    // Every frame but the damaged one is in the segment.
    CHECK(q.exec_params1("SELECT sum(frame_count) FROM segments WHERE stream_id = $1 AND state = 'closed'",
                         static_cast<std::int64_t>(stream))[0]
              .as<std::int64_t>() == static_cast<std::int64_t>(kFrames - 1));
  }

  // The timeline: one corruption gap, exactly frame kHit's time.
  const auto timeline =
      test::http_request(d.http(), "GET",
                         "/api/v1/cameras/dock/timeline?from=-1h&to=@" + std::to_string(now_us() / 1'000'000 + 3600));
  INFO(timeline.body);
  REQUIRE(timeline.status == 200);
  std::vector<boost::json::object> corruption;
  const auto doc = boost::json::parse(timeline.body);
  for (const auto& g : doc.at("gaps").as_array()) {
    if (g.at("reason").as_string() == "corruption") corruption.push_back(g.as_object());
  }
  REQUIRE(corruption.size() == 1);
  const std::int64_t gap_from = corruption[0].at("start_us").as_int64();
  CHECK(corruption[0].at("end_us").as_int64() - gap_from == kFrameUs);

  // A playback of the whole recording: every frame outside the damaged GOP, exactly as sent.
  client::WireClient c(d.wire(), 20s);
  c.hello("resync test viewer", test::token());
  c.send(open_playback("dock", now_us() - 3'600'000'000, now_us() + 3'600'000'000));
  auto started = c.receive();
  REQUIRE(started.msg.has_playback_started());
  std::int64_t first_pts = 0;
  std::map<std::uint64_t, int> served;
  std::vector<std::pair<std::int64_t, std::int64_t>> gaps;
  for (;;) {
    auto r = c.receive();
    if (r.msg.has_playback_end()) {
      CHECK_FALSE(r.msg.playback_end().failed());
      for (const auto& g : r.msg.playback_end().gaps()) gaps.emplace_back(g.from_us(), g.to_us());
      break;
    }
    REQUIRE(r.msg.has_media_packet());
    const auto& m = r.msg.media_packet();
    if (served.empty()) first_pts = m.pts();
    const auto seq = 1 + static_cast<std::uint64_t>((m.pts() - first_pts + kFrameUs / 2) / kFrameUs);
    CHECK(r.payload == test::script_frame(seq, stream).payload);
    ++served[seq];
  }
  // The frame before the damaged one ends where the corruption gap starts.
  CHECK(first_pts + static_cast<std::int64_t>(kHit - 1) * kFrameUs == gap_from);
  for (std::uint64_t seq = 1; seq <= kFrames; ++seq) {
    INFO("frame " << seq);
    const bool in_damaged_gop = seq >= 101 && seq <= 125;
    CHECK(served[seq] == (in_damaged_gop ? 0 : 1));
  }
  REQUIRE(gaps.size() == 1);  // the damaged GOP, reported, not served
  CHECK(gaps[0].first == first_pts + 100 * kFrameUs);
  CHECK(gaps[0].second == first_pts + 125 * kFrameUs);
}
