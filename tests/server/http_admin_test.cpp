// The admin/state routes on a real vigild (external catalog, so the test reads the
// tables; a volume with the simulated WD400BB profile, 200 ms cycles): cameras created, read,
// changed and removed (409 on a second create, credentials never shown, retention_days stored);
// the streams of a camera `vigil record` recorded from an ffmpeg clip; evidence locks created,
// listed and released; /disks with the volume, its profile and cycles, and — while a recording
// held open over the wire protocol is admitted — that one stream; the profile document; the
// admission decisions with the recording's admission, filtered and paginated. Hostile input:
// http_admin_hostile_test.cpp.
// Every request goes through Api::call (tests/support/http_client.hpp), which carries the admin
// token; without one, 401.
#include <sys/socket.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "client/wire/wire_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"
#include "tests/server/admin_tables.hpp"

using Catch::Matchers::ContainsSubstring;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

using vigil::test::admin_tables::fingerprint;
using vigil::test::admin_tables::scalar;

using Reply = vigil::test::HttpResult;
using Api = vigil::test::HttpApi;

std::int64_t admitted_count(const Api& api) {
  auto r = api.get("/api/v1/disks");
  REQUIRE(r.status == 200);
  return r.json().at("disks").as_array().at(0).at("admitted").at("count").as_int64();
}

}  // namespace

