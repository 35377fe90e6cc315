// The HTTP API's catalog routes on a real vigild: the camera list (no credentials shown), the
// timeline of one camera and of several, and hostile input — malformed times, inverted and
// huge ranges, SQL in camera names (plain and percent-encoded), path traversal, oversized
// numbers, too many parameters — each a clear 4xx that changes nothing.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string>

#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;

TEST_CASE("HTTP API: cameras and timeline, and hostile query input", "[http][timeline]") {
  vigil::test::TempDir dir;
  const auto data = dir.path() / "data";
  vigil::test::VigildProcess d(data, {"--no-camera-pull"});
  REQUIRE(d.wait_ready());
  for (const auto& [name, url] :
       {std::pair{"porch", "rtsp://admin:secret@10.0.0.5/stream1"}, std::pair{"lobby", "rtsp://10.0.0.6/stream1"}}) {
    REQUIRE(vigil::test::run_to_exit(VIGIL_CLI_PATH, {"camera", "add", name, url, "--data", data.string()},
                                     dir.path() / "add.log")
                .status == 0);
  }
  auto get = [&](const std::string& target) { return vigil::test::http_request(d.http(), "GET", target); };

  SECTION("the camera list names cameras but never their URLs") {
    auto r = get("/api/v1/cameras");
    INFO(r.body);
    REQUIRE(r.status == 200);
    CHECK_THAT(r.body, !ContainsSubstring("secret"));
    auto cams = boost::json::parse(r.body).at("cameras").as_array();
    REQUIRE(cams.size() == 2);
    CHECK(cams[0].at("name").as_string() == "lobby");
    CHECK(cams[0].at("pulled").as_bool());
    CHECK(cams[0].at("state").as_string() == "never recorded");
  }
  SECTION("timeline of one camera, of a set, of all") {
    auto one = get("/api/v1/cameras/porch/timeline?from=-1h&to=now");
    INFO(one.body);
    REQUIRE(one.status == 200);
    auto o = boost::json::parse(one.body).as_object();
    CHECK(o.at("camera").as_string() == "porch");
    CHECK(o.at("runs").as_array().empty());
    CHECK(o.at("to_us").as_int64() - o.at("from_us").as_int64() == 3'600'000'000);

    auto set = get("/api/v1/timeline?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&cameras=porch,lobby&merge=2");
    REQUIRE(set.status == 200);
    auto s = boost::json::parse(set.body).as_object();
    CHECK(s.at("cameras").as_array().size() == 2);
    CHECK(s.at("merge_s").as_double() == 2.0);
    CHECK(s.at("from_us").as_int64() == 1'767'225'600'000'000);

    auto all =
        get("/api/v1/timeline?from=%40"
            "1767225600&to=%40"
            "1767229200");  // @UNIX, percent-encoded
    REQUIRE(all.status == 200);
    CHECK(boost::json::parse(all.body).at("cameras").as_array().size() == 2);
  }
  SECTION("unknown camera: 404") { CHECK(get("/api/v1/cameras/nobody/timeline?from=-1h").status == 404); }
  SECTION("hostile input: a 400 with a reason, nothing changed") {
    for (const std::string target : {
             "/api/v1/timeline",                     // from missing
             "/api/v1/timeline?from=yesterday-ish",  // not a time
             "/api/v1/timeline?from=-1h&to=-2h",     // inverted
             "/api/v1/timeline?from=@0&to=now",      // > 400 days
             "/api/v1/timeline?from=-1h&camera=porch%27%3B%20DROP%20TABLE%20cameras%3B--",
             "/api/v1/timeline?from=-1h&cameras=porch,lobby%27--",
             "/api/v1/timeline?from=-1h&limit=1e12",  // over the cap
             "/api/v1/timeline?from=-1h&limit=NaN",
             "/api/v1/timeline?from=-1h&merge=-5",
             "/api/v1/cameras/..%2F..%2Fetc%2Fpasswd/timeline?from=-1h",  // traversal as a name
             "/api/v1/cameras/porch%00/timeline?from=-1h",
         }) {
      auto r = get(target);
      INFO(target << " -> " << r.status << " " << r.body);
      CHECK(r.status == 400);
      CHECK_THAT(r.body, ContainsSubstring("\"error\""));
    }
    std::string many = "/api/v1/timeline?from=-1h";
    for (int i = 0; i < 300; ++i) many += "&x" + std::to_string(i) + "=1";
    CHECK(get(many).status == 400);
    CHECK(get("/api/v1/../../etc/passwd").status == 404);
    CHECK(vigil::test::http_request(d.http(), "DELETE", "/api/v1/cameras").status == 405);
    auto r = get("/api/v1/cameras");
    REQUIRE(r.status == 200);
    CHECK(boost::json::parse(r.body).at("cameras").as_array().size() == 2);  // the table is intact
  }
}
