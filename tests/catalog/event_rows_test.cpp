// Events against a real PostgreSQL: a seeded set across cameras, types, object classes, frame
// zones, attributes, confidences and times; every filter alone and combined returns exactly the
// expected events, newest first; closed-range edges; keyset pagination covers every event once;
// clips are padded and clamped at 0; `recorded` follows the segments of the camera's video
// streams (open and closed count, deleting and audio do not); batches are all or nothing; the
// time filter uses the GiST range index.
#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <map>
#include <pqxx/pqxx>
#include <set>

#include "catalog/event_rows.hpp"
#include "catalog/migrator.hpp"
#include "tests/support/temp_cluster.hpp"

using namespace vigil;

namespace {

constexpr std::int64_t S = 1'000'000;
constexpr std::int64_t T0 = 1'767'225'600 * S;  // 2026-01-01T00:00:00Z

struct Seed {
  int label;
  catalog::NewEvent event;
};

std::vector<Seed> seeds() {
  using catalog::FrameBox;
  auto ev = [](std::string cam, std::int64_t start, std::int64_t end, std::string type) {
    catalog::NewEvent e;
    e.camera = std::move(cam);
    e.start_us = start;
    e.end_us = end;
    e.type = std::move(type);
    return e;
  };
  std::vector<Seed> out;
  out.push_back({1, ev("cam-a", T0 + 10 * S, T0 + 12 * S, "motion")});
  {
    auto e = ev("cam-a", T0 + 20 * S, T0 + 20 * S, "object");
    e.object_class = "person";
    e.confidence = 0.9;
    e.location = FrameBox{0.1, 0.1, 0.3, 0.4};
    e.attributes_json = R"({"color":"red","plate":"AB123"})";
    e.source = "det1";
    out.push_back({2, e});
  }
  {
    auto e = ev("cam-b", T0 + 30 * S, T0 + 40 * S, "object");
    e.object_class = "car";
    e.confidence = 0.5;
    e.location = FrameBox{0.6, 0.6, 0.9, 0.9};
    e.attributes_json = R"({"color":"blue","plate":"XY999"})";
    out.push_back({3, e});
  }
  {
    auto e = ev("cam-b", T0 + 50 * S, T0 + 55 * S, "line_crossing");
    e.object_class = "person";
    e.confidence = 0.75;
    e.location = FrameBox{0.0, 0.5, 0.2, 0.7};
    e.attributes_json = R"({"color":"red","line":"north"})";
    out.push_back({4, e});
  }
  out.push_back({5, ev("cam-c", T0 + 5 * S, T0 + 100 * S, "tamper")});
  {
    auto e = ev("cam-a", T0 + 100 * S, T0 + 101 * S, "object");
    e.object_class = "car";
    e.confidence = 0.3;
    e.location = FrameBox{0.4, 0.4, 0.5, 0.5};
    e.attributes_json = R"({"color":"red","nested":{"k":1},"plate":"AB123"})";
    out.push_back({6, e});
  }
  {
    auto e = ev("cam-c", T0 + 200 * S, T0 + 210 * S, "object");
    e.object_class = "person";
    e.confidence = 1.0;
    e.location = FrameBox{0.45, 0.45, 0.55, 0.55};
    e.attributes_json = R"({"color":"green"})";
    out.push_back({7, e});
  }
  {
    auto e = ev("cam-b", T0 - 50 * S, T0 - 40 * S, "object");
    e.object_class = "dog";
    e.confidence = 0.6;
    e.attributes_json = R"({"color":"red"})";
    out.push_back({8, e});
  }
  {
    auto e = ev("cam-a", T0 + 30 * S, T0 + 30 * S, "motion");
    e.confidence = 0.2;
    e.location = FrameBox{0.9, 0.9, 1.0, 1.0};
    out.push_back({9, e});
  }
  {
    auto e = ev("cam-a", T0 + 30 * S, T0 + 35 * S, "motion");
    e.confidence = 0.95;
    out.push_back({10, e});
  }
  out.push_back({11, ev("cam-c", 2 * S, 3 * S, "manual")});  // near the epoch: its clip clamps at 0
  return out;
}

struct Fixture {
  pqxx::connection conn;
  std::map<int, std::int64_t> id;            // label -> event id
  std::map<int, catalog::NewEvent> by_label;

