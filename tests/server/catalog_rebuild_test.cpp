// The volume explains itself (docs/durability.md, "Rebuilding the catalog"): two cameras recorded
// with `vigil record` from real H.264 clips of different sizes, vigild stopped, the catalog lost,
// and then (a) the embedded catalog deleted and vigild restarted: it rebuilds at start; (b) an
// external database dropped and created again, `vigil catalog rebuild` run (twice: the second run
// changes nothing), vigild started. Either way the catalog says what it said before (cameras by
// name, stream ids, codec, dimensions, extradata, start times, segments with their frames and GOP
// index), and every recorded frame exports again, packet for packet and at the same times.
// In (a) a third camera has AAC audio: its audio stream comes back with its sample rate and
// channels, from the description its segment headers carry.
#include <signal.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <pqxx/pqxx>

#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

namespace {

struct Camera {
  std::string name;
  std::filesystem::path clip;
  std::vector<test::ProbedPacket> source;
  std::int64_t audio_packets = 0;
};

// A test pattern clip of SECONDS at SIZE (WxH), 25 fps, a keyframe per second, no B-frames; with
// AUDIO_HZ > 0, stereo AAC at that rate beside it.
Camera make_camera(const std::filesystem::path& dir, const std::string& name, const std::string& size, int seconds,
                   int audio_hz = 0) {
  std::filesystem::create_directories(dir / name);
  Camera c{name, dir / name / "clip.mp4", {}};
  std::vector<std::string> args = {
      "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=" + size + ":rate=25"};
  if (audio_hz > 0) {
    args.insert(args.end(), {"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=" + std::to_string(audio_hz), "-c:a",
                             "aac", "-ac", "2"});
  }
  args.insert(args.end(), {"-t", std::to_string(seconds), "-c:v", "libx264", "-g", "25", "-bf", "0", "-pix_fmt",
                           "yuv420p", c.clip.string()});
  REQUIRE(test::run_to_exit("/usr/bin/ffmpeg", args, dir / name / "ffmpeg.log").status == 0);
  c.source = test::probe_packets(c.clip, dir / name);
  REQUIRE(c.source.size() == static_cast<std::size_t>(25 * seconds));
  if (audio_hz > 0) {
    const auto packets = dir / name / "audio.csv";
    REQUIRE(test::run_to_exit("/usr/bin/ffprobe",
                              {"-v", "error", "-select_streams", "a:0", "-show_entries", "packet=pts_time", "-of",
                               "csv=p=0", "-o", packets.string(), c.clip.string()},
                              dir / name / "ffprobe.log")
                .status == 0);
    std::ifstream in(packets);
    for (std::string line; std::getline(in, line);) c.audio_packets += line.empty() ? 0 : 1;
    REQUIRE(c.audio_packets > 0);
  }
  return c;
}

void record(const test::VigildProcess& d, const Camera& c, const std::filesystem::path& dir) {
  auto rec =
      test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", c.name, c.clip.string(), "--fast"},
                        dir / (c.name + ".rec.log"));
  INFO(rec.output);
  REQUIRE(rec.status == 0);
}

std::int64_t closed_frames(const std::string& db) {
  pqxx::connection conn(db);
  pqxx::nontransaction q(conn);
  return q.exec1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE state = 'closed'")[0].as<std::int64_t>();
}

// What the catalog says about the recordings, as text: what a rebuild must give back. Not the
// streams' state and end (how a stream ended is not on the volume) nor bookkeeping times.
std::string catalog_facts(const std::string& db) {
  pqxx::connection conn(db);
  pqxx::nontransaction q(conn);
  std::string out;
  const auto add = [&out](const pqxx::result& rows) {
    for (const auto& row : rows) {
      for (const auto& f : row) out += (f.is_null() ? std::string("NULL") : f.as<std::string>()) + " ";
      out += "\n";
    }
  };
  add(q.exec(
      "SELECT c.name, s.id, s.role, s.media_kind, s.codec, s.width, s.height, encode(s.extradata, 'hex'), "
      "s.started_at_us, s.declared_rate_bps, s.sample_rate_hz, s.channels FROM streams s JOIN cameras c ON c.id = s.camera_id ORDER BY s.id"));
  // An audio segment's GOP index is not compared: recording indexes at most one of its packets a
  // second, recovery every one (docs/media.md, "Audio": larger, equally valid).
  add(q.exec(
      "SELECT g.id, g.stream_id, g.state, g.start_us, g.end_us, g.frame_count, g.data_bytes, "
      "CASE WHEN s.media_kind = 'audio' THEN NULL ELSE i.gop_count END, "
      "CASE WHEN s.media_kind = 'audio' THEN NULL ELSE encode(i.blob, 'hex') END, "
      "(SELECT string_agg(e.ordinal || ':' || e.volume_offset_bytes, ',' ORDER BY e.ordinal) "
      "FROM segment_extents e WHERE e.segment_id = g.id) FROM segments g JOIN gop_index i ON i.segment_id = g.id "
      "JOIN streams s ON s.id = g.stream_id ORDER BY g.id"));
  return out;
}

