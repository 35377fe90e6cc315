// The events API on a real vigild (external catalog, so the test can read the events table):
// POST one event and a batch (microsecond and time-string forms), GET with each filter and
// combinations returning exactly the expected events with padded clips, media URLs and the
// recorded flag; cursor pagination; GET and DELETE by id; 405 with Allow.
// Hostile input: http_events_hostile_test.cpp.
#include "tests/server/events_api_fixture.hpp"

using Catch::Matchers::ContainsSubstring;
namespace json = boost::json;
using namespace vigil::test::events_api;

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