  explicit Fixture(const std::string& db) : conn(db) {
    catalog::migrate(conn);
    pqxx::work tx(conn);
    for (const char* cam : {"cam-a", "cam-b", "cam-c"}) tx.exec_params0("INSERT INTO cameras (name) VALUES ($1)", cam);
    const auto disk = tx.exec1("INSERT INTO disks (node, device_path, capacity_bytes) VALUES ('n', 'sim:0', 1000000) "
                               "RETURNING id")[0].as<std::int64_t>();
    const auto vol = tx.exec_params1("INSERT INTO volumes (disk_id, path, capacity_bytes, extent_bytes) "
                                     "VALUES ($1, 'sim:0', 1048576, 4096) RETURNING id", disk)[0].as<std::int64_t>();
    auto stream = [&](const char* cam, const char* kind) {
      return tx.exec_params1(
          "INSERT INTO streams (camera_id, media_kind, codec, declared_rate_bps, state, started_at_us, ended_at_us) "
          "SELECT id, $2, 'x', 1000, 'stopped', $3, $4 FROM cameras WHERE name = $1 RETURNING id",
          cam, kind, T0 - 1000 * S, T0 + 1000 * S)[0].as<std::int64_t>();
    };
    auto segment = [&](std::int64_t stream, const char* state, std::int64_t start, std::int64_t end) {
      tx.exec_params0("INSERT INTO segments (stream_id, volume_id, state, start_us, end_us, checksum_crc32c, "
                      "closed_at_us) VALUES ($1, $2, $3, $4, $5, 0, $5)",
                      stream, vol, state, start, end);
    };
    const auto a = stream("cam-a", "video");
    segment(a, "closed", T0, T0 + 8 * S);
    segment(a, "open", T0 + 18 * S, T0 + 22 * S);
    segment(a, "closed", T0 + 35 * S, T0 + 36 * S);
    segment(a, "deleting", T0 + 96 * S, T0 + 97 * S);
    const auto c_audio = stream("cam-c", "audio");
    segment(c_audio, "closed", T0 + 200 * S, T0 + 210 * S);

    std::vector<catalog::NewEvent> batch;
    for (const auto& s : seeds()) batch.push_back(s.event);
    const auto ids = catalog::insert_events(tx, batch);
    REQUIRE(ids.size() == batch.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      id[seeds()[i].label] = ids[i];
      by_label[seeds()[i].label] = batch[i];
    }
    tx.commit();
  }

  catalog::EventPage find(const catalog::EventQuery& q) {
    pqxx::read_transaction tx(conn);
    return catalog::find_events(tx, q);
  }

  // The expected ids of LABELS in the API's order: start_us descending, then id descending.
  std::vector<std::int64_t> ordered(std::vector<int> labels) {
    std::sort(labels.begin(), labels.end(), [&](int l, int r) {
      const auto kl = std::pair(by_label.at(l).start_us, id.at(l));
      const auto kr = std::pair(by_label.at(r).start_us, id.at(r));
      return kl > kr;
    });
    std::vector<std::int64_t> out;
    for (int l : labels) out.push_back(id.at(l));
    return out;
  }

  std::vector<std::int64_t> ids_of(const catalog::EventQuery& q) {
    const auto page = find(q);
    CHECK_FALSE(page.next.has_value());
    std::vector<std::int64_t> out;
    for (const auto& e : page.events) out.push_back(e.id);
    return out;
  }
};

catalog::EventQuery wide() {
  catalog::EventQuery q;
  q.from_us = T0 - 100 * S;
  q.to_us = T0 + 300 * S;
  q.limit = 1000;
  return q;
}

}  // namespace

