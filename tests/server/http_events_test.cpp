// The events API on a real vigild (external catalog, so the test can read the events table):
// POST one event and a batch (microsecond and time-string forms), GET with each filter and
// combinations returning exactly the expected events with padded clips, media URLs and the
// recorded flag; cursor pagination; GET and DELETE by id; 405 with Allow. Then hostile input:
// SQL in every query parameter and JSON field (plain and percent-encoded), malformed JSON,
// wrong types, NaN and huge numbers, out-of-range confidence and zones, bad attributes, unknown
// cameras, bad time ranges, too many parameters, limits and batches over their caps, a body over
// the server's limit: each a 4xx with "error", and the events table unchanged afterwards.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "common/time_arg.hpp"
#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
namespace json = boost::json;

namespace {

constexpr std::int64_t S = 1'000'000;
constexpr std::int64_t T0 = 1'767'225'600 * S;  // 2026-01-01T00:00:00Z

using Reply = vigil::test::HttpResult;

struct Api : vigil::test::HttpApi {
  Reply post(const std::string& body) const { return call("POST", "/api/v1/events", body); }
};

std::vector<std::int64_t> ids_of(const Reply& r) {
  std::vector<std::int64_t> out;
  const auto doc = r.json();
  for (const auto& e : doc.at("events").as_array()) out.push_back(e.at("id").as_int64());
  return out;
}

// The whole events table as one string: any change to any row changes it.
std::string table_fingerprint(const std::string& db) {
  pqxx::connection conn(db);
  pqxx::read_transaction tx(conn);
  return tx.exec1(
               "SELECT count(*)::text || ':' || coalesce(md5(string_agg(e::text, '|' ORDER BY id)), '') "
               "FROM events e")[0]
             .as<std::string>() +
         "/" + tx.exec1("SELECT count(*) FROM cameras")[0].as<std::string>();
}

struct Server {
  vigil::test::TempDir dir;
  std::string db;
  vigil::test::VigildProcess d;
  Api api;
  explicit Server(const std::string& hint)
      : db(vigil::test::shared_cluster().create_database(hint)),
        d(dir.path() / "data", {"--db", db, "--no-camera-pull"}) {
    REQUIRE(d.wait_ready());
    api.host = d.http();
    for (const char* name : {"porch", "lobby", "gate"}) {
      REQUIRE(vigil::test::run_to_exit(VIGIL_CLI_PATH, {"camera", "add", name, "rtsp://10.0.0.9/s", "--http", d.http()},
                                       dir.path() / "add.log")
                  .status == 0);
    }
  }
};

}  // namespace

