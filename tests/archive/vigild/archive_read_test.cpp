// Archived segments read back on a running vigild (docs/archive.md, "Readers" and "Retention"): a
// real H.264 recording (ffmpeg, `vigil record`) is copied to SeaweedFS, then reclaimed locally by
// its camera's retention — its rows stay 'archived', without extents — and its MP4 export over
// HTTP is byte for byte the export taken before, read by Range GETs from the store; its HLS plays
// in ffprobe, a thumbnail is made, and `vigil play` plays it over the wire, every packet. A camera
// whose segments have no copy (archive_after_s of an hour) is reclaimed as before: rows gone.
// Archive retention then deletes every expired copy and its segment, except the one an evidence
// lock covers: that object is under legal hold, the store itself refuses to delete its version,
// and it still exports. With the store gone, an export of archived footage fails; it never
// returns something else.
// Skipped, saying so, when SeaweedFS is not built (deploy/seaweedfs.sh). Label "s3".
#include <sys/stat.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <filesystem>
#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/seaweedfs_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;

namespace {

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

TEST_CASE(
    "archived segments are read from S3 by export, HLS, thumbnails and wire playback; archive retention "
    "spares evidence",
    "[vigild][archive][s3][ffmpeg]") {
  const std::string binary = test::seaweedfs_binary();
  if (binary.empty()) SKIP("SeaweedFS is not built: run deploy/seaweedfs.sh (or set VIGIL_SEAWEEDFS)");
  std::optional<test::SeaweedFs> weed(std::in_place, binary);
  REQUIRE(weed->make_bucket("vigil-archive"));
  const auto s3 = weed->client();

  test::TempDir dir;
  const auto clip = test::make_h264_clip(dir.path(), 8);  // 200 packets, a keyframe a second
  const auto source = test::probe_packets(clip, dir.path());
  REQUIRE(source.size() == 200);
  const auto data = dir.path() / "data";
  auto args = test::sim_volume_args(dir.path(), test::make_sim_profile(dir.path()));
  // 1-s segments; retention every second with 2-s "days" (--retention-day-ms, tests only), so a
  // camera's retention_days of 1 reclaims its segments two seconds after they end.
  args.insert(args.end(), {"--segment-max", "1", "--archive-endpoint", "127.0.0.1:" + std::to_string(weed->s3_port),
                           "--archive-credentials", test::seaweed_credentials_file(dir.path()).string(),
                           "--archive-poll-ms", "200", "--retention-interval", "1", "--retention-day-ms", "2000"});
  test::VigildProcess d(data, args);
  REQUIRE(d.wait_ready());
  INFO(d.output());
  const test::HttpApi api{d.http()};
  pqxx::connection c("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  const auto one = [&](const std::string& sql) { return pqxx::nontransaction(c).exec1(sql)[0].as<std::int64_t>(); };
  const std::string gate = "(SELECT s.id FROM streams s JOIN cameras k ON k.id = s.camera_id WHERE k.name = 'gate')";
  const std::string yard = "(SELECT s.id FROM streams s JOIN cameras k ON k.id = s.camera_id WHERE k.name = 'yard')";

  // yard is never copied within the test: its archive_after_s is an hour (shown by the API).
  REQUIRE(api.call("POST", "/api/v1/cameras", R"({"name":"yard"})").status == 201);
  {
    auto set = api.call("PATCH", "/api/v1/cameras/yard", R"({"archive_after_s":3600})");
    INFO(set.body);
    REQUIRE(set.status == 200);
    const auto body = set.json();
    CHECK(body.at("archive_after_s").to_number<int>() == 3600);
    CHECK(body.at("archive_retention_days").is_null());
  }
  CHECK(api.call("PATCH", "/api/v1/cameras/yard", R"({"archive_after_s":-1})").status == 400);
  for (const std::string name : {"gate", "yard"}) {
    auto rec =
        test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", name, clip.string(), "--fast"},
                          dir.path() / (name + ".log"));
    INFO(rec.output);
    REQUIRE(rec.status == 0);
  }
  test::wait_for_closed_frames(data, 400);
  const auto gate_segments = one("SELECT count(*) FROM segments WHERE stream_id IN " + gate);
  REQUIRE(gate_segments >= 6);  // 8 s in 1-s segments
  REQUIRE(test::eventually(
      [&] {
        return one("SELECT count(*) FROM segment_copies WHERE segment_id IN (SELECT id FROM segments WHERE stream_id "
                   "IN " +
                   gate + ")") == gate_segments;
      },
      60s));
  CHECK(one("SELECT count(*) FROM segment_copies WHERE segment_id IN (SELECT id FROM segments WHERE stream_id IN " +
            yard + ")") == 0);

  // The export while every segment is on the volume.
  const std::string base = "/api/v1/cameras/gate/";
  const std::string range = "from=-1h&to=@" + std::to_string(now_s() + 3600);
  const auto local = test::http_request(d.http(), "GET", base + "export.mp4?" + range);
  REQUIRE(local.status == 200);
  REQUIRE(local.body.size() > 10000);

  // Retention reclaims both cameras' segments locally: gate's stay, archived; yard's go.
  REQUIRE(api.call("PATCH", "/api/v1/cameras/gate", R"({"retention_days":1})").status == 200);
  REQUIRE(api.call("PATCH", "/api/v1/cameras/yard", R"({"retention_days":1})").status == 200);
  const bool reclaimed = test::eventually(
      [&] {
        return one("SELECT count(*) FROM segments WHERE state = 'archived' AND stream_id IN " + gate) ==
                   gate_segments &&
               one("SELECT count(*) FROM segments WHERE stream_id IN " + yard) == 0;
      },
      60s);
  if (!reclaimed) FAIL("retention did not reclaim both cameras; vigild said:\n" << d.output());
  CHECK(one("SELECT count(*) FROM segment_extents WHERE segment_id IN (SELECT id FROM segments WHERE stream_id IN " +
            gate + ")") == 0);
  CHECK(one("SELECT count(*) FROM gop_index WHERE segment_id IN (SELECT id FROM segments WHERE stream_id IN " + gate +
            ")") == gate_segments);
  CHECK(one("SELECT count(*) FROM gaps WHERE reason = 'retention' AND stream_id IN " + gate) == 0);

  {  // export, from the archive: the same bytes
    const auto archived = test::http_request(d.http(), "GET", base + "export.mp4?" + range);
    INFO(archived.head);
    REQUIRE(archived.status == 200);
    CHECK(archived.header("ETag") != local.header("ETag"));  // built again, not the cached one
    CHECK(archived.body.size() == local.body.size());
    CHECK((archived.body == local.body));
  }
  {  // HLS of the archived range plays in ffprobe, every packet
    const std::string url = "http://" + d.http() + base + "hls.m3u8?" + range + "&access_token=" + d.token();
    const auto out = test::probe_packets(url, dir.path());
    REQUIRE(out.size() == source.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      INFO("packet " << i);
      CHECK(out[i].size == source[i].size);
      CHECK(out[i].key == source[i].key);
    }
  }
  {  // a thumbnail of it
    const auto range_us = local.header("X-Vigil-Range-Us");
    const std::int64_t start_us = std::stoll(range_us.substr(0, range_us.find('-')));
    const auto t = std::to_string(start_us + 2'500'000);
    auto jpg = test::http_request(d.http(), "GET",
                                  base + "thumbnail.jpg?at=@" + t.substr(0, t.size() - 6) + "." +
                                      t.substr(t.size() - 6) + "&width=160");
    REQUIRE(jpg.status == 200);
    CHECK(jpg.header("Content-Type") == "image/jpeg");
    CHECK(jpg.body.substr(0, 2) == "\xFF\xD8");
  }
  {  // wire playback: `vigil play` plays it, every packet
    auto play = test::run_to_exit(VIGIL_CLI_PATH,
                                  {"--server", d.wire(), "play", "--stream", "gate", "--from", "-1h", "--to",
                                   "@" + std::to_string(now_s() + 3600), "-o", (dir.path() / "played.mp4").string()},
                                  dir.path() / "play.log");
    INFO(play.output);
    REQUIRE(play.status == 0);
    const auto out = test::probe_packets(dir.path() / "played.mp4", dir.path());
    REQUIRE(out.size() == source.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      INFO("packet " << i);
      CHECK(out[i].size == source[i].size);
      CHECK(out[i].key == source[i].key);
    }
  }

  // Evidence: the third segment locked; its copy goes under legal hold.
  const auto locked = pqxx::nontransaction(c).exec1("SELECT id, start_us, end_us FROM segments WHERE stream_id IN " +
                                                    gate + " ORDER BY start_us OFFSET 2 LIMIT 1");
  const std::string locked_id = locked[0].as<std::string>();
  {
    auto lock = api.call("POST", "/api/v1/locks",
                         R"({"camera":"gate","from_us":)" + locked[1].as<std::string>() + R"(,"to_us":)" +
                             locked[2].as<std::string>() + R"(,"reason":"case 24"})");
    INFO(lock.body);
    REQUIRE(lock.status == 201);
  }
  REQUIRE(test::eventually(
      [&] { return one("SELECT count(*) FROM segment_copies WHERE legal_hold AND segment_id = " + locked_id) == 1; },
      30s));
  CHECK(one("SELECT count(*) FROM segment_copies WHERE legal_hold") == 1);
  pqxx::result keys;
  {
    pqxx::nontransaction q(c);
    keys = q.exec(
        "SELECT k.segment_id, k.bucket, k.object_key FROM segment_copies k JOIN segments s ON "
        "s.id = k.segment_id WHERE s.stream_id IN " +
        gate);
  }
  REQUIRE(keys.size() == static_cast<std::size_t>(gate_segments));

  // Archive retention: every copy but the locked one is deleted from the store, then its segment.
  REQUIRE(api.call("PATCH", "/api/v1/cameras/gate", R"({"archive_retention_days":1})").status == 200);
  const bool expired =
      test::eventually([&] { return one("SELECT count(*) FROM segments WHERE stream_id IN " + gate) == 1; }, 60s);
  if (!expired) FAIL("archive retention did not delete the expired copies; vigild said:\n" << d.output());
  CHECK(one("SELECT count(*) FROM segments WHERE id = " + locked_id + " AND state = 'archived'") == 1);
  for (const auto& k : keys) {
    const std::string key = k[2].as<std::string>();
    INFO("segment " << k[0].as<std::string>() << " as " << key);
    if (k[0].as<std::string>() == locked_id) {
      const auto info = s3.head_object(k[1].as<std::string>(), key);
      CHECK(info.size_bytes > 0);
      // The legal hold is the store's too: deleting the object's version is refused.
      REQUIRE_FALSE(info.version_id.empty());
      CHECK_THROWS_AS(s3.delete_object(k[1].as<std::string>(), key, info.version_id), archive::S3Error);
      CHECK(s3.head_object(k[1].as<std::string>(), key).size_bytes == info.size_bytes);
    } else {
      try {
        s3.head_object(k[1].as<std::string>(), key);
        FAIL("the expired copy " << key << " is still stored");
      } catch (const archive::S3Error& e) {
        CHECK(e.http_status == 404);
      }
    }
  }
  // The locked segment still exports, from the archive.
  const auto evidence = test::http_request(d.http(), "GET", base + "export.mp4?" + range);
  REQUIRE(evidence.status == 200);
  CHECK(evidence.body.find("mdat") != std::string::npos);

  // Without the store, archived footage cannot be read: an error, never other bytes. (A range not
  // asked before, so no cached export answers it.)
  weed.reset();
  const auto from = std::to_string(locked[1].as<std::int64_t>() + 500'000);
  const auto gone = test::http_request(d.http(), "GET",
                                       base + "export.mp4?from=@" + from.substr(0, from.size() - 6) + "." +
                                           from.substr(from.size() - 6) + "&to=@" + std::to_string(now_s() + 3600));
  INFO(gone.head << gone.body);
  CHECK(gone.status >= 500);
}
