// A dead node's footage from its archive copies (docs/nodes.md, "A holder that is down"): two vigild
// nodes on one PostgreSQL, both with the archive tier on SeaweedFS, a pulled GStreamer RTSP camera
// in 1-s segments copied as they close. While the node recording it is up, the other node's front
// door proxies to it (its ETag: no copy read). After kill -9 of that node, once its lease has
// expired, the other node serves its copied footage itself from the copies: the export is byte for
// byte the one the dead node gave before it died (with another ETag: built again, from the store),
// its HLS plays in ffprobe, the thumbnail is the same JPEG, and `vigil play` over the wire plays
// the same packets. A range reaching into what has no copy — segments closed after the camera's
// archive_after_s was raised to an hour, and the segment the node was still writing — is a 503
// naming the node and the spans no copy holds.
// Skipped, saying so, when SeaweedFS is not built (deploy/seaweedfs.sh). Label "s3".
#include <signal.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <iostream>
#include <string>

#include "tests/server/two_nodes.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/seaweedfs_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;
using test::eventually;

namespace {

std::string export_of(const std::string& camera, std::int64_t from_us, std::int64_t to_us) {
  return "/api/v1/cameras/" + camera + "/export.mp4?from=" + test::media_time(from_us) +
         "&to=" + test::media_time(to_us);
}

// `vigil play` of CAMERA over [FROM_US, TO_US) from the node at WIRE, at 8x: its packets.
std::vector<test::ProbedPacket> play(const std::string& wire, const std::string& camera, std::int64_t from_us,
                                     std::int64_t to_us, const std::filesystem::path& dir, const std::string& name) {
  auto r = test::run_to_exit(VIGIL_CLI_PATH,
                             {"--server", wire, "play", "--stream", camera, "--from", test::media_time(from_us), "--to",
                              test::media_time(to_us), "--rate", "8", "-o", (dir / (name + ".mp4")).string()},
                             dir / (name + ".log"));
  INFO(r.output);
  REQUIRE(r.status == 0);
  return test::probe_packets(dir / (name + ".mp4"), dir);
}

}  // namespace

