// Any range, whole (issue 19): a camera's range is delivered whole however it was recorded.
// - Three recordings of one camera, the second on another volume than the first (a disk
//   change) and the third a reconnect on the same volume: one MP4 export and one `vigil play`
//   file with every acknowledged frame, in order, the time holes between them kept.
// - A reconnect at another resolution: the export is the first part and names the rest
//   (X-Vigil-Parts, Link rel="next", GET …/export/parts); each part plays; together they are
//   every frame. `vigil play` writes the second part to FILE.part2.EXT.
// - An export larger than --export-memory-bytes streams as fragmented MP4 (chunked, several
//   fragments), packet for packet the recording.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <pqxx/pqxx>

#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

namespace {

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// From an hour ago to an hour from now: every recording of the test.
std::string whole_range() {
  const auto now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return "from=@" + std::to_string(now_s - 3600) + "&to=@" + std::to_string(now_s + 3600);
}

// Records CLIP as camera NAME in real time (each recording's times follow the previous one's).
void record(const test::VigildProcess& d, const std::string& name, const std::filesystem::path& clip,
            const std::filesystem::path& log) {
  auto rec = test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", name, clip.string()}, log);
  INFO(rec.output);
  REQUIRE(rec.status == 0);
}

// `vigil play` of the whole test range of NAME into OUT.
test::ExitResult play(const test::VigildProcess& d, const std::string& name, const std::filesystem::path& out,
                      const std::filesystem::path& log) {
  const auto now_s = std::time(nullptr);
  return test::run_to_exit(VIGIL_CLI_PATH,
                           {"--server", d.wire(), "play", "--stream", name, "--from",
                            "@" + std::to_string(now_s - 3600), "--to", "@" + std::to_string(now_s + 3600), "--rate",
                            "16", "-o", out.string()},
                           log);
}

// The packets of OUT are SOURCE's, in order (size and key flag), on a rising time.
void check_packets(const std::vector<test::ProbedPacket>& out, const std::vector<test::ProbedPacket>& source) {
  REQUIRE(out.size() == source.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    INFO("packet " << i);
    CHECK(out[i].size == source[i].size);
    CHECK(out[i].key == source[i].key);
    if (i > 0) CHECK(out[i].pts > out[i - 1].pts);
  }
}

std::vector<test::ProbedPacket> concat(std::initializer_list<const std::vector<test::ProbedPacket>*> parts) {
  std::vector<test::ProbedPacket> all;
  for (const auto* p : parts) all.insert(all.end(), p->begin(), p->end());
  return all;
}

// Recordings admitted on vigild's disks now (GET /api/v1/disks).
std::int64_t admitted_recordings(const test::VigildProcess& d) {
  auto r = test::http_request(d.http(), "GET", "/api/v1/disks");
  REQUIRE(r.status == 200);
  const auto body = r.json();
  std::int64_t n = 0;
  for (const auto& disk : body.at("disks").as_array()) {
    if (const auto* live = disk.as_object().if_contains("admitted"))
      n += live->at("recording").to_number<std::int64_t>();
  }
  return n;
}

std::string catalog(const std::filesystem::path& data) {
  return "host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil";
}

}  // namespace