TEST_CASE("HTTP events: post, query with clips, paginate, get and delete", "[http][events]") {
  Server s("http_events");
  const Api& api = s.api;

  // porch has video over [T0 + 14 s, T0 + 16 s): the clips that reach it are `recorded`.
  {
    pqxx::connection conn(s.db);
    pqxx::work tx(conn);
    const auto disk = tx.exec1(
                            "INSERT INTO disks (node, device_path, capacity_bytes) "
                            "VALUES ('elsewhere', 'sim:9', 1000000) RETURNING id")[0]
                          .as<std::int64_t>();
    const auto vol = tx.exec_params1(
                           "INSERT INTO volumes (disk_id, path, capacity_bytes, extent_bytes) "
                           "VALUES ($1, 'sim:9', 1048576, 4096) RETURNING id",
                           disk)[0]
                         .as<std::int64_t>();
    const auto stream =
        tx.exec_params1(
              "INSERT INTO streams (camera_id, codec, declared_rate_bps, state, started_at_us, ended_at_us) "
              "SELECT id, 'h264', 1000, 'stopped', $1, $2 FROM cameras WHERE name = 'porch' RETURNING id",
              T0, T0 + 100 * S)[0]
            .as<std::int64_t>();
    tx.exec_params0(
        "INSERT INTO segments (stream_id, volume_id, state, start_us, end_us, checksum_crc32c, closed_at_us) "
        "VALUES ($1, $2, 'closed', $3, $4, 0, $4)",
        stream, vol, T0 + 14 * S, T0 + 16 * S);
    tx.commit();
  }

  // e1: porch [10 s, 12 s] motion, microseconds.
  auto r1 = api.post(R"({"camera":"porch","start_us":1767225610000000,"end_us":1767225612000000,"type":"motion"})");
  INFO(r1.body);
  REQUIRE(r1.status == 201);
  const auto e1 = r1.json().at("id").as_int64();
  CHECK(r1.json().at("ids").as_array().size() == 1);
  CHECK_THAT(r1.head, ContainsSubstring("Location: /api/v1/events/" + std::to_string(e1)));

  // e2: lobby at 20.5 s (a point event), time strings, every optional field.
  auto r2 = api.post(R"({"camera":"lobby","start":"@1767225620.5","type":"object","object_class":"person",
                         "confidence":0.8,"location":{"x0":0.1,"y0":0.2,"x1":0.3,"y1":0.4},
                         "attributes":{"color":"red","plate":"AB123"},"source":"det-1"})");
  INFO(r2.body);
  REQUIRE(r2.status == 201);
  const auto e2 = r2.json().at("id").as_int64();

  // e3..e5: a batch; ISO times, an array body.
  auto rb = api.post(R"([
      {"camera":"gate","start":"2026-01-01T00:00:30Z","end":"2026-01-01T00:00:40Z","type":"object",
       "object_class":"car","confidence":0.4,"location":{"x0":0.6,"y0":0.6,"x1":0.9,"y1":0.9},
       "attributes":{"color":"blue","plate":"XY999"}},
      {"camera":"porch","start_us":1767225650000000,"type":"line_crossing","object_class":"person",
       "confidence":1,"attributes":{"color":"red"}},
      {"camera":"lobby","start_us":1767225660000000,"end_us":1767225661000000,"type":"tamper","source":null}
    ])");
  INFO(rb.body);
  REQUIRE(rb.status == 201);
  REQUIRE(rb.json().at("ids").as_array().size() == 3);
  CHECK_FALSE(rb.json().as_object().contains("id"));
  const auto e3 = rb.json().at("ids").at(0).as_int64();
  const auto e4 = rb.json().at("ids").at(1).as_int64();
  const auto e5 = rb.json().at("ids").at(2).as_int64();

  const std::string range =
      "/api/v1/events?from=%40"
      "1767225600&to=%40"
      "1767225700";
  auto all = api.get(range);
  INFO(all.body);
  REQUIRE(all.status == 200);
  CHECK(ids_of(all) == std::vector<std::int64_t>{e5, e4, e3, e2, e1});  // newest first
  CHECK(all.json().at("next").is_null());
  CHECK(all.json().at("from_us").as_int64() == T0);
  CHECK(all.json().at("to_us").as_int64() == T0 + 100 * S);

  SECTION("clips: padded ranges, URLs in the @seconds form, recorded from the segments") {
    const auto all_doc = all.json();
    const auto& ev = all_doc.at("events").as_array();
    const auto& c1 = ev[4].at("clip");  // e1 [10, 12] + 5 s each side = [5, 17], reaches the video at [14, 16)
    CHECK(c1.at("from_us").as_int64() == T0 + 5 * S);
    CHECK(c1.at("to_us").as_int64() == T0 + 17 * S);
    CHECK(c1.at("recorded").as_bool());
    CHECK(c1.at("export_url").as_string() == "/api/v1/cameras/porch/export.mp4?from=@1767225605&to=@1767225617");
    CHECK(c1.at("hls_url").as_string() == "/api/v1/cameras/porch/hls.m3u8?from=@1767225605&to=@1767225617");
    const auto& c4 = ev[1].at("clip");  // e4 porch at 50 s: no video there
    CHECK_FALSE(c4.at("recorded").as_bool());

    auto padded = api.get(range + "&camera=lobby&pad_before=2.25&pad_after=0");
    INFO(padded.body);
    REQUIRE(padded.status == 200);
    REQUIRE(ids_of(padded) == std::vector<std::int64_t>{e5, e2});
    const auto padded_doc = padded.json();
    const auto& c2 = padded_doc.at("events").at(1).at("clip");
    CHECK(c2.at("from_us").as_int64() == T0 + 18'250'000);
    CHECK(c2.at("to_us").as_int64() == T0 + 20'500'000);
    CHECK_FALSE(c2.at("recorded").as_bool());
    CHECK(c2.at("export_url").as_string() == "/api/v1/cameras/lobby/export.mp4?from=@1767225618.25&to=@1767225620.5");
    // The media routes take these URLs as they are (no recording of lobby there: 404, not 400).
    for (const char* url : {"export_url", "hls_url"}) {
      auto media = api.get(std::string(c2.at(url).as_string()));
      INFO(url << " -> " << media.status << " " << media.body);
      CHECK(media.status == 404);
      CHECK_THAT(media.body, !ContainsSubstring("no such resource"));  // the route exists and took the range
    }
    // The URL's times parse back, exactly, with the API's own time forms.
    CHECK(vigil::parse_time_arg("@1767225618.25", 0) == T0 + 18'250'000);
    CHECK(vigil::parse_time_arg("@1767225620.5", 0) == T0 + 20'500'000);

    auto no_pad = api.get(range + "&camera=porch&pad_before=0&pad_after=0");
    REQUIRE(no_pad.status == 200);
    REQUIRE(ids_of(no_pad) == std::vector<std::int64_t>{e4, e1});
    CHECK_FALSE(no_pad.json().at("events").at(1).at("clip").at("recorded").as_bool());  // [10, 12]: before the video
    CHECK(no_pad.json().at("events").at(1).at("clip").at("to_us").as_int64() == T0 + 12 * S);
  }
  SECTION("each filter and combinations") {
    auto ids = [&](const std::string& filter) {
      auto r = api.get(range + filter);
      INFO(filter << " -> " << r.body);
      REQUIRE(r.status == 200);
      return ids_of(r);
    };
    using V = std::vector<std::int64_t>;
    CHECK(ids("&camera=porch") == V{e4, e1});
    CHECK(ids("&camera=porch&camera=gate") == V{e4, e3, e1});
    CHECK(ids("&cameras=lobby,gate") == V{e5, e3, e2});
    CHECK(ids("&type=object") == V{e3, e2});
    CHECK(ids("&type=object&type=tamper") == V{e5, e3, e2});
    CHECK(ids("&object_class=person") == V{e4, e2});
    CHECK(ids("&object_class=car&object_class=person") == V{e4, e3, e2});
    CHECK(ids("&zone=0,0,0.2,0.25") == V{e5, e4, e2, e1});  // e2 overlaps; no location = whole frame
    CHECK(ids("&zone=0.5,0.5,1,1") == V{e5, e4, e3, e1});
    CHECK(ids("&attr=color:red") == V{e4, e2});
    CHECK(ids("&attr=color%3Ared&attr=plate:AB123") == V{e2});
    CHECK(ids("&attr=color:RED").empty());
    CHECK(ids("&min_confidence=0.8") == V{e4, e2});
    CHECK(ids("&min_confidence=0") == V{e4, e3, e2});
    CHECK(ids("&type=object&min_confidence=0.5&cameras=lobby,gate") == V{e2});
    CHECK(ids("&object_class=person&attr=color:red&zone=0.5,0.5,1,1") == V{e4});
    CHECK(ids("&camera=gate&type=motion").empty());
    // The range: closed, so an event ending exactly at `from` is found.
    auto edge = api.get(
        "/api/v1/events?from=%40"
        "1767225612&to=%40"
        "1767225612");
    REQUIRE(edge.status == 200);
    CHECK(ids_of(edge) == V{e1});
  }
  SECTION("pagination with the cursor covers every event once") {
    std::vector<std::int64_t> seen;
    std::string target = range + "&limit=2";
    for (int pages = 0; pages < 10; ++pages) {
      auto r = api.get(target);
      INFO(target << " -> " << r.body);
      REQUIRE(r.status == 200);
      const auto page = ids_of(r);
      CHECK(page.size() <= 2);
      seen.insert(seen.end(), page.begin(), page.end());
      if (r.json().at("next").is_null()) break;
      target = range + "&limit=2&cursor=" + std::string(r.json().at("next").as_string());
    }
    CHECK(seen == std::vector<std::int64_t>{e5, e4, e3, e2, e1});
  }
  SECTION("get and delete by id") {
    auto one = api.get("/api/v1/events/" + std::to_string(e2));
    INFO(one.body);
    REQUIRE(one.status == 200);
    const auto one_doc = one.json();
    const auto& o = one_doc.as_object();
    CHECK(o.at("camera").as_string() == "lobby");
    CHECK(o.at("start_us").as_int64() == T0 + 20'500'000);
    CHECK(o.at("end_us").as_int64() == T0 + 20'500'000);
    CHECK(o.at("type").as_string() == "object");
    CHECK(o.at("object_class").as_string() == "person");
    CHECK(o.at("confidence").as_double() == 0.8);
    CHECK(o.at("location") == json::parse(R"({"x0":0.1,"y0":0.2,"x1":0.3,"y1":0.4})"));
    CHECK(o.at("attributes") == json::parse(R"({"color":"red","plate":"AB123"})"));
    CHECK(o.at("source").as_string() == "det-1");
    CHECK(o.at("clip").at("from_us").as_int64() == T0 + 15'500'000);
    auto e5_json = api.get("/api/v1/events/" + std::to_string(e5) + "?pad_after=300");
    REQUIRE(e5_json.status == 200);
    CHECK(e5_json.json().at("object_class").is_null());
    CHECK(e5_json.json().at("location").is_null());
    CHECK(e5_json.json().at("clip").at("to_us").as_int64() == T0 + 361 * S);

    auto del = api.call("DELETE", "/api/v1/events/" + std::to_string(e2));
    INFO(del.body);
    CHECK(del.status == 200);
    CHECK(api.get("/api/v1/events/" + std::to_string(e2)).status == 404);
    CHECK(api.call("DELETE", "/api/v1/events/" + std::to_string(e2)).status == 404);
    CHECK(ids_of(api.get(range)) == std::vector<std::int64_t>{e5, e4, e3, e1});
    CHECK(api.get("/api/v1/events/999999999").status == 404);
  }
  SECTION("other methods: 405 with Allow") {
    auto put = api.call("PUT", "/api/v1/events", "{}");
    CHECK(put.status == 405);
    CHECK_THAT(put.head, ContainsSubstring("Allow: GET, HEAD, POST"));
    auto patch = api.call("PATCH", "/api/v1/events/" + std::to_string(e1), "{}");
    CHECK(patch.status == 405);
    CHECK_THAT(patch.head, ContainsSubstring("Allow: GET, HEAD, DELETE"));
    CHECK(api.call("POST", "/api/v1/events/" + std::to_string(e1), "{}").status == 405);
  }
  SECTION("a batch of exactly the cap is accepted") {
    std::string body = "[";
    for (int i = 0; i < 1000; ++i) {
      if (i) body += ',';
      body += R"({"camera":"gate","start_us":)" + std::to_string(T0 + 1000 * S + i) + R"(,"type":"motion"})";
    }
    auto r = api.post(body + "]");
    INFO(r.body.substr(0, 300));
    REQUIRE(r.status == 201);
    CHECK(r.json().at("ids").as_array().size() == 1000);
    auto page = api.get(
        "/api/v1/events?from=%40"
        "1767226600&to=%40"
        "1767226601&limit=1000");
    REQUIRE(page.status == 200);
    CHECK(ids_of(page).size() == 1000);
    CHECK(page.json().at("next").is_null());
  }
  SECTION("SQL-looking text in free-form fields is stored verbatim, nothing else changes") {
    const std::string evil = R"(x'); DROP TABLE events; --)";
    auto r = api.post(json::serialize(json::object{{"camera", "porch"},
                                                   {"start_us", T0 + 70 * S},
                                                   {"type", "manual"},
                                                   {"source", evil},
                                                   {"attributes", {{"note", evil}, {evil, 1}}}}));
    INFO(r.body);
    REQUIRE(r.status == 201);
    auto back = api.get("/api/v1/events/" + std::to_string(r.json().at("id").as_int64()));
    REQUIRE(back.status == 200);
    CHECK(back.json().at("source").as_string() == evil);
    CHECK(back.json().at("attributes").at("note").as_string() == evil);
    auto found = api.get(range + "&attr=note:x%27)%3B%20DROP%20TABLE%20events%3B%20--");
    INFO(found.body);
    REQUIRE(found.status == 200);
    CHECK(ids_of(found) == std::vector<std::int64_t>{r.json().at("id").as_int64()});
    CHECK(ids_of(api.get(range)).size() == 6);
  }
}