TEST_CASE(
    "a dead node's copied footage is served by the other node from the archive; what has no copy is a 503 "
    "naming the node and the span",
    "[vigild][archive][s3][nodes][front_door][rtsp]") {
  const std::string binary = test::seaweedfs_binary();
  if (binary.empty()) SKIP("SeaweedFS is not built: run deploy/seaweedfs.sh (or set VIGIL_SEAWEEDFS)");
  test::SeaweedFs weed(binary);
  REQUIRE(weed.make_bucket("vigil-archive"));
  test::TempDir secrets;
  const auto credentials = test::seaweed_credentials_file(secrets.path());

  // 1-s segments (a keyframe a second), each copied as soon as it closes.
  test::TwoNodes n("dead_node_archive", 1,
                   {"--segment-max", "1", "--archive-endpoint", "127.0.0.1:" + std::to_string(weed.s3_port),
                    "--archive-credentials", credentials.string(), "--archive-poll-ms", "200"});
  // Named references, not a structured binding: lambdas below capture them (clang 14 refuses bindings).
  auto& dir = n.dir;
  auto& cat = n.cat;
  auto& a = n.a;
  auto& b = n.b;
  const auto logs = [&n] { n.logs(); };
  REQUIRE(
      eventually([&] { return cat.number("SELECT count(*) FROM nodes WHERE http_address IS NOT NULL") == 2; }, 30s));
  const bool placed = eventually(
      [&] { return !cat.names(test::recording_on("a")).empty() || !cat.names(test::recording_on("b")).empty(); }, 60s);
  if (!placed) logs();
  REQUIRE(placed);
  const bool on_a = !cat.names(test::recording_on("a")).empty();
  const std::string holder = on_a ? "a" : "b";
  auto& dying = on_a ? a : b;
  auto& door = on_a ? b : a;
  const std::string cam = "cam0";
  INFO("camera " << cam << " records on node " << holder);
  const std::string segs =
      "FROM segments g JOIN streams s ON s.id = g.stream_id JOIN cameras c ON c.id = s.camera_id "
      "JOIN disks d ON d.id = s.disk_id WHERE d.node = '" +
      holder + "' AND s.role = 'main' AND s.media_kind = 'video' AND c.name = '" + cam + "'";
  const std::string has_copy = "EXISTS (SELECT 1 FROM segment_copies k WHERE k.segment_id = g.id)";
  const std::string copied = " AND " + has_copy;

  // Five seconds of its footage closed and every one of those segments copied (verified: a row is
  // written only then).
  std::int64_t first_us = 0;
  const bool archived = eventually(
      [&] {
        first_us = cat.number("SELECT min(g.start_us) " + segs);
        if (first_us == 0) return false;
        const std::string early = " AND g.start_us < " + std::to_string(first_us + 5'000'000);
        return cat.number("SELECT max(g.end_us) " + segs + " AND g.state = 'closed'") > first_us + 5'000'000 &&
               cat.number("SELECT count(*) " + segs + early) > 0 &&
               cat.number("SELECT count(*) " + segs + early + copied) == cat.number("SELECT count(*) " + segs + early);
      },
      60s);
  if (!archived) logs();
  REQUIRE(archived);
  // From now on nothing of it is copied (the copier reads the camera's policy at every pass): the
  // segments closing from here on stay on the volume alone.
  REQUIRE(test::HttpApi{door->http()}.call("PATCH", "/api/v1/cameras/" + cam, R"({"archive_after_s":3600})").status ==
          200);
  const std::int64_t policy_us = test::wall_us();
  const std::int64_t from_us = first_us + 1'000'000, to_us = first_us + 4'000'000;
  const std::string range = export_of(cam, from_us, to_us);
  const std::string thumb =
      "/api/v1/cameras/" + cam + "/thumbnail.jpg?at=" + test::media_time(first_us + 2'500'000) + "&width=160";

  // While the holder is up: its own answers, and the other door proxies to it (the holder's ETag:
  // nothing is read from the store).
  const auto mine = test::http_request(dying->http(), "GET", range);
  REQUIRE(mine.status == 200);
  REQUIRE(mine.body.size() > 10000);
  const auto proxied = test::http_request(door->http(), "GET", range);
  REQUIRE(proxied.status == 200);
  CHECK(proxied.header("ETag") == mine.header("ETag"));
  CHECK(proxied.body == mine.body);
  const auto my_thumb = test::http_request(dying->http(), "GET", thumb);
  REQUIRE(my_thumb.status == 200);
  const auto my_play = play(dying->wire(), cam, from_us, to_us, dir.path(), "before");
  REQUIRE(my_play.size() >= 50);  // 3 s at 25 frames a second, from a keyframe

  // A segment closed that no copy will ever hold, then kill -9 of the holder; once its lease has
  // expired, it is down.
  const std::string uncopied = segs + " AND g.state = 'closed' AND g.start_us > " + std::to_string(policy_us);
  REQUIRE(eventually([&] { return cat.number("SELECT count(*) " + uncopied) > 0; }, 30s));
  REQUIRE(::kill(dying->pid(), SIGKILL) == 0);
  dying->stop(SIGKILL);
  REQUIRE(eventually(
      [&] {
        return cat.number("SELECT count(*) FROM nodes WHERE node = '" + holder +
                          "' AND lease_until < clock_timestamp()") == 1;
      },
      30s));

  {  // The export, from the copies: the dead node's bytes, built again (another ETag).
    const auto served = test::http_request(door->http(), "GET", range);
    INFO(served.head << served.body.substr(0, 300));
    if (served.status != 200) logs();
    REQUIRE(served.status == 200);
    CHECK(served.header("ETag") != mine.header("ETag"));
    CHECK(served.header("X-Vigil-Range-Us") == mine.header("X-Vigil-Range-Us"));
    CHECK(served.body.size() == mine.body.size());
    CHECK((served.body == mine.body));
  }
  {  // The thumbnail: the same JPEG.
    const auto served = test::http_request(door->http(), "GET", thumb);
    INFO(served.body.substr(0, 300));
    REQUIRE(served.status == 200);
    CHECK(served.header("Content-Type") == "image/jpeg");
    CHECK((served.body == my_thumb.body));
  }
  {  // HLS: the playlist from the catalog, every media segment from the copies; it plays.
    const std::string url = "http://" + door->http() + "/api/v1/cameras/" + cam +
                            "/hls.m3u8?from=" + test::media_time(from_us) + "&to=" + test::media_time(to_us) +
                            "&access_token=" + door->token();
    const auto packets = test::probe_packets(url, dir.path());
    CHECK(packets.size() >= 50);
    if (!packets.empty()) CHECK(packets.front().key);
  }
  {  // Wire playback: the same packets as the dead node played.
    const auto served = play(door->wire(), cam, from_us, to_us, dir.path(), "after");
    REQUIRE(served.size() == my_play.size());
    for (std::size_t i = 0; i < served.size(); ++i) {
      INFO("packet " << i);
      CHECK(served[i].size == my_play[i].size);
      CHECK(served[i].key == my_play[i].key);
    }
  }

  // What no copy holds: closed segments not copied, and the segment it was writing when it died
  // (open in the catalog, if its row was in; never copied). A range reaching into them is a 503
  // naming the node and those spans — never a shorter export. (It ends before the camera's
  // footage on the other node, seconds after the kill: one node's range.)
  const std::int64_t first_missing_us =
      cat.number("SELECT min(g.start_us) " + segs + " AND g.state = 'closed' AND NOT " + has_copy);
  REQUIRE(first_missing_us > to_us);
  REQUIRE(cat.number("SELECT count(*) " + uncopied + copied) == 0);
  const std::int64_t until_us = cat.number("SELECT max(g.end_us) " + segs) + 100'000;
  const auto missing = test::http_request(door->http(), "GET", export_of(cam, from_us, until_us));
  INFO(missing.body);
  std::cout << "dead node: a range past its copies answers " << missing.status << " " << missing.body << "\n";
  CHECK(missing.status == 503);
  CHECK(missing.body.find("node '" + holder + "' is down") != std::string::npos);
  CHECK(missing.body.find("the archive holds no copy of its footage from_us=" + std::to_string(first_missing_us)) !=
        std::string::npos);
  CHECK(missing.body.find("(not copied yet)") != std::string::npos);
  const std::int64_t open_from_us = cat.number("SELECT max(g.start_us) " + segs + " AND g.state = 'open'");
  if (open_from_us != 0) {
    const std::int64_t open_to_us = cat.number("SELECT max(g.end_us) " + segs + " AND g.state = 'open'");
    CHECK(missing.body.find("from_us=" + std::to_string(open_from_us) + " to_us=" + std::to_string(open_to_us) +
                            " (the segment it was still writing: never copied)") != std::string::npos);
  }
  // Only the copied span asked: served, as above.
  CHECK(test::http_request(door->http(), "GET", export_of(cam, from_us, first_missing_us)).status == 200);
}
