// One front door (docs/nodes.md): any node's HTTP API answers for any camera, end to end with real
// processes on loopback — two recording nodes and a front-door vigild without volumes on one
// PostgreSQL catalog, cameras pulled from the GStreamer RTSP test camera. Media of a segment on
// node a's volume asked of node b (or of the front door) is proxied to a: the export is the same
// bytes a answers itself, HLS through b plays in ffprobe. With a killed (kill -9) its footage is a
// 503 naming a, while what b records of a's camera after the failover is served at once by every
// front door; a restarted, its recovery extends its last segment and the 'failover' gap then
// starts where a's footage ends, and that footage plays through b. The playback proxy, given only
// the front door, learns the nodes from the catalog and serves on without it.
#include <signal.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <fstream>
#include <iostream>

#include "tests/server/two_nodes.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/proxy_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;
using test::eventually;
using namespace test;

namespace {

std::string export_of(const std::string& camera, std::int64_t from_us, std::int64_t to_us) {
  return "/api/v1/cameras/" + camera + "/export.mp4?from=" + test::media_time(from_us) +
         "&to=" + test::media_time(to_us);
}

// The failover gap of CAMERA: "start_us,end_us" as numbers (0 when there is none).
std::pair<std::int64_t, std::int64_t> failover_gap(Catalog& cat, const std::string& camera) {
  const std::string of =
      "FROM gaps g JOIN streams s ON s.id = g.stream_id JOIN cameras c ON c.id = s.camera_id "
      "WHERE g.reason = 'failover' AND c.name = '" +
      camera + "'";
  return {cat.number("SELECT min(g.start_us) " + of), cat.number("SELECT min(g.end_us) " + of)};
}

}  // namespace