TEST_CASE("HTTP events: hostile input is a 4xx with a reason and changes nothing", "[http][events]") {
  Server s("http_events_hostile");
  const Api& api = s.api;
  REQUIRE(api.post(R"({"camera":"porch","start_us":1767225610000000,"type":"motion"})").status == 201);
  REQUIRE(api.post(R"([{"camera":"lobby","start":"@1767225620","type":"object","attributes":{"a":"b"}}])").status ==
          201);
  const auto before = table_fingerprint(s.db);

  auto expect_4xx = [&](const Reply& r, const std::string& what, int status = 400) {
    INFO(what << " -> " << r.status << " " << r.body);
    CHECK(r.status == status);
    CHECK_THAT(r.body, ContainsSubstring("\"error\""));
  };

  SECTION("query parameters") {
    const std::string q = "/api/v1/events?from=-1h";
    for (const std::string& target : {
             std::string("/api/v1/events"),  // from missing
             std::string("/api/v1/events?from=yesterday-ish"),
             std::string("/api/v1/events?from=-1h&to=-2h"),  // inverted
             std::string("/api/v1/events?from=@0&to=now"),   // over 400 days
             std::string("/api/v1/events?from=%27%3B%20DROP%20TABLE%20events%3B--"),
             std::string("/api/v1/events?from=-1h&to=now%27--"),
             std::string("/api/v1/events?from=-1e300d"),  // an offset beyond any time
             std::string("/api/v1/events?from=-99999999999d&to=-99999999998d"),
             std::string("/api/v1/events?from=9999-01-01T00:00:00Z&to=9999-01-02T00:00:00Z"),
             q + "&camera=porch'--",
             q + "&camera=porch%27%3B%20DROP%20TABLE%20events%3B--",
             q + "&cameras=porch,lobby%27%20OR%20%271%27%3D%271",
             q + "&type=motion'--",
             q + "&type=motion%27%20OR%201%3D1--",
             q + "&type=Motion",
             q + "&type=",
             q + "&object_class=person')--",
             q + "&object_class=%27%20OR%20%271%27%3D%271",
             q + "&zone=0,0,1",
             q + "&zone=0,0,1,2",
             q + "&zone=0.5,0,0.4,1",
             q + "&zone=NaN,0,1,1",
             q + "&zone=0,0,1e999,1",
             q + "&zone=0,0,1,1,1",
             q + "&zone=0,0,1,1%27--",
             q + "&attr=color",
             q + "&attr=:red",
             q + "&attr=color:red&attr=color:blue",
             q + "&attr=col%00or:red",
             q + "&min_confidence=1.5",
             q + "&min_confidence=-0.1",
             q + "&min_confidence=NaN",
             q + "&min_confidence=1e999",
             q + "&min_confidence=0.5%27--",
             q + "&limit=1001",
             q + "&limit=0",
             q + "&limit=2.5",
             q + "&limit=1e12",
             q + "&limit=ten",
             q + "&cursor=abc",
             q + "&cursor=1767225610000000:0",
             q + "&cursor=1:2:3",
             q + "&cursor=99999999999999999999:1",
             q + "&cursor=1%27%3B--:1",
             q + "&pad_before=301",
             q + "&pad_after=-1",
             q + "&pad_before=inf",
             q + "&nonsense=1",
             q + "&limit=1%3B%20DELETE%20FROM%20events",
             std::string("/api/v1/events/abc"),
             std::string("/api/v1/events/0"),
             std::string("/api/v1/events/-1"),
             std::string("/api/v1/events/1%20OR%201%3D1"),
             std::string("/api/v1/events/99999999999999999999"),
             std::string("/api/v1/events/1?pad_before=999"),
         }) {
      expect_4xx(api.get(target), "GET " + target);
    }
    std::string many = q;
    for (int i = 0; i < 17; ++i) many += "&attr=k" + std::to_string(i) + ":v";
    expect_4xx(api.get(many), "17 attr");
    std::string params = q;
    for (int i = 0; i < 300; ++i) params += "&type=t" + std::to_string(i);
    expect_4xx(api.get(params), "300 parameters");
    expect_4xx(api.get(q + "&camera=nobody"), "unknown camera", 404);
    expect_4xx(api.call("DELETE", "/api/v1/events/abc%27--"), "DELETE bad id");
    expect_4xx(api.call("DELETE", "/api/v1/events/424242"), "DELETE missing", 404);
    expect_4xx(api.call("DELETE", "/api/v1/events"), "DELETE the collection", 405);
  }
  SECTION("POST bodies") {
    const std::string ok_head = R"("camera":"porch","start_us":1767225630000000,"type":"motion")";
    std::string big_value(17 * 1024, 'x');
    std::vector<std::pair<std::string, std::string>> bad = {
        {"malformed", R"({"camera":)"},
        {"not JSON", "camera=porch&type=motion"},
        {"empty", ""},
        {"trailing comma", "{" + ok_head + ",}"},
        {"NaN", "{" + ok_head + R"(,"confidence":NaN})"},
        {"Infinity", "{" + ok_head + R"(,"confidence":Infinity})"},
        {"huge confidence", "{" + ok_head + R"(,"confidence":1e999})"},
        {"a scalar body", "42"},
        {"camera number", R"({"camera":5,"start_us":1767225630000000,"type":"motion"})"},
        {"camera injection",
         R"({"camera":"porch'; DROP TABLE events; --","start_us":1767225630000000,"type":"motion"})"},
        {"camera missing", R"({"start_us":1767225630000000,"type":"motion"})"},
        {"type injection",
         R"({"camera":"porch","start_us":1767225630000000,"type":"motion'); DELETE FROM events; --"})"},
        {"type upper", R"({"camera":"porch","start_us":1767225630000000,"type":"Motion"})"},
        {"type number", R"({"camera":"porch","start_us":1767225630000000,"type":7})"},
        {"type missing", R"({"camera":"porch","start_us":1767225630000000})"},
        {"object_class injection", "{" + ok_head + R"(,"object_class":"car' OR '1'='1"})"},
        {"object_class number", "{" + ok_head + R"(,"object_class":5})"},
        {"start_us string", R"({"camera":"porch","start_us":"1767225630000000","type":"motion"})"},
        {"start_us fraction", R"({"camera":"porch","start_us":1767225630000000.5,"type":"motion"})"},
        {"start_us huge", R"({"camera":"porch","start_us":1e300,"type":"motion"})"},
        {"start_us over int64", R"({"camera":"porch","start_us":99999999999999999999,"type":"motion"})"},
        {"start_us negative", R"({"camera":"porch","start_us":-1,"type":"motion"})"},
        {"start_us beyond", R"({"camera":"porch","start_us":100000000000000001,"type":"motion"})"},
        {"start injection", R"({"camera":"porch","start":"@1'; DROP TABLE events; --","type":"motion"})"},
        {"start word", R"({"camera":"porch","start":"yesterday","type":"motion"})"},
        {"start missing", R"({"camera":"porch","type":"motion"})"},
        {"start twice", R"({"camera":"porch","start":"now","start_us":1767225630000000,"type":"motion"})"},
        {"end before start", "{" + ok_head + R"(,"end_us":1767225629999999})"},
        {"over 400 days", "{" + ok_head + R"(,"end":"@1802000000"})"},
        {"end number as string form", "{" + ok_head + R"(,"end":1767225640})"},
        {"confidence high", "{" + ok_head + R"(,"confidence":1.5})"},
        {"confidence negative", "{" + ok_head + R"(,"confidence":-0.1})"},
        {"confidence string", "{" + ok_head + R"(,"confidence":"0.5"})"},
        {"location array", "{" + ok_head + R"(,"location":[0,0,1,1]})"},
        {"location out of frame", "{" + ok_head + R"(,"location":{"x0":0,"y0":0,"x1":1.5,"y1":1}})"},
        {"location inverted", "{" + ok_head + R"(,"location":{"x0":0.5,"y0":0,"x1":0.4,"y1":1}})"},
        {"location missing y1", "{" + ok_head + R"(,"location":{"x0":0,"y0":0,"x1":1,"z":1}})"},
        {"location string", "{" + ok_head + R"(,"location":{"x0":"0","y0":0,"x1":1,"y1":1}})"},
        {"attributes array", "{" + ok_head + R"(,"attributes":[1,2]})"},
        {"attributes string", "{" + ok_head + R"(,"attributes":"{}"})"},
        {"attributes too big", "{" + ok_head + R"(,"attributes":{"k":")" + big_value + R"("}})"},
        {"attributes NUL", "{" + ok_head + R"(,"attributes":{"k":"a\u0000b"}})"},
        {"source number", "{" + ok_head + R"(,"source":5})"},
        {"source NUL", "{" + ok_head + R"(,"source":"a\u0000"})"},
        {"source long", "{" + ok_head + R"(,"source":")" + std::string(300, 's') + R"("})"},
        {"unknown field", "{" + ok_head + R"(,"severity":3})"},
        {"empty batch", "[]"},
        {"batch of a non-object", "[{" + ok_head + "}, 5]"},
        {"batch with one bad event", "[{" + ok_head + R"(}, {"camera":"porch","start_us":1,"type":"BAD"}])"},
        {"invalid UTF-8", "{" + ok_head + ",\"source\":\"\xff\xfe\"}"},
    };
    for (const auto& [what, body] : bad) expect_4xx(api.post(body), what);
    auto batch_msg = api.post("[{" + ok_head + R"(}, {"camera":"porch","start_us":1,"type":"BAD"}])");
    CHECK_THAT(batch_msg.body, ContainsSubstring("event 1"));
    CHECK_THAT(batch_msg.body, ContainsSubstring("type"));
    CHECK_THAT(api.post("{" + ok_head + R"(,"confidence":1.5})").body, ContainsSubstring("confidence"));

    std::string over = "[";
    for (int i = 0; i < 1001; ++i) over += std::string(i ? "," : "") + "{" + ok_head + "}";
    expect_4xx(api.post(over + "]"), "1001 events");
    expect_4xx(api.post(R"({"camera":"nobody","start_us":1767225630000000,"type":"motion"})"), "unknown camera", 404);
    expect_4xx(api.post("[{" + ok_head + R"(}, {"camera":"nobody","start_us":1767225630000000,"type":"motion"}])"),
               "unknown camera in a batch", 404);
    expect_4xx(api.call("POST", "/api/v1/events", "{" + ok_head + "}", "text/plain"), "text/plain", 415);
    expect_4xx(api.call("POST", "/api/v1/events", "{" + ok_head + "}", "application/x-www-form-urlencoded"), "form",
               415);
    expect_4xx(api.call("POST", "/api/v1/events?camera=porch", "{" + ok_head + "}"), "query on POST");
    // Over HttpServer's 1 MiB body limit: refused from the headers, before any of the body.
    auto big = vigil::test::http_exchange(api.host,
                                          "POST /api/v1/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                          "Content-Type: application/json\r\nContent-Length: 2000000\r\n\r\n");
    expect_4xx(big, "2 MB body", 413);
  }
  CHECK(table_fingerprint(s.db) == before);
  // And the API still answers normally.
  auto r = api.get(
      "/api/v1/events?from=%40"
      "1767225600&to=%40"
      "1767225700");
  REQUIRE(r.status == 200);
  CHECK(r.json().at("events").as_array().size() == 2);
}
