// Scoped tokens on one real vigild (docs/openapi.yaml "Authentication"): every HTTP route and
// wire operation (record, play, query) asked by five tokens — a viewer and a recorder limited to
// cameras a and b, an events token for a, an unlimited viewer, and admin — about a camera in the
// scope (a, recorded) and one outside it (c, recorded), each against the status the table
// expects; the lists (cameras, timeline, events, locks, /metrics) show a limited token only its
// cameras; how far a non-admin may backdate (--max-backdate) a recording and an event; and the
// audit rows of an export and of an evidence lock's creation and release.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>
#include <map>

#include "client/wire/wire_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
namespace json = boost::json;

namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The five tokens of the matrix, in its columns' order.
enum Who { scoped_viewer, scoped_recorder, events_a, viewer, admin, kWho };
constexpr const char* kWhoName[kWho] = {"scoped viewer", "scoped recorder", "events token", "viewer", "admin"};

test::HttpResult as(const std::string& http, const std::string& token, const std::string& method,
                    const std::string& target, const std::string& body = {}) {
  std::string headers = "Authorization: Bearer " + token + "\r\n";
  if (!body.empty() || method == "POST" || method == "PATCH") {
    headers += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return test::http_request(http, method, target, headers, body);
}

// A token made by the admin over HTTP: ROLE, limited to CAMERAS (a JSON array, or "null").
std::string make_token(const std::string& http, const std::string& role, const std::string& cameras,
                       const std::string& label) {
  auto r = as(http, test::token(), "POST", "/api/v1/tokens",
              R"({"role":")" + role + R"(","label":")" + label + R"(","cameras":)" + cameras + "}");
  INFO(r.body);
  REQUIRE(r.status == 201);
  return std::string(r.json().at("token").as_string());
}

// The first URI of a playlist's media segment (relative to the playlist's folder).
std::string first_segment(const std::string& playlist) {
  std::size_t at = 0;
  while (at < playlist.size()) {
    auto end = playlist.find('\n', at);
    if (end == std::string::npos) end = playlist.size();
    const auto line = playlist.substr(at, end - at);
    if (!line.empty() && line[0] != '#') return line;
    at = end + 1;
  }
  return {};
}

// What a wire request got: "denied" (PERMISSION_DENIED), or what answered it.
std::string wire_outcome(const std::string& wire, const std::string& token, const proto::Envelope& msg) {
  client::WireClient c(wire, std::chrono::seconds(10));
  c.hello("scoped tokens test", token);
  c.send(msg);
  try {
    const auto r = c.receive();
    if (r.msg.has_admit()) return "admitted";
    if (r.msg.has_playback_started()) return "playing";
    if (r.msg.has_query_response()) return "answered";
    if (r.msg.has_refuse()) return "refused: " + r.msg.refuse().reason();
    return "other";
  } catch (const client::ServerError& e) {
    if (e.code == proto::ERROR_CODE_PERMISSION_DENIED) return "denied";
    if (e.code == proto::ERROR_CODE_UNSUPPORTED) return "unsupported";
    return std::string("error: ") + e.what();
  }
}

}  // namespace