TEST_CASE("events: each filter and combinations return exactly the expected events", "[catalog][events]") {
  Fixture f(test::shared_cluster().create_database("events_filters"));
  auto q = wide();

  SECTION("the time range: closed intervals, edges included") {
    CHECK(f.ids_of(q) == f.ordered({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
    q.from_us = T0;
    CHECK(f.ids_of(q) == f.ordered({1, 2, 3, 4, 5, 6, 7, 9, 10}));
    q.from_us = q.to_us = T0 + 12 * S;  // e1 ends exactly here
    CHECK(f.ids_of(q) == f.ordered({1, 5}));
    q.from_us = T0 + 12 * S + 1;
    q.to_us = T0 + 20 * S - 1;
    CHECK(f.ids_of(q) == f.ordered({5}));
    q.to_us = T0 + 20 * S;  // the point event e2
    CHECK(f.ids_of(q) == f.ordered({2, 5}));
    q.from_us = T0 + 300 * S;
    q.to_us = T0 + 400 * S;
    CHECK(f.ids_of(q).empty());
    q.from_us = 0;
    q.to_us = 2 * S;
    CHECK(f.ids_of(q) == f.ordered({11}));
  }
  SECTION("cameras") {
    q.cameras = {"cam-b"};
    CHECK(f.ids_of(q) == f.ordered({3, 4, 8}));
    q.cameras = {"cam-a", "cam-c"};
    CHECK(f.ids_of(q) == f.ordered({1, 2, 5, 6, 7, 9, 10}));
    q.cameras = {"nobody"};
    CHECK(f.ids_of(q).empty());
  }
  SECTION("types and object classes") {
    q.types = {"object"};
    CHECK(f.ids_of(q) == f.ordered({2, 3, 6, 7, 8}));
    q.types = {"object", "tamper"};
    CHECK(f.ids_of(q) == f.ordered({2, 3, 5, 6, 7, 8}));
    q.types = {};
    q.object_classes = {"person"};
    CHECK(f.ids_of(q) == f.ordered({2, 4, 7}));
    q.object_classes = {"person", "car"};
    CHECK(f.ids_of(q) == f.ordered({2, 3, 4, 6, 7}));
  }
  SECTION("zone: locations that overlap it (touching counts) and whole-frame events") {
    q.zone = catalog::FrameBox{0, 0, 0.35, 0.45};
    CHECK(f.ids_of(q) == f.ordered({1, 2, 5, 8, 10}));
    q.zone = catalog::FrameBox{0.5, 0.5, 1, 1};  // touches e6 at its corner
    CHECK(f.ids_of(q) == f.ordered({1, 3, 5, 6, 7, 8, 9, 10}));
    q.zone = catalog::FrameBox{0.31, 0.0, 0.39, 0.39};  // empty of located events
    CHECK(f.ids_of(q) == f.ordered({1, 5, 8, 10}));
  }
  SECTION("attributes by containment") {
    q.attributes_json = R"({"color":"red"})";
    CHECK(f.ids_of(q) == f.ordered({2, 4, 6, 8}));
    q.attributes_json = R"({"color":"red","plate":"AB123"})";
    CHECK(f.ids_of(q) == f.ordered({2, 6}));
    q.attributes_json = R"({"nested":{"k":1}})";
    CHECK(f.ids_of(q) == f.ordered({6}));
    q.attributes_json = R"({"color":"RED"})";
    CHECK(f.ids_of(q).empty());
  }
  SECTION("minimum confidence: inclusive, events without one excluded") {
    q.min_confidence = 0.75;
    CHECK(f.ids_of(q) == f.ordered({2, 4, 7, 10}));
    q.min_confidence = 0.0;
    CHECK(f.ids_of(q) == f.ordered({2, 3, 4, 6, 7, 8, 9, 10}));
  }
  SECTION("combinations") {
    q.cameras = {"cam-a", "cam-b"};
    q.types = {"object"};
    q.min_confidence = 0.5;
    q.zone = catalog::FrameBox{0.5, 0.5, 1, 1};
    CHECK(f.ids_of(q) == f.ordered({3, 8}));
    q.attributes_json = R"({"color":"red"})";
    CHECK(f.ids_of(q) == f.ordered({8}));
    q.from_us = T0;
    CHECK(f.ids_of(q).empty());

    auto r = wide();
    r.types = {"object"};
    r.object_classes = {"car"};
    r.attributes_json = R"({"plate":"AB123"})";
    CHECK(f.ids_of(r) == f.ordered({6}));
  }
}

TEST_CASE("events: pagination covers every event exactly once, newest first", "[catalog][events]") {
  Fixture f(test::shared_cluster().create_database("events_pages"));
  const std::size_t limit = GENERATE(1u, 2u, 3u, 4u, 9u, 10u);
  for (const bool filtered : {false, true}) {
    auto q = wide();
    q.limit = limit;
    if (filtered) q.types = {"object", "motion"};
    const auto expected = filtered ? f.ordered({1, 2, 3, 6, 7, 8, 9, 10}) : f.ordered({1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    std::vector<std::int64_t> seen;
    for (int pages = 0; pages < 20; ++pages) {
      const auto page = f.find(q);
      CHECK(page.events.size() <= limit);
      for (const auto& e : page.events) seen.push_back(e.id);
      if (!page.next) break;
      CHECK(page.events.size() == limit);
      CHECK(page.next->id == page.events.back().id);
      q.after = page.next;
    }
    INFO("limit " << limit << (filtered ? " filtered" : ""));
    CHECK(seen == expected);  // each exactly once, in order (ties on start_us broken by id)
  }
}

TEST_CASE("events: clips are padded and say whether video was recorded", "[catalog][events]") {
  Fixture f(test::shared_cluster().create_database("events_clips"));
  auto one = [&](int label, std::int64_t before, std::int64_t after) {
    pqxx::read_transaction tx(f.conn);
    auto e = catalog::event_by_id(tx, f.id.at(label), {before, after});
    REQUIRE(e.has_value());
    return *e;
  };
  SECTION("padding and clamping") {
    auto e2 = one(2, 5 * S, 5 * S);
    CHECK(e2.clip.from_us == T0 + 15 * S);
    CHECK(e2.clip.to_us == T0 + 25 * S);
    auto e5 = one(5, 0, 300 * S);
    CHECK(e5.clip.from_us == T0 + 5 * S);
    CHECK(e5.clip.to_us == T0 + 400 * S);
    auto e11 = one(11, 5 * S, 1);
    CHECK(e11.clip.from_us == 0);
    CHECK(e11.clip.to_us == 3 * S + 1);
    pqxx::read_transaction tx(f.conn);
    CHECK_THROWS_AS(catalog::event_by_id(tx, f.id.at(2), {301 * S, 0}), std::invalid_argument);
    CHECK_THROWS_AS(catalog::event_by_id(tx, f.id.at(2), {-1, 0}), std::invalid_argument);
  }
  SECTION("recorded: open and closed video segments of the camera count") {
    CHECK(one(1, 5 * S, 5 * S).clip.recorded);       // [5, 17]: the segment [0, 8) reaches in
    CHECK_FALSE(one(1, 0, 0).clip.recorded);         // [10, 12]: between [0, 8) and [18, 22)
    CHECK(one(2, 0, 0).clip.recorded);               // [20, 20] inside the open segment [18, 22)
    CHECK_FALSE(one(9, 0, 0).clip.recorded);         // [30, 30]
    CHECK(one(9, 5 * S, 5 * S).clip.recorded);       // [25, 35]: [35, 36) starts at the clip's end
    CHECK(one(10, 0, 0).clip.recorded);              // [30, 35]
    CHECK_FALSE(one(6, 5 * S, 5 * S).clip.recorded); // [95, 106]: only a deleting segment
    CHECK(one(6, 300 * S, 0).clip.recorded);         // reaches back to [35, 36)
    CHECK_FALSE(one(7, 5 * S, 5 * S).clip.recorded); // cam-c has audio there, no video
    CHECK_FALSE(one(3, 300 * S, 300 * S).clip.recorded);  // cam-b never recorded
    // The list gives the same flags as the single read.
    auto q = wide();
    q.cameras = {"cam-a"};
    q.pad = {0, 0};
    std::map<std::int64_t, bool> flags;
    for (const auto& e : f.find(q).events) flags[e.id] = e.clip.recorded;
    CHECK(flags == std::map<std::int64_t, bool>{{f.id[1], false}, {f.id[2], true}, {f.id[6], false},
                                                {f.id[9], false}, {f.id[10], true}});
  }
  SECTION("every field round-trips") {
    auto e = one(2, 0, 0);
    CHECK(e.camera == "cam-a");
    CHECK(e.type == "object");
    CHECK(e.object_class == "person");
    CHECK(e.confidence == 0.9);
    REQUIRE(e.location.has_value());
    CHECK(e.location->x0 == 0.1);
    CHECK(e.location->y0 == 0.1);
    CHECK(e.location->x1 == 0.3);
    CHECK(e.location->y1 == 0.4);
    CHECK(boost::json::parse(e.attributes_json) == boost::json::parse(R"({"plate":"AB123","color":"red"})"));
    CHECK(e.source == "det1");
    CHECK(e.created_at_us > 0);
    auto e1 = one(1, 0, 0);
    CHECK_FALSE(e1.object_class.has_value());
    CHECK_FALSE(e1.confidence.has_value());
    CHECK_FALSE(e1.location.has_value());
    CHECK_FALSE(e1.source.has_value());
    CHECK(e1.attributes_json == "{}");
  }
}

TEST_CASE("events: insert is all or nothing, delete by id, hostile input refused", "[catalog][events]") {
  Fixture f(test::shared_cluster().create_database("events_write"));
  auto count = [&] {
    pqxx::read_transaction tx(f.conn);
    return tx.exec1("SELECT count(*) FROM events")[0].as<int>();
  };
  REQUIRE(count() == 11);
  SECTION("an unknown camera in a batch inserts nothing") {
    catalog::NewEvent ok{.camera = "cam-a", .start_us = T0, .end_us = T0, .type = "motion"};
    auto bad = ok;
    bad.camera = "cam-z";
    {
      pqxx::work tx(f.conn);
      try {
        catalog::insert_events(tx, {ok, bad});
        FAIL("no exception");
      } catch (const catalog::UnknownCamera& e) {
        CHECK(e.camera == "cam-z");
      }
    }
    CHECK(count() == 11);
    pqxx::read_transaction tx(f.conn);
    CHECK(catalog::unknown_cameras(tx, {"cam-a", "cam-z", "cam-b", "cam-y"}) ==
          std::vector<std::string>{"cam-z", "cam-y"});
  }
  SECTION("values the API should refuse are refused before SQL") {
    catalog::NewEvent base{.camera = "cam-a", .start_us = T0, .end_us = T0, .type = "motion"};
    std::vector<catalog::NewEvent> bad(6, base);
    bad[0].camera = "cam-a'; DROP TABLE events; --";
    bad[1].type = "Motion";
    bad[2].end_us = T0 - 1;
    bad[3].confidence = 1.5;
    bad[4].location = catalog::FrameBox{0.5, 0, 0.4, 1};
    bad[5].object_class = "x'||'y";
    for (const auto& e : bad) {
      pqxx::work tx(f.conn);
      CHECK_THROWS_AS(catalog::insert_events(tx, {e}), std::invalid_argument);
    }
    auto q = wide();
    q.cameras = {"a,b"};
    CHECK_THROWS_AS(f.find(q), std::invalid_argument);
    q = wide();
    q.types = {"motion}"};
    CHECK_THROWS_AS(f.find(q), std::invalid_argument);
    q = wide();
    q.to_us = q.from_us - 1;
    CHECK_THROWS_AS(f.find(q), std::invalid_argument);
    CHECK(count() == 11);
  }
  SECTION("delete by id") {
    {
      pqxx::work tx(f.conn);
      CHECK(catalog::delete_event(tx, f.id[3]));
      CHECK_FALSE(catalog::delete_event(tx, f.id[3]));
      CHECK_FALSE(catalog::delete_event(tx, 999'999));
      tx.commit();
    }
    CHECK(count() == 10);
    pqxx::read_transaction tx(f.conn);
    CHECK_FALSE(catalog::event_by_id(tx, f.id[3]).has_value());
  }
}

TEST_CASE("events: the time filter is served by the GiST range index", "[catalog][events]") {
  Fixture f(test::shared_cluster().create_database("events_plan"));
  {
    // Enough rows that a sequential scan is not the obvious plan.
    pqxx::work tx(f.conn);
    tx.exec0("INSERT INTO events (camera_id, start_us, end_us, type) "
             "SELECT (SELECT id FROM cameras WHERE name = 'cam-b'), g::bigint * 1000000, g::bigint * 1000000 + 5, 'motion' "
             "FROM generate_series(1, 20000) g");
    tx.exec0("ANALYZE events");
    tx.commit();
  }
  pqxx::read_transaction tx(f.conn);
  std::string plan;
  // find_events's own statement, no filter but the range: the custom plan folds the NULL filters away.
  const std::optional<std::string> none;
  const std::optional<double> no_number;
  const std::optional<std::int64_t> no_cursor;
  for (const auto& row : tx.exec_params("EXPLAIN " + catalog::find_events_sql(), 5 * S, 5 * S, T0, T0 + S, none, none,
                                        none, no_number, no_number, no_number, no_number, none, no_number, no_cursor,
                                        no_cursor, std::int64_t{101})) {
    plan += row[0].as<std::string>() + "\n";
  }
  INFO(plan);
  CHECK(plan.find("events_time_range") != std::string::npos);
  CHECK(plan.find("Seq Scan on events") == std::string::npos);
}