// The camera's whole recording as MP4 over HTTP, probed: packet sizes, keyframes, times.
std::vector<test::ProbedPacket> export_camera(const test::VigildProcess& d, const std::string& name,
                                              const std::filesystem::path& dir, const std::string& tag) {
  const auto now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  // --fast records faster than real time: the recording's wall times run ahead of now.
  auto r = test::http_request(d.http(), "GET",
                              "/api/v1/cameras/" + name + "/export.mp4?from=-1h&to=@" + std::to_string(now_s + 3600));
  INFO(r.head);
  REQUIRE(r.status == 200);
  const auto file = dir / (name + "." + tag + ".mp4");
  std::ofstream(file, std::ios::binary) << r.body;
  return test::probe_packets(file, dir);
}

void check_same_packets(const std::vector<test::ProbedPacket>& got, const std::vector<test::ProbedPacket>& before,
                        const std::vector<test::ProbedPacket>& source) {
  REQUIRE(got.size() == source.size());
  REQUIRE(before.size() == source.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("packet " << i);
    CHECK(got[i].size == source[i].size);
    CHECK(got[i].key == source[i].key);
    CHECK(got[i].pts == before[i].pts);
  }
}

struct Recorded {
  std::string facts;
  std::map<std::string, std::vector<test::ProbedPacket>> exported;
};

// Records both cameras on D, waits until every frame is in a closed segment of DB, exports each.
Recorded record_cameras(const test::VigildProcess& d, const std::vector<Camera>& cameras, const std::string& db,
                        const std::filesystem::path& dir) {
  std::int64_t frames = 0;
  for (const auto& c : cameras) {
    record(d, c, dir);
    frames += static_cast<std::int64_t>(c.source.size()) + c.audio_packets;
  }
  REQUIRE(test::eventually([&] { return closed_frames(db) == frames; }));
  Recorded r;
  r.facts = catalog_facts(db);
  for (const auto& c : cameras) r.exported[c.name] = export_camera(d, c.name, dir, "before");
  return r;
}

void check_rebuilt(const test::VigildProcess& d, const std::vector<Camera>& cameras, const std::string& db,
                   const Recorded& before, const std::filesystem::path& dir) {
  const auto facts = catalog_facts(db);
  INFO("before:\n" << before.facts << "after:\n" << facts);
  CHECK(facts == before.facts);
  CHECK_THAT(facts, ContainsSubstring("gate"));
  CHECK_THAT(facts, ContainsSubstring("yard"));
  {
    pqxx::connection conn(db);
    pqxx::nontransaction q(conn);
    // The codec parameters came back from the segment headers, not from a default.
    CHECK(q.exec1("SELECT s.width FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = 'yard'")[0]
              .as<int>() == 160);
    CHECK(q.exec1("SELECT s.width FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = 'gate'")[0]
              .as<int>() == 320);
    CHECK(
        q.exec1("SELECT count(*) FROM streams WHERE media_kind = 'video' AND (extradata IS NULL OR length(extradata) < "
                "8)")[0]
            .as<int>() == 0);
    // An audio stream's rate and channels came back too (the catalog said so before: the facts).
    const auto audio = q.exec(
        "SELECT s.codec, s.sample_rate_hz, s.channels FROM streams s JOIN cameras c ON c.id = "
        "s.camera_id WHERE s.media_kind = 'audio'");
    const bool with_audio =
        std::any_of(cameras.begin(), cameras.end(), [](const Camera& c) { return c.audio_packets > 0; });
    REQUIRE(audio.size() == (with_audio ? 1u : 0u));
    if (with_audio) {
      CHECK(audio[0][0].as<std::string>() == "aac");
      CHECK(audio[0][1].as<int>() == 16000);
      CHECK(audio[0][2].as<int>() == 2);
    }
    CHECK(q.exec1("SELECT count(*) FROM streams WHERE state <> 'interrupted'")[0].as<int>() == 0);
  }
  for (const auto& c : cameras) {
    INFO("camera " << c.name);
    check_same_packets(export_camera(d, c.name, dir, "after"), before.exported.at(c.name), c.source);
  }
}

}  // namespace