TEST_CASE("one camera over two volumes and three recordings: one export, one playback, every frame",
          "[http][media][ffmpeg][volume]") {
  test::TempDir dir;
  const auto clip = test::make_h264_clip(dir.path(), 2);  // 50 packets
  const auto source = test::probe_packets(clip, dir.path());
  REQUIRE(source.size() == 50);
  const auto profile = test::make_sim_profile(dir.path());
  std::vector<std::string> args;
  for (int i = 0; i < 2; ++i)
    args.insert(args.end(), {"--volume", (dir.path() / ("vol" + std::to_string(i))).string()});
  args.insert(args.end(), {"--volume-size", std::to_string(128 << 20), "--extent-bytes", std::to_string(4 << 20),
                           "--profile", profile.string(), "--cycle-ms", "200", "--model-check-cycles", "0",
                           "--no-camera-pull", "--stall-timeout", "0"});
  const auto data = dir.path() / "data";
  test::VigildProcess d(data, args);
  REQUIRE(d.wait_ready());
  INFO(d.output());

  // A recording goes to the disk with the most share left: a hog that takes most of one disk
  // steers the camera to the other one.
  std::uint64_t largest = 0;
  {
    client::WireClient probe(d.wire(), 20s);
    probe.hello("whole-range test", test::token());
    probe.send(test::open_record("probe", 100'000'000'000));
    auto r = probe.receive();
    REQUIRE(r.msg.has_refuse());
    largest = r.msg.refuse().largest_rate_bps();
    REQUIRE(largest > 0);
  }
  auto hog1 = std::make_unique<client::WireClient>(d.wire(), 20s);
  test::open_admitted(*hog1, "hog1", largest * 3 / 4);  // disk H
  record(d, "gate", clip, dir.path() / "rec1.log");     // disk O
  client::WireClient hog2(d.wire(), 20s);
  test::open_admitted(hog2, "hog2", largest * 3 / 4);  // disk O: H is the fuller
  hog1.reset();                                        // H is empty again
  // Its share is released when vigild sees the connection close: wait for that, or the next
  // recording could find both disks equally full.
  REQUIRE(test::eventually([&] { return admitted_recordings(d) == 1; }));
  record(d, "gate", clip, dir.path() / "rec2.log");  // disk H: another volume
  record(d, "gate", clip, dir.path() / "rec3.log");  // disk H: a reconnect
  test::wait_for_closed_frames(data, 150);
  double recorded_span_s = 0;  // from the first frame of the first recording to the end of the last
  {
    pqxx::connection c(catalog(data));
    pqxx::nontransaction q(c);
    const auto row = q.exec1(
        "SELECT count(DISTINCT g.volume_id), count(DISTINCT g.stream_id), max(g.end_us) - min(g.start_us) "
        "FROM segments g JOIN streams s ON s.id = g.stream_id JOIN cameras c ON c.id = s.camera_id "
        "WHERE c.name = 'gate'");
    REQUIRE(row[0].as<int>() == 2);
    REQUIRE(row[1].as<int>() == 3);
    recorded_span_s = static_cast<double>(row[2].as<std::int64_t>()) / 1e6;
  }
  const auto all = concat({&source, &source, &source});

  auto full = test::http_request(d.http(), "GET", "/api/v1/cameras/gate/export.mp4?" + whole_range());
  INFO(full.head);
  REQUIRE(full.status == 200);
  CHECK(full.header("X-Vigil-Parts") == "1");
  CHECK(full.header("Link").empty());
  write_file(dir.path() / "full.mp4", full.body);
  check_packets(test::probe_packets(dir.path() / "full.mp4", dir.path()), all);
  // The holes between the recordings are kept: the file lasts from the first frame to the end of
  // the last (how long the holes are depends on how fast the recorder ran: the catalog says).
  const auto stream = test::probe_stream(dir.path() / "full.mp4", dir.path());
  INFO("recorded span " << recorded_span_s << " s");
  CHECK(std::abs(test::probe_field(stream, "duration") - recorded_span_s) < 0.1);

  auto played = play(d, "gate", dir.path() / "all.mkv", dir.path() / "play.log");
  INFO(played.output);
  REQUIRE(played.status == 0);
  CHECK_THAT(played.output, ContainsSubstring("150 packets"));
  CHECK(!std::filesystem::exists(dir.path() / "all.part2.mkv"));
  check_packets(test::probe_packets(dir.path() / "all.mkv", dir.path()), all);
}

TEST_CASE("a reconnect at another resolution: the parts are named, each plays, together every frame",
          "[http][media][ffmpeg]") {
  test::TempDir dir;
  const auto big = test::make_h264_clip(dir.path(), 2, "320x240", "big.mp4");
  const auto small = test::make_h264_clip(dir.path(), 2, "160x120", "small.mp4");
  const auto big_packets = test::probe_packets(big, dir.path());
  const auto small_packets = test::probe_packets(small, dir.path());
  const auto profile = test::make_sim_profile(dir.path());
  const auto data = dir.path() / "data";
  test::VigildProcess d(data, test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  INFO(d.output());
  record(d, "door", big, dir.path() / "rec1.log");
  record(d, "door", small, dir.path() / "rec2.log");
  record(d, "door", big, dir.path() / "rec3.log");
  test::wait_for_closed_frames(data, 150);

  // The first part, and the names of the rest.
  auto first = test::http_request(d.http(), "GET", "/api/v1/cameras/door/export.mp4?" + whole_range());
  INFO(first.head);
  REQUIRE(first.status == 200);
  CHECK(first.header("X-Vigil-Parts") == "3");
  write_file(dir.path() / "p1.mp4", first.body);
  CHECK_THAT(test::probe_stream(dir.path() / "p1.mp4", dir.path()), ContainsSubstring("width=320"));
  check_packets(test::probe_packets(dir.path() / "p1.mp4", dir.path()), big_packets);

  // Following Link rel="next" to the end: every part, each its own resolution.
  std::vector<std::vector<test::ProbedPacket>> parts{test::probe_packets(dir.path() / "p1.mp4", dir.path())};
  std::string link = first.header("Link");
  for (int n = 2; !link.empty(); ++n) {
    REQUIRE(n <= 3);
    REQUIRE_THAT(link, ContainsSubstring("rel=\"next\""));
    const auto target = link.substr(1, link.find('>') - 1);
    auto part = test::http_request(d.http(), "GET", target);
    INFO(target << "\n" << part.head);
    REQUIRE(part.status == 200);
    const auto file = dir.path() / ("p" + std::to_string(n) + ".mp4");
    write_file(file, part.body);
    CHECK_THAT(test::probe_stream(file, dir.path()), ContainsSubstring(n == 2 ? "width=160" : "width=320"));
    parts.push_back(test::probe_packets(file, dir.path()));
    link = part.header("Link");
  }
  REQUIRE(parts.size() == 3);
  check_packets(parts[1], small_packets);
  check_packets(parts[2], big_packets);

  // The list of parts.
  auto listed = test::http_request(d.http(), "GET", "/api/v1/cameras/door/export/parts?" + whole_range());
  INFO(listed.body);
  REQUIRE(listed.status == 200);
  const auto parsed = listed.json();
  const auto& list = parsed.at("parts").as_array();
  REQUIRE(list.size() == 3);
  CHECK(list[0].at("width").as_int64() == 320);
  CHECK(list[1].at("width").as_int64() == 160);
  CHECK(list[1].at("codec").as_string() == "h264");
  CHECK(list[1].at("from_us").as_int64() >= list[0].at("to_us").as_int64());
  auto second = test::http_request(d.http(), "GET", std::string(list[1].at("export").as_string()));
  REQUIRE(second.status == 200);
  write_file(dir.path() / "listed2.mp4", second.body);
  check_packets(test::probe_packets(dir.path() / "listed2.mp4", dir.path()), small_packets);

  // HLS: one playlist, a discontinuity and a new init segment (EXT-X-MAP) at each change.
  auto m3u8 = test::http_request(d.http(), "GET", "/api/v1/cameras/door/hls.m3u8?" + whole_range());
  INFO(m3u8.body);
  REQUIRE(m3u8.status == 200);
  std::vector<std::string> maps;
  std::size_t discontinuities = 0;
  for (std::size_t at = 0; (at = m3u8.body.find('#', at)) != std::string::npos; ++at) {
    if (m3u8.body.compare(at, 13, "#EXT-X-MAP:UR") == 0) {
      const auto q = m3u8.body.find('"', at) + 1;
      maps.push_back(m3u8.body.substr(q, m3u8.body.find('"', q) - q));
    }
    if (m3u8.body.compare(at, 21, "#EXT-X-DISCONTINUITY\n") == 0) ++discontinuities;
  }
  REQUIRE(maps.size() == 3);
  CHECK(discontinuities == 2);
  for (std::size_t i = 0; i < maps.size(); ++i) {
    auto init = test::http_request(d.http(), "GET", "/api/v1/cameras/door/" + maps[i]);
    REQUIRE(init.status == 200);
    write_file(dir.path() / ("init" + std::to_string(i) + ".mp4"), init.body);
    CHECK_THAT(test::probe_stream(dir.path() / ("init" + std::to_string(i) + ".mp4"), dir.path()),
               ContainsSubstring(i == 1 ? "width=160" : "width=320"));
  }
  const auto hls = test::probe_packets("http://" + d.http() + "/api/v1/cameras/door/hls.m3u8?" + whole_range() +
                                           "&access_token=" + test::token(),
                                       dir.path());
  CHECK(hls.size() == 150);

  // vigil play: a file per part.
  auto played = play(d, "door", dir.path() / "door.mkv", dir.path() / "play.log");
  INFO(played.output);
  REQUIRE(played.status == 0);
  CHECK_THAT(played.output, ContainsSubstring("150 packets"));
  check_packets(test::probe_packets(dir.path() / "door.mkv", dir.path()), big_packets);
  check_packets(test::probe_packets(dir.path() / "door.part2.mkv", dir.path()), small_packets);
  check_packets(test::probe_packets(dir.path() / "door.part3.mkv", dir.path()), big_packets);
  // To standard output a player takes one part: it stops at the change and says where to go on.
  auto piped = test::run_to_exit(VIGIL_CLI_PATH,
                                 {"--server", d.wire(), "play", "--stream", "door", "--from", "-1h", "--to",
                                  "@" + std::to_string(std::time(nullptr) + 3600), "--rate", "16", "-o", "-"},
                                 dir.path() / "pipe.log");
  CHECK(piped.status == 1);
  CHECK_THAT(piped.output, ContainsSubstring("the codec parameters change at @"));
}

TEST_CASE("an export larger than the in-memory cap streams as fragmented MP4, every frame", "[http][media][ffmpeg]") {
  test::TempDir dir;
  auto cam = test::recorded_camera(dir.path(), "yard", 8);  // 200 packets
  const auto range = whole_range();
  auto in_memory = test::http_request(cam.vigild->http(), "GET", "/api/v1/cameras/yard/export.mp4?" + range);
  REQUIRE(in_memory.status == 200);
  REQUIRE(in_memory.body.size() > (64u << 10));
  CHECK(in_memory.header("X-Vigil-Export").empty());
  // The same recording, served by a vigild whose in-memory cap is below it.
  REQUIRE(cam.vigild->stop(SIGTERM) == 0);
  cam.vigild.reset();
  auto args = test::sim_volume_args(dir.path(), dir.path() / "wd.json");
  args.insert(args.end(), {"--export-memory-bytes", std::to_string(64 << 10)});
  test::VigildProcess d(cam.data, args);
  REQUIRE(d.wait_ready());
  INFO(d.output());

  auto streamed = test::http_request(d.http(), "GET", "/api/v1/cameras/yard/export.mp4?" + range);
  INFO(streamed.head);
  REQUIRE(streamed.status == 200);
  CHECK(streamed.header("X-Vigil-Export") == "fragmented");
  CHECK(streamed.header("Transfer-Encoding") == "chunked");
  CHECK(streamed.header("Content-Length").empty());
  CHECK(streamed.header("Accept-Ranges") == "none");
  CHECK(streamed.chunked_complete);
  // Written as it was read: a fragment per batch of GOPs (8 KiB batches: a GOP each).
  CHECK(streamed.chunks >= 4);
  write_file(dir.path() / "streamed.mp4", streamed.body);
  check_packets(test::probe_packets(dir.path() / "streamed.mp4", dir.path()), cam.source);
  const auto stream = test::probe_stream(dir.path() / "streamed.mp4", dir.path());
  CHECK(std::abs(test::probe_field(stream, "duration") - 8.0) < 0.5);
  // A Range request gets the whole file (200): a streamed export has no byte ranges.
  auto ranged =
      test::http_request(d.http(), "GET", "/api/v1/cameras/yard/export.mp4?" + range, "Range: bytes=0-99\r\n");
  CHECK(ranged.status == 200);
  CHECK(ranged.body == streamed.body);
  // HEAD: the head alone.
  auto head = test::http_request(d.http(), "HEAD", "/api/v1/cameras/yard/export.mp4?" + range);
  CHECK(head.status == 200);
  CHECK(head.header("X-Vigil-Export") == "fragmented");
  CHECK(head.body.empty());
}