TEST_CASE(
    "one front door: media on another node's volume is proxied to it; a dead holder is a 503 naming it; "
    "its return shortens the failover gap",
    "[nodes][front_door][camera][rtsp][integration]") {
  // Exports over 64 KiB stream from the node that builds them (fragmented MP4, chunked, no
  // length): a front door relays them chunk by chunk as they arrive, never whole.
  const std::vector<std::string> streamed{"--export-memory-bytes", "65536"};
  TwoNodes n("front_door", 2, streamed);
  auto& [dir, db, profile, camera, a, b, cat] = n;
  const auto logs = [&n] { n.logs(); };
  std::filesystem::create_directories(dir.path() / "front");
  auto front = std::make_unique<test::VigildProcess>(dir.path() / "front" / "data",
                                                     std::vector<std::string>{"--db", db, "--node", "front"});
  REQUIRE(front->wait_ready());

  // Each node advertises where it serves (its bound HTTP and wire ports on 127.0.0.1).
  REQUIRE(
      eventually([&] { return cat.number("SELECT count(*) FROM nodes WHERE http_address IS NOT NULL") == 2; }, 30s));
  CHECK(cat.names("SELECT http_address FROM nodes WHERE node = 'a'") == std::set<std::string>{"http://" + a->http()});
  CHECK(cat.names("SELECT wire_address FROM nodes WHERE node = 'b'") == std::set<std::string>{b->wire()});
  {
    const auto reply = test::HttpApi{front->http()}.get("/api/v1/nodes");
    REQUIRE(reply.status == 200);
    const auto body = reply.json();
    CHECK(body.at("nodes").as_array().size() == 2);
  }

  const bool placed =
      eventually([&] { return !cat.names(recording_on("a")).empty() && !cat.names(recording_on("b")).empty(); }, 90s);
  if (!placed) logs();
  REQUIRE(placed);
  const std::string cam = *cat.names(recording_on("a")).begin();
  INFO("camera " << cam << " records on node a");
  const std::string segs_on_a =
      "FROM segments g JOIN streams s ON s.id = g.stream_id JOIN cameras c ON c.id = "
      "s.camera_id JOIN disks d ON d.id = s.disk_id WHERE d.node = 'a' AND s.role = 'main' "
      "AND s.media_kind = 'video' AND c.name = '" +
      cam + "'";
  // Six seconds of it in the catalog: the range [first + 1 s, first + 5 s) is a's footage.
  REQUIRE(eventually([&] { return cat.number("SELECT max(end_us) - min(start_us) " + segs_on_a) > 6'000'000; }, 60s));
  const std::int64_t first_us = cat.number("SELECT min(start_us) " + segs_on_a);
  const std::string range = export_of(cam, first_us + 1'000'000, first_us + 5'000'000);

  const auto from_a = test::http_request(a->http(), "GET", range);
  REQUIRE(from_a.status == 200);
  REQUIRE(from_a.body.size() > 65536);
  CHECK(from_a.header("X-Vigil-Export") == "fragmented");
  for (const auto* door : {&b, &front}) {
    const auto through = test::http_request((*door)->http(), "GET", range);
    INFO(through.head << through.body.substr(0, 300));
    if (through.status != 200) logs();
    REQUIRE(through.status == 200);
    CHECK(through.body == from_a.body);  // byte for byte a's own export
    CHECK(through.header("X-Vigil-Range-Us") == from_a.header("X-Vigil-Range-Us"));
    CHECK(through.header("X-Vigil-Export") == "fragmented");
    // Relayed as it came (chunked, no length), not gathered first: the whole path sends a length.
    CHECK(through.chunked_complete);
    CHECK(through.header("Content-Length").empty());
  }
  {  // A thumbnail through b: a's JPEG, relayed whole with its length; a Range of it, a's 206.
    const std::string thumb =
        "/api/v1/cameras/" + cam + "/thumbnail.jpg?at=" + test::media_time(first_us + 3'000'000) + "&width=160";
    const auto mine = test::http_request(a->http(), "GET", thumb),
               through = test::http_request(b->http(), "GET", thumb);
    REQUIRE(through.status == 200);
    CHECK(through.header("Content-Type") == "image/jpeg");
    CHECK(through.header("Content-Length") == std::to_string(mine.body.size()));
    CHECK(through.body == mine.body);
    const auto part = test::http_request(b->http(), "GET", thumb, "Range: bytes=10-29\r\n");
    REQUIRE(part.status == 206);
    CHECK(part.header("Content-Range") == "bytes 10-29/" + std::to_string(mine.body.size()));
    CHECK(part.body == mine.body.substr(10, 20));
  }
  {  // HLS through b: the playlist from the shared catalog, its media segments proxied to a; it plays.
    const std::string url = "http://" + b->http() + "/api/v1/cameras/" + cam +
                            "/hls.m3u8?from=" + test::media_time(first_us + 1'000'000) +
                            "&to=" + test::media_time(first_us + 5'000'000) + "&access_token=" + b->token();
    const auto packets = test::probe_packets(url, dir.path());
    CHECK(packets.size() > 10);
    if (!packets.empty()) CHECK(packets.front().key);
  }
  {  // Live HLS of a's camera through b: a's live channel.
    const auto live = test::http_request(b->http(), "GET", "/api/v1/cameras/" + cam + "/live.m3u8");
    INFO(live.body.substr(0, 300));
    CHECK(live.status == 200);
    CHECK(live.body.find("#EXTM3U") == 0);
  }

  // kill -9 of a: once its lease has expired, its footage is a 503 naming it at every front door.
  REQUIRE(::kill(a->pid(), SIGKILL) == 0);
  a->stop(SIGKILL);
  const auto killed_us = wall_us();
  REQUIRE(eventually(
      [&] {
        return cat.number(
                   "SELECT count(*) FROM nodes WHERE node = 'a' AND lease_until < "
                   "clock_timestamp()") == 1;
      },
      30s));
  for (const auto* door : {&b, &front}) {
    const auto down = test::http_request((*door)->http(), "GET", range);
    INFO(down.body);
    CHECK(down.status == 503);
    CHECK(down.body.find("node 'a'") != std::string::npos);
  }

  // The camera fails over to b: what b records of it is served at once, by b and by the front door.
  const std::string segs_on_b =
      "FROM segments g JOIN streams s ON s.id = g.stream_id JOIN cameras c ON c.id = "
      "s.camera_id JOIN disks d ON d.id = s.disk_id WHERE d.node = 'b' AND s.role = 'main' "
      "AND s.media_kind = 'video' AND c.name = '" +
      cam + "' AND g.start_us > " + std::to_string(killed_us);
  const bool moved =
      eventually([&] { return cat.number("SELECT max(end_us) - min(start_us) " + segs_on_b) > 3'000'000; }, 60s);
  if (!moved) logs();
  REQUIRE(moved);
  const std::int64_t b_first_us = cat.number("SELECT min(start_us) " + segs_on_b);
  const std::string after = export_of(cam, b_first_us, b_first_us + 2'000'000);
  const auto from_b = test::http_request(b->http(), "GET", after);
  REQUIRE(from_b.status == 200);
  const auto via_front = test::http_request(front->http(), "GET", after);
  REQUIRE(via_front.status == 200);
  CHECK(via_front.body == from_b.body);

  // The failover gap starts at a's last segment end the catalog knew; a restarted recovers its
  // open segment, which reaches further, and the gap then starts there.
  REQUIRE(eventually([&] { return failover_gap(cat, cam).first != 0; }, 30s));
  const auto [gap_from_before, gap_to] = failover_gap(cat, cam);
  const std::int64_t known_end_us = cat.number("SELECT max(end_us) " + segs_on_a);
  CHECK(gap_from_before == known_end_us);
  a = start_node(dir.path() / "a", profile, db, "a");
  const std::int64_t recovered_end_us = cat.number("SELECT max(end_us) " + segs_on_a);
  std::cout << "nodes: a's last segment ended " << (known_end_us - first_us) / 1e6 << " s in before its restart, "
            << (recovered_end_us - first_us) / 1e6 << " s in after its recovery; the failover gap was "
            << (gap_to - gap_from_before) / 1e6 << " s\n";
  REQUIRE(recovered_end_us > known_end_us);
  const auto [gap_from_after, gap_to_after] = failover_gap(cat, cam);
  if (recovered_end_us < gap_to) {
    CHECK(gap_from_after == recovered_end_us);
    CHECK(gap_to_after == gap_to);
    std::cout << "nodes: the failover gap now " << (gap_to_after - gap_from_after) / 1e6 << " s\n";
  } else {
    CHECK(gap_from_after == 0);  // both nodes recorded across the hole: no gap
  }
  // The footage the catalog did not know before plays, through b (proxied to a, live again).
  REQUIRE(eventually(
      [&] {
        return cat.number(
                   "SELECT count(*) FROM nodes WHERE node = 'a' AND lease_until > "
                   "clock_timestamp() AND http_address IS NOT NULL") == 1;
      },
      30s));
  const std::string recovered = export_of(cam, known_end_us, recovered_end_us);
  const auto mine = test::http_request(a->http(), "GET", recovered);
  const auto through = test::http_request(b->http(), "GET", recovered);
  INFO(through.body.substr(0, 300));
  REQUIRE(through.status == 200);
  CHECK(through.body == mine.body);
  write_file(dir.path() / "recovered.mp4", through.body);
  {  // An export across the failover is asked in its two parts, each node's: 409 naming both.
    const auto across =
        test::http_request(b->http(), "GET", export_of(cam, known_end_us - 1'000'000, b_first_us + 1'000'000));
    INFO(across.body);
    CHECK(across.status == 409);
    CHECK(across.body.find("node 'a' from_us=" + std::to_string(known_end_us - 1'000'000)) != std::string::npos);
    CHECK(across.body.find("node 'b'") != std::string::npos);
  }
  CHECK(!test::probe_packets(dir.path() / "recovered.mp4", dir.path()).empty());

  // The playback proxy given only the front door learns the nodes from the catalog, and still
  // serves once the front door is gone.
  std::filesystem::create_directories(dir.path() / "proxy");
  test::ProxyProcess proxy(dir.path() / "proxy", {"--upstream", front->http(), "--nodes"});
  CHECK(proxy.log().find("node a learned from the catalog: " + a->http()) != std::string::npos);
  CHECK(proxy.log().find("node b learned from the catalog: " + b->http()) != std::string::npos);
  front->stop();
  const auto proxied = test::http_request(proxy.address(), "GET", recovered);
  INFO(proxy.log());
  REQUIRE(proxied.status == 200);
  CHECK(proxied.body == mine.body);
}