TEST_CASE("vigild started on an empty embedded catalog rebuilds it from its volume", "[rebuild][vigild][ffmpeg]") {
  test::TempDir dir;
  const std::vector<Camera> cameras = {make_camera(dir.path(), "gate", "320x240", 4),
                                       make_camera(dir.path(), "yard", "160x120", 3),
                                       make_camera(dir.path(), "porch", "160x120", 3, 16000)};
  const auto args = test::sim_volume_args(dir.path(), test::make_sim_profile(dir.path()));
  const auto data = dir.path() / "data";
  const auto db = "host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil";
  Recorded before;
  {
    test::VigildProcess d(data, args);
    REQUIRE(d.wait_ready());
    before = record_cameras(d, cameras, db, dir.path());
    REQUIRE(d.stop(SIGTERM) == 0);
  }
  // The catalog is gone: its cluster deleted with everything in it.
  std::filesystem::remove_all(data / "pg");

  test::VigildProcess d(data, args);
  REQUIRE(d.wait_ready());
  INFO(d.output());
  CHECK_THAT(d.output(), ContainsSubstring("stream rebuilt from the volume"));
  CHECK_THAT(d.output(), ContainsSubstring("streams_rebuilt=4"));  // porch's video and audio among them
  CHECK_THAT(d.output(), ContainsSubstring("reclaimed=0"));
  check_rebuilt(d, cameras, db, before, dir.path());
}

TEST_CASE("vigil catalog rebuild fills a new external catalog from the volume, once", "[rebuild][vigild][ffmpeg]") {
  test::TempDir dir;
  const std::vector<Camera> cameras = {make_camera(dir.path(), "gate", "320x240", 4),
                                       make_camera(dir.path(), "yard", "160x120", 3)};
  const auto db = test::shared_cluster().create_database("catalog_rebuild");
  auto args = test::sim_volume_args(dir.path(), test::make_sim_profile(dir.path()));
  args.insert(args.end(), {"--db", db});
  const auto data = dir.path() / "data";
  const auto volume = dir.path() / "vol";
  Recorded before;
  {
    test::VigildProcess d(data, args);
    REQUIRE(d.wait_ready());
    before = record_cameras(d, cameras, db, dir.path());
    // The volume is vigild's while it runs: the rebuild refuses to touch it.
    auto busy = test::run_to_exit(VIGIL_CLI_PATH, {"catalog", "rebuild", "--volume", volume.string(), "--db", db},
                                  dir.path() / "busy.log");
    CHECK(busy.status == 3);
    CHECK_THAT(busy.output, ContainsSubstring("is vigild running"));
    REQUIRE(d.stop(SIGTERM) == 0);
  }
  {  // The database dropped and created again, empty.
    auto name = db.substr(db.find("dbname=") + 7);
    name = name.substr(0, name.find(' '));
    if (name.size() >= 2 && name.front() == '\'') name = name.substr(1, name.size() - 2);
    pqxx::connection admin(test::shared_cluster().conninfo());
    pqxx::nontransaction q(admin);
    q.exec0("DROP DATABASE " + q.quote_name(name));
    q.exec0("CREATE DATABASE " + q.quote_name(name));
  }
  auto usage =
      test::run_to_exit(VIGIL_CLI_PATH, {"catalog", "rebuild", "--volume", volume.string()}, dir.path() / "usage.log");
  CHECK(usage.status == 2);
  CHECK_THAT(usage.output, ContainsSubstring("--db"));

  auto first = test::run_to_exit(VIGIL_CLI_PATH, {"catalog", "rebuild", "--volume", volume.string(), "--db", db},
                                 dir.path() / "rebuild1.log");
  INFO(first.output);
  REQUIRE(first.status == 0);
  CHECK_THAT(first.output, ContainsSubstring(": camera gate, h264 320x240"));
  CHECK_THAT(first.output, ContainsSubstring("camera yard, h264 160x120"));
  CHECK_THAT(first.output, ContainsSubstring("2 stream(s), 2 camera(s), 175 frame(s)"));
  const auto rebuilt = catalog_facts(db);
  CHECK(rebuilt == before.facts);

  auto second = test::run_to_exit(VIGIL_CLI_PATH, {"catalog", "rebuild", "--volume", volume.string(), "--db", db},
                                  dir.path() / "rebuild2.log");
  INFO(second.output);
  REQUIRE(second.status == 0);
  CHECK_THAT(second.output, ContainsSubstring("rebuilt: 0 segment(s), 0 stream(s), 0 camera(s), 0 frame(s)"));
  CHECK_THAT(second.output, ContainsSubstring("already indexes"));
  CHECK(catalog_facts(db) == rebuilt);

  test::VigildProcess d(data, args);
  REQUIRE(d.wait_ready());
  INFO(d.output());
  check_rebuilt(d, cameras, db, before, dir.path());
}