TEST_CASE("HTTP admin: cameras, streams, locks, disks, profile and decisions on a real vigild", "[admin][http]") {
  vigil::test::TempDir dir;
  const auto db = vigil::test::shared_cluster().create_database("http_admin");
  const auto profile = vigil::test::make_sim_profile(dir.path());
  const auto clip = vigil::test::make_h264_clip(dir.path(), 2);
  vigil::test::VigildProcess d(dir.path() / "data",
                               {"--db", db, "--volume", (dir.path() / "vol").string(), "--volume-size",
                                std::to_string(128 << 20), "--extent-bytes", std::to_string(4 << 20), "--profile",
                                profile.string(), "--cycle-ms", "200", "--model-check-cycles", "0",
                                "--no-camera-pull"});
  REQUIRE(d.wait_ready());
  const Api api{d.http()};

  // --- cameras -------------------------------------------------------------------------------
  auto made =
      api.call("POST", "/api/v1/cameras",
               R"({"name":"lobby","url":"rtsp://admin:s3cret@10.0.0.9:554/live?token=tok3n","retention_days":30})");
  INFO(made.body);
  REQUIRE(made.status == 201);
  CHECK(made.header("Location") == "/api/v1/cameras/lobby");
  for (const auto* secret : {"s3cret", "admin:", "tok3n"}) CHECK_THAT(made.body, !ContainsSubstring(secret));
  CHECK(made.json().at("url").as_string() == "rtsp://10.0.0.9:554/live?…");
  CHECK(made.json().at("retention_days").as_int64() == 30);
  CHECK(scalar(db, "SELECT url FROM cameras WHERE name = 'lobby'") ==
        "rtsp://admin:s3cret@10.0.0.9:554/live?token=tok3n");
  CHECK(scalar(db, "SELECT retention_days FROM cameras WHERE name = 'lobby'") == "30");

  auto again = api.call("POST", "/api/v1/cameras", R"({"name":"lobby","url":"rtsp://10.0.0.1/other"})");
  CHECK(again.status == 409);
  CHECK(again.json().at("error").is_string());
  CHECK(scalar(db, "SELECT url FROM cameras WHERE name = 'lobby'") ==
        "rtsp://admin:s3cret@10.0.0.9:554/live?token=tok3n");

  auto one = api.get("/api/v1/cameras/lobby");
  REQUIRE(one.status == 200);
  CHECK_THAT(one.body, !ContainsSubstring("s3cret"));
  CHECK(one.json().at("enabled").as_bool());
  CHECK(one.json().at("pulled").as_bool());
  CHECK(one.json().at("state").as_string() == "never recorded");
  CHECK(one.json().at("streams").as_array().empty());
  // The list does not show URLs either.
  CHECK_THAT(api.get("/api/v1/cameras").body, !ContainsSubstring("s3cret"));

  auto patched = api.call("PATCH", "/api/v1/cameras/lobby",
                          R"({"enabled":false,"retention_days":7,"url":"rtsp://u:p4ss@10.0.0.10/main"})");
  INFO(patched.body);
  REQUIRE(patched.status == 200);
  CHECK_FALSE(patched.json().at("enabled").as_bool());
  CHECK(patched.json().at("retention_days").as_int64() == 7);
  CHECK(patched.json().at("url").as_string() == "rtsp://10.0.0.10/main");
  CHECK(scalar(db, "SELECT enabled::text || retention_days || url FROM cameras WHERE name = 'lobby'") ==
        "false7rtsp://u:p4ss@10.0.0.10/main");
  auto cleared = api.call("PATCH", "/api/v1/cameras/lobby", R"({"retention_days":null})");
  REQUIRE(cleared.status == 200);
  CHECK(cleared.json().at("retention_days").is_null());
  CHECK(scalar(db, "SELECT retention_days FROM cameras WHERE name = 'lobby'") == "NULL");
  CHECK(api.call("PATCH", "/api/v1/cameras/nosuch", R"({"enabled":true})").status == 404);

  // A pushed camera (no URL) created over HTTP.
  REQUIRE(api.call("POST", "/api/v1/cameras", R"({"name":"spare","enabled":true})").status == 201);
  CHECK(api.get("/api/v1/cameras/spare").json().at("pulled").as_bool() == false);

  // --- a recording: its streams -----------------------------------------------------------------
  auto rec = vigil::test::run_to_exit(VIGIL_CLI_PATH,
                                      {"--server", d.wire(), "record", "--stream", "gate", clip.string(), "--fast"},
                                      dir.path() / "rec.log");
  INFO(rec.output);
  REQUIRE(rec.status == 0);
  json::object stream;
  std::string last_streams;
  for (int i = 0; i < 200; ++i) {  // bounded: the stream ends and its last segment lands through the batcher
    auto s = api.get("/api/v1/cameras/gate/streams");
    REQUIRE(s.status == 200);
    last_streams = s.body;
    const auto doc = s.json();
    const auto& arr = doc.at("streams").as_array();
    if (arr.size() == 1 && arr[0].at("state").as_string() != "recording" && arr[0].at("segments").as_int64() > 0) {
      stream = arr[0].as_object();
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  INFO(last_streams);
  REQUIRE_FALSE(stream.empty());
  CHECK(stream.at("codec").as_string() == "h264");
  CHECK(stream.at("state").as_string() == "stopped");
  CHECK(stream.at("width").as_int64() == 320);
  CHECK(stream.at("admitted_rate_bps").as_int64() > 0);
  CHECK(stream.at("declared_rate_bps").as_int64() > 0);
  CHECK(stream.at("bytes").as_int64() > 0);
  const auto first_us = stream.at("first_us").as_int64();
  const auto last_us = stream.at("last_us").as_int64();
  CHECK(last_us > first_us);
  const auto stream_id = stream.at("id").as_int64();
  auto gate = api.get("/api/v1/cameras/gate");
  REQUIRE(gate.status == 200);
  CHECK(gate.json().at("stream_count").as_int64() == 1);
  CHECK(gate.json().at("state").as_string() == "stopped");
  CHECK(gate.json().at("pulled").as_bool() == false);
  CHECK(api.get("/api/v1/cameras/nosuch/streams").status == 404);

  // --- evidence locks --------------------------------------------------------------------------
  const auto lock_body = R"({"camera":"gate","from_us":)" + std::to_string(first_us) + R"(,"to_us":)" +
                         std::to_string(last_us) + R"(,"reason":"case 2026-17","locked_by":"ops"})";
  auto locked = api.call("POST", "/api/v1/locks", lock_body);
  INFO(locked.body);
  REQUIRE(locked.status == 201);
  const auto lock_id = locked.json().at("id").as_int64();
  CHECK(locked.json().at("ids").as_array().size() == 1);
  CHECK(scalar(db, "SELECT stream_id::text || ':' || reason FROM evidence_locks WHERE id = " +
                       std::to_string(lock_id)) == std::to_string(stream_id) + ":case 2026-17");
  // Time strings work too.
  auto by_text = api.call("POST", "/api/v1/locks",
                          R"({"camera":"gate","from":"-1h","to":"@)" + std::to_string(last_us / 1'000'000 + 60) +
                              R"(","reason":"second"})");
  INFO(by_text.body);
  REQUIRE(by_text.status == 201);
  const auto lock2 = by_text.json().at("id").as_int64();
  auto locks = api.get("/api/v1/locks");
  REQUIRE(locks.status == 200);
  REQUIRE(locks.json().at("locks").as_array().size() == 2);
  const auto locks_doc = locks.json();
  const auto& newest = locks_doc.at("locks").as_array().at(0);
  CHECK(newest.at("id").as_int64() == lock2);
  CHECK(newest.at("camera").as_string() == "gate");
  CHECK(newest.at("active").as_bool());
  CHECK(api.call("DELETE", "/api/v1/locks/" + std::to_string(lock2)).status == 200);
  CHECK(api.call("DELETE", "/api/v1/locks/" + std::to_string(lock2)).status == 404);
  CHECK(api.get("/api/v1/locks").json().at("locks").as_array().size() == 1);
  CHECK(api.get("/api/v1/locks?all=true").json().at("locks").as_array().size() == 2);
  CHECK(scalar(db, "SELECT count(*) FROM evidence_locks WHERE unlocked_at_us IS NOT NULL") == "1");
  // No recording in the range, no camera.
  CHECK(api.call("POST", "/api/v1/locks", R"({"camera":"spare","from":"-1h","to":"now","reason":"x"})").status == 409);
  CHECK(api.call("POST", "/api/v1/locks", R"({"camera":"nosuch","from":"-1h","to":"now","reason":"x"})").status == 404);

  // --- cameras removed -------------------------------------------------------------------------
  auto del_spare = api.call("DELETE", "/api/v1/cameras/spare");
  REQUIRE(del_spare.status == 200);
  CHECK(del_spare.json().at("result").as_string() == "deleted");
  CHECK(api.get("/api/v1/cameras/spare").status == 404);
  CHECK(api.call("DELETE", "/api/v1/cameras/spare").status == 404);

  // --- disks and profile -----------------------------------------------------------------------
  auto disks = api.get("/api/v1/disks");
  INFO(disks.body);
  REQUIRE(disks.status == 200);
  REQUIRE(disks.json().at("disks").as_array().size() == 1);
  const auto disk = disks.json().at("disks").as_array().at(0).as_object();
  const auto disk_id = disk.at("id").as_int64();
  CHECK(disk.at("volume").at("path").as_string() == std::filesystem::absolute(dir.path() / "vol").string());
  REQUIRE(disk.at("profile").is_object());
  CHECK(disk.at("profile").at("id").as_int64() > 0);
  CHECK(disk.at("profile").at("measured_at_us").as_int64() > 0);
  CHECK(disk.at("policy").as_string() == "conservative");
  CHECK(disk.at("cycles").as_int64() > 0);
  CHECK(disk.at("model_optimistic").as_bool() == false);
  CHECK(disk.at("model_scale").as_double() == 1.0);  // as profiled: the check is off here
  CHECK(disk.at("model_recalibrations").as_int64() == 0);
  // Real-time where this test may (root, CAP_SYS_NICE), else normal and why; buffers locked with it.
  const std::string io_priority(disk.at("io_priority").as_string());
  CHECK((io_priority == "realtime" || io_priority == "normal"));
  CHECK_FALSE(disk.at("io_priority_detail").as_string().empty());
  CHECK(disk.at("io_buffers_locked").as_string() != "off");
  CHECK(disk.at("cycle_s").as_double() == 0.2);
  CHECK(disk.at("admitted").at("count").as_int64() == 0);
  const double empty_slack = disk.at("slack_s").as_double();
  const auto empty_max = disk.at("max_new_rate_bps").at("recording").as_int64();
  CHECK(empty_max > 2'000'000);

  auto prof = api.get("/api/v1/disks/" + std::to_string(disk_id) + "/profile");
  REQUIRE(prof.status == 200);
  CHECK(prof.json().at("profile").is_object());
  CHECK(prof.json().at("profile").as_object().contains("random_read"));
  CHECK(prof.json().at("id").as_int64() == disk.at("profile").at("id").as_int64());
  CHECK(api.get("/api/v1/disks/" + std::to_string(disk_id + 1000) + "/profile").status == 404);

  {  // a recording held open over the wire protocol is one admitted stream while it lasts
    vigil::client::WireClient c(d.wire(), 20s);
    c.hello("admin test", vigil::test::token());
    c.send(vigil::test::open_record("held", 2'000'000));
    auto admitted = c.receive();
    REQUIRE(admitted.msg.has_admit());
    auto held = api.get("/api/v1/disks").json().at("disks").as_array().at(0).as_object();
    INFO(json::serialize(held));
    REQUIRE(held.at("admitted").at("count").as_int64() == 1);
    const auto s = held.at("admitted").at("streams").as_array().at(0);
    CHECK(s.at("kind").as_string() == "recording");
    CHECK(s.at("peak_rate_bps").as_int64() == 2'000'000);
    CHECK(held.at("admitted").at("recording").as_int64() == 1);
    CHECK(held.at("predicted_busy_s").as_double() > 0);
    CHECK(held.at("slack_s").as_double() < empty_slack);
    CHECK(held.at("predicted_busy_share").as_double() <= held.at("r_rt").as_double());
    CHECK(held.at("max_new_rate_bps").at("recording").as_int64() < empty_max);
    ::shutdown(c.native_handle(), SHUT_WR);
  }
  std::int64_t left = 1;
  for (int i = 0; i < 200 && left != 0; ++i) {  // bounded: the server ends the stream after the client left
    left = admitted_count(api);
    if (left != 0) std::this_thread::sleep_for(50ms);
  }
  CHECK(left == 0);

  // --- admission decisions ---------------------------------------------------------------------
  std::vector<std::int64_t> all_ids;
  for (int i = 0; i < 200; ++i) {  // bounded: decisions reach the catalog through the batcher
    auto r = api.get("/api/v1/admission/decisions?from=-1h");
    REQUIRE(r.status == 200);
    if (r.json().at("decisions").as_array().size() >= 2) break;
    std::this_thread::sleep_for(50ms);
  }
  auto decisions = api.get("/api/v1/admission/decisions?from=-1h&camera=gate");
  INFO(decisions.body);
  REQUIRE(decisions.status == 200);
  const auto decisions_doc = decisions.json();
  const auto& gate_rows = decisions_doc.at("decisions").as_array();
  REQUIRE(gate_rows.size() == 1);
  CHECK(gate_rows[0].at("outcome").as_string() == "admitted");
  CHECK(gate_rows[0].at("stream_id").as_int64() == stream_id);
  CHECK(gate_rows[0].at("disk_id").as_int64() == disk_id);
  CHECK(gate_rows[0].at("camera").as_string() == "gate");
  CHECK(gate_rows[0].at("details").is_object());
  CHECK(api.get("/api/v1/admission/decisions?from=-1h&outcome=refused").json().at("decisions").as_array().empty());
  CHECK(api.get("/api/v1/admission/decisions?from=-1h&disk=" + std::to_string(disk_id + 1000))
            .json()
            .at("decisions")
            .as_array()
            .empty());
  {  // pagination: newest first, one per page, the cursor continues
    auto p1 = api.get("/api/v1/admission/decisions?from=-1h&limit=1");
    REQUIRE(p1.status == 200);
    REQUIRE(p1.json().at("decisions").as_array().size() == 1);
    CHECK(p1.json().at("decisions").as_array()[0].at("camera").as_string() == "held");
    REQUIRE(p1.json().at("next").is_string());
    const std::string cursor(p1.json().at("next").as_string());
    auto p2 = api.get("/api/v1/admission/decisions?from=-1h&limit=1&cursor=" + cursor);
    REQUIRE(p2.status == 200);
    REQUIRE(p2.json().at("decisions").as_array().size() == 1);
    CHECK(p2.json().at("decisions").as_array()[0].at("camera").as_string() == "gate");
    CHECK(p2.json().at("next").is_null());
  }

  // The camera with a recording is disabled, not deleted.
  auto del_gate = api.call("DELETE", "/api/v1/cameras/gate");
  REQUIRE(del_gate.status == 200);
  CHECK(del_gate.json().at("result").as_string() == "disabled");
  CHECK(api.get("/api/v1/cameras/gate").json().at("enabled").as_bool() == false);

  // Without a token nothing is read or changed.
  CHECK(vigil::test::http_request_without_token(d.http(), "DELETE", "/api/v1/cameras/lobby").status == 401);
  CHECK(vigil::test::http_request_without_token(d.http(), "GET", "/api/v1/disks").status == 401);
  CHECK(api.get("/api/v1/cameras/lobby").status == 200);
  CHECK(api.get("/api/v1/disks?access_token=" + vigil::test::token()).status == 200);
}