TEST_CASE("scoped tokens: route x role x camera matrix, lists, backdating and audit rows",
          "[auth][scoped][http][wire][ffmpeg]") {
  test::TempDir dir;
  const auto clip = test::make_h264_clip(dir.path(), 2);
  const auto profile = test::make_sim_profile(dir.path());
  const auto data = dir.path() / "data";
  auto args = test::sim_volume_args(dir.path(), profile);
  args.insert(args.end(), {"--metrics-auth", "--max-backdate", "5"});
  test::VigildProcess d(data, args);
  REQUIRE(d.wait_ready());
  const std::string http = d.http();
  for (const char* cam : {"a", "c"}) {
    auto rec =
        test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", cam, clip.string(), "--fast"},
                          dir.path() / (std::string("rec-") + cam + ".log"));
    INFO(rec.output);
    REQUIRE(rec.status == 0);
  }
  test::wait_for_closed_frames(data, 2 * 50);

  // The scoped viewer through the CLI (`vigil token create --camera`), the others over HTTP.
  std::string tok[kWho];
  {
    const auto out = dir.path() / "create.out";
    auto r = test::run_to_exit(VIGIL_CLI_PATH,
                               {"token", "create", "--role", "viewer", "--camera", "a", "--camera", "b", "--label",
                                "scoped viewer", "--data", data.string()},
                               out);
    INFO(r.output);
    REQUIRE(r.status == 0);
    std::ifstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("vgl_", 0) == 0) tok[scoped_viewer] = line;
    }
    REQUIRE(!tok[scoped_viewer].empty());
  }
  tok[scoped_recorder] = make_token(http, "recorder", R"(["a","b"])", "scoped recorder");
  tok[events_a] = make_token(http, "events", R"(["a"])", "events token");
  tok[viewer] = make_token(http, "viewer", "null", "viewer");
  tok[admin] = test::token();
  {  // `vigil token list` shows each token's scope
    auto list = test::run_to_exit(VIGIL_CLI_PATH, {"token", "list", "--data", data.string()}, dir.path() / "list.log");
    REQUIRE(list.status == 0);
    CHECK_THAT(list.output, ContainsSubstring("CAMERAS"));
    CHECK_THAT(list.output, ContainsSubstring("a,b"));
    CHECK_THAT(list.output, ContainsSubstring("events"));
  }

  const std::string range = "from=-1h&to=@" + std::to_string(now_us() / 1'000'000 + 3600);  // --fast ran ahead of now
  // Media URLs that exist for both cameras: HLS segments as the playlists name them.
  std::map<std::string, std::string> segment;
  std::int64_t thumb_at_s = 0;
  for (const char* cam : {"a", "c"}) {
    const std::string base = std::string("/api/v1/cameras/") + cam + "/";
    auto pl = as(http, tok[admin], "GET", base + "hls.m3u8?" + range);
    INFO(pl.body);
    REQUIRE(pl.status == 200);
    const auto seg = first_segment(pl.body);
    REQUIRE(!seg.empty());
    segment[cam] = seg.rfind("/", 0) == 0 ? seg : base + seg;
    auto tl = as(http, tok[admin], "GET", base + "timeline?" + range);
    REQUIRE(tl.status == 200);
    thumb_at_s = tl.json().at("runs").as_array().at(0).at("start_us").to_number<std::int64_t>() / 1'000'000 + 1;
  }
  // An event of c for the scoped viewer not to see.
  auto posted = as(http, tok[admin], "POST", "/api/v1/events",
                   R"({"camera":"c","start_us":)" + std::to_string(now_us() - 1'000'000) + R"(,"type":"motion"})");
  REQUIRE(posted.status == 201);
  const auto event_c = std::to_string(posted.json().at("id").to_number<std::int64_t>());

  struct Row {
    std::string method, target, body;
    int expect[kWho];
  };
  const std::string recent_event_a = R"({"camera":"a","start_us":)" + std::to_string(now_us()) + R"(,"type":"person"})";
  const std::string recent_event_c = R"({"camera":"c","start_us":)" + std::to_string(now_us()) + R"(,"type":"person"})";
  //                                                              sv   sr   ev   v    ad
  const std::vector<Row> rows = {
      {"GET", "/healthz", "", {200, 200, 200, 200, 200}},
      {"GET", "/metrics", "", {200, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras", "", {200, 403, 403, 200, 200}},
      {"POST", "/api/v1/cameras", "{}", {403, 403, 403, 403, 400}},
      {"GET", "/api/v1/cameras/a", "", {200, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras/c", "", {403, 403, 403, 200, 200}},
      {"PATCH", "/api/v1/cameras/a", R"({"bogus":1})", {403, 403, 403, 403, 400}},
      {"DELETE", "/api/v1/cameras/nosuch", "", {403, 403, 403, 403, 404}},
      {"GET", "/api/v1/cameras/a/streams", "", {200, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras/c/streams", "", {403, 403, 403, 200, 200}},
      {"GET", "/api/v1/timeline?" + range, "", {200, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras/a/timeline?" + range, "", {200, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras/c/timeline?" + range, "", {403, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras/%63/timeline?" + range, "", {403, 403, 403, 200, 200}},  // c, %-encoded
      {"GET", "/api/v1/cameras/a/export.mp4?" + range, "", {200, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras/c/export.mp4?" + range, "", {403, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras/a/export/parts?" + range, "", {200, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras/c/export/parts?" + range, "", {403, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras/a/thumbnail.jpg?at=@" + std::to_string(thumb_at_s), "", {200, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras/c/thumbnail.jpg?at=@" + std::to_string(thumb_at_s), "", {403, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras/a/hls.m3u8?" + range, "", {200, 403, 403, 200, 200}},
      {"GET", "/api/v1/cameras/c/hls.m3u8?" + range, "", {403, 403, 403, 200, 200}},
      {"GET", segment["a"], "", {200, 403, 403, 200, 200}},
      {"GET", segment["c"], "", {403, 403, 403, 200, 200}},
      // Not recording now: 404 for whoever may ask, 403 for whoever may not.
      {"GET", "/api/v1/cameras/a/live.m3u8", "", {404, 403, 403, 404, 404}},
      {"GET", "/api/v1/cameras/c/live.m3u8", "", {403, 403, 403, 404, 404}},
      {"GET", "/api/v1/events?from=-1h", "", {200, 403, 403, 200, 200}},
      {"GET", "/api/v1/events?from=-1h&camera=c", "", {403, 403, 403, 200, 200}},
      {"GET", "/api/v1/events/" + event_c, "", {404, 403, 403, 200, 200}},
      {"POST", "/api/v1/events", recent_event_a, {403, 201, 201, 403, 201}},
      {"POST", "/api/v1/events", recent_event_c, {403, 403, 403, 403, 201}},
      {"DELETE", "/api/v1/events/999999", "", {403, 403, 403, 403, 404}},
      {"GET", "/api/v1/locks", "", {200, 403, 403, 200, 200}},
      {"POST", "/api/v1/locks", "{}", {403, 403, 403, 403, 400}},
      {"DELETE", "/api/v1/locks/999999", "", {403, 403, 403, 403, 404}},
      {"GET", "/api/v1/disks", "", {403, 403, 403, 200, 200}},
      {"GET", "/api/v1/admission/decisions?from=-1h", "", {403, 403, 403, 200, 200}},
      {"GET", "/api/v1/tokens", "", {403, 403, 403, 403, 200}},
      // The segments decoded, as the routes dispatch: %74okens is tokens.
      {"GET", "/api/v1/%74okens", "", {403, 403, 403, 403, 200}},
      {"POST", "/api/v1/tokens", R"({"role":"root"})", {403, 403, 403, 403, 400}},
      {"DELETE", "/api/v1/tokens/999999", "", {403, 403, 403, 403, 404}},
      {"GET", "/api/v1/audit", "", {403, 403, 403, 403, 200}},
  };
  for (const auto& row : rows) {
    for (int w = 0; w < kWho; ++w) {
      const auto r = as(http, tok[w], row.method, row.target, row.body);
      INFO(row.method << " " << row.target << " as " << kWhoName[w] << ": " << r.body.substr(0, 300));
      if (r.status == 0) FAIL(d.output());  // vigild is gone: say why
      CHECK(r.status == row.expect[w]);
    }
  }

  {  // the lists show a limited token only its cameras
    auto names = [&](const std::string& token) {
      auto r = as(http, token, "GET", "/api/v1/cameras");
      REQUIRE(r.status == 200);
      std::string out;
      const auto doc = r.json();
      for (const auto& c : doc.at("cameras").as_array()) out += std::string(c.at("name").as_string()) + ";";
      return out;
    };
    CHECK(names(tok[scoped_viewer]) == "a;");
    CHECK(names(tok[viewer]) == "a;c;");
    const auto tl = as(http, tok[scoped_viewer], "GET", "/api/v1/timeline?" + range).json();
    REQUIRE(tl.at("cameras").as_array().size() == 1);
    CHECK(tl.at("cameras").as_array().at(0).at("camera").as_string() == "a");
    auto ev = as(http, tok[scoped_viewer], "GET", "/api/v1/events?from=-1h");
    REQUIRE(ev.status == 200);
    const auto events = ev.json();
    CHECK(!events.at("events").as_array().empty());
    for (const auto& e : events.at("events").as_array()) CHECK(e.at("camera").as_string() == "a");
    CHECK(as(http, tok[viewer], "GET", "/api/v1/events?from=-1h").body.find(R"("camera":"c")") != std::string::npos);
    auto m_scoped = as(http, tok[scoped_viewer], "GET", "/metrics");
    auto m_all = as(http, tok[viewer], "GET", "/metrics");
    CHECK_THAT(m_scoped.body, ContainsSubstring("camera=\"a\""));
    CHECK_THAT(m_scoped.body, !ContainsSubstring("camera=\"c\""));
    CHECK_THAT(m_scoped.body, ContainsSubstring("vigil_http_request_duration_seconds"));  // the node's own series stay
    CHECK_THAT(m_all.body, ContainsSubstring("camera=\"c\""));
  }

  {  // wire: record, play and query, each camera, each token
    auto record = [](const std::string& cam) { return test::open_record(cam, 500'000); };
    auto play = [&](const std::string& cam) {
      proto::Envelope e;
      auto* o = e.mutable_open_playback();
      o->set_stream_name(cam);
      o->set_start_us(now_us() - 3'600'000'000);
      o->set_end_us(now_us() + 3'600'000'000);
      o->set_rate(1);
      return e;
    };
    auto query = [](const std::string& cam) {
      proto::Envelope e;
      e.mutable_query_request()->set_request_id(1);
      e.mutable_query_request()->set_kind(proto::QUERY_KIND_STREAMS);
      e.mutable_query_request()->add_stream_names(cam);
      return e;
    };
    struct WireRow {
      std::string what;
      proto::Envelope msg;
      const char* expect[kWho];
    };
    // b: in the recorder's scope, never recorded yet (recording creates it).
    const std::vector<WireRow> wire_rows = {
        {"record b", record("b"), {"denied", "admitted", "denied", "denied", "admitted"}},
        {"record c", record("c"), {"denied", "denied", "denied", "denied", "admitted"}},
        {"play a", play("a"), {"playing", "denied", "denied", "playing", "playing"}},
        {"play c", play("c"), {"denied", "denied", "denied", "playing", "playing"}},
        {"query a", query("a"), {"answered", "denied", "denied", "answered", "answered"}},
        {"query c", query("c"), {"denied", "denied", "denied", "answered", "answered"}},
    };
    for (const auto& row : wire_rows) {
      for (int w = 0; w < kWho; ++w) {
        INFO(row.what << " as " << kWhoName[w]);
        CHECK(wire_outcome(d.wire(), tok[w], row.msg) == row.expect[w]);
      }
    }
  }

  {  // backdating: a non-admin's first packet is dated at most --max-backdate (5 s) ago
    auto started_us = [&](const std::string& cam) {
      std::int64_t latest = 0;
      auto r = as(http, tok[admin], "GET", "/api/v1/cameras/" + cam);
      REQUIRE(r.status == 200);
      const auto doc = r.json();
      for (const auto& s : doc.at("streams").as_array()) {
        latest = std::max(latest, s.at("started_at_us").to_number<std::int64_t>());
      }
      return latest;
    };
    auto backdated = [](const std::string& cam, std::int64_t first_wall_us) {
      auto e = test::open_record(cam, 500'000);
      e.mutable_open_record()->set_first_wall_us(first_wall_us);
      return e;
    };
    const auto before = now_us();
    CHECK(wire_outcome(d.wire(), tok[scoped_recorder], backdated("b", before - 60'000'000)) == "admitted");
    CHECK(started_us("b") >= before - 5'000'000);
    CHECK(wire_outcome(d.wire(), tok[admin], backdated("d", before - 60'000'000)) == "admitted");
    CHECK(started_us("d") == before - 60'000'000);  // an admin may backdate up to an hour
    CHECK_THAT(d.output(), ContainsSubstring("backdated further than --max-backdate"));

    // Events: one that ended more than 5 s ago is refused but to an admin.
    const std::string old_event = R"({"camera":"a","start_us":)" + std::to_string(now_us() - 90'000'000) +
                                  R"(,"end_us":)" + std::to_string(now_us() - 60'000'000) + R"(,"type":"motion"})";
    auto refused = as(http, tok[events_a], "POST", "/api/v1/events", old_event);
    CHECK(refused.status == 403);
    CHECK_THAT(refused.body, ContainsSubstring("--max-backdate"));
    CHECK(as(http, tok[scoped_recorder], "POST", "/api/v1/events", old_event).status == 403);
    CHECK(as(http, tok[admin], "POST", "/api/v1/events", old_event).status == 201);
    // A long event that ends now may start long ago (a detector posts it when it ends).
    const std::string long_event = R"({"camera":"a","start_us":)" + std::to_string(now_us() - 90'000'000) +
                                   R"(,"end_us":)" + std::to_string(now_us()) + R"(,"type":"motion"})";
    CHECK(as(http, tok[events_a], "POST", "/api/v1/events", long_event).status == 201);
  }

  {  // audit rows: the scoped viewer's export; the admin's lock and its release
    auto audit = [&](const std::string& query) {
      auto r = as(http, tok[admin], "GET", "/api/v1/audit?" + query);
      INFO(r.body);
      REQUIRE(r.status == 200);
      return r.json().at("audit").as_array();
    };
    const auto exports = audit("action=export&camera=a").size();
    REQUIRE(as(http, tok[scoped_viewer], "GET", "/api/v1/cameras/a/export.mp4?" + range).status == 200);
    // A player's later range request of the same file is not another export.
    REQUIRE(test::http_request(http, "GET", "/api/v1/cameras/a/export.mp4?" + range,
                               "Authorization: Bearer " + tok[scoped_viewer] + "\r\nRange: bytes=100-\r\n")
                .status == 206);
    const auto rows_after = audit("action=export&camera=a");
    REQUIRE(rows_after.size() == exports + 1);
    const auto& newest = rows_after.at(0).as_object();
    CHECK(newest.at("who").as_string() == "scoped viewer");
    CHECK(!newest.at("token_id").is_null());
    CHECK(newest.at("from_us").to_number<std::int64_t>() > 0);
    CHECK(newest.at("to_us").to_number<std::int64_t>() > newest.at("from_us").to_number<std::int64_t>());
    CHECK(newest.at("at_us").to_number<std::int64_t>() >= now_us() - 60'000'000);

    auto lock = as(http, tok[admin], "POST", "/api/v1/locks",
                   R"({"camera":"a","from":"-1h","to":"@)" + std::to_string(now_us() / 1'000'000 + 3600) +
                       R"(","reason":"case 42","locked_by":"det. smith"})");
    INFO(lock.body);
    REQUIRE(lock.status == 201);
    const auto lock_id = lock.json().at("id").to_number<std::int64_t>();
    auto created = audit("action=lock_create");
    REQUIRE(!created.empty());
    CHECK(created.at(0).at("lock_id").to_number<std::int64_t>() >= lock_id);
    CHECK(created.at(0).at("reason").as_string() == "case 42");
    CHECK(created.at(0).at("camera").as_string() == "a");
    CHECK_THAT(std::string(created.at(0).at("who").as_string()), ContainsSubstring("det. smith"));
    // The scoped viewer sees a's lock in the list; a lock of c would not be shown to it.
    CHECK(as(http, tok[scoped_viewer], "GET", "/api/v1/locks").body.find("case 42") != std::string::npos);
    REQUIRE(as(http, tok[admin], "DELETE", "/api/v1/locks/" + std::to_string(lock_id)).status == 200);
    auto released = audit("action=lock_release");
    REQUIRE(released.size() == 1);
    CHECK(released.at(0).at("lock_id").to_number<std::int64_t>() == lock_id);
    CHECK(released.at(0).at("reason").as_string() == "case 42");
    CHECK(released.at(0).at("camera").as_string() == "a");
    CHECK(!released.at(0).at("token_id").is_null());
    CHECK(as(http, tok[admin], "GET", "/api/v1/audit?action=bogus").status == 400);
  }
}
