// Events against a real PostgreSQL: a seeded set across cameras, types, object classes, frame
// zones, attributes, confidences and times; every filter alone and combined returns exactly the
// expected events, newest first; closed-range edges; keyset pagination covers every event once;
// clips are padded and clamped at 0; `recorded` follows the segments of the camera's video
// streams (open and closed count, deleting and audio do not); batches are all or nothing; the
// time filter uses the GiST range index.
#include <catch2/generators/catch_generators.hpp>

#include "tests/catalog/event_fixture.hpp"

using namespace vigil;
using namespace vigil::test::events;

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
    CHECK(one(1, 5 * S, 5 * S).clip.recorded);            // [5, 17]: the segment [0, 8) reaches in
    CHECK_FALSE(one(1, 0, 0).clip.recorded);              // [10, 12]: between [0, 8) and [18, 22)
    CHECK(one(2, 0, 0).clip.recorded);                    // [20, 20] inside the open segment [18, 22)
    CHECK_FALSE(one(9, 0, 0).clip.recorded);              // [30, 30]
    CHECK(one(9, 5 * S, 5 * S).clip.recorded);            // [25, 35]: [35, 36) starts at the clip's end
    CHECK(one(10, 0, 0).clip.recorded);                   // [30, 35]
    CHECK_FALSE(one(6, 5 * S, 5 * S).clip.recorded);      // [95, 106]: only a deleting segment
    CHECK(one(6, 300 * S, 0).clip.recorded);              // reaches back to [35, 36)
    CHECK_FALSE(one(7, 5 * S, 5 * S).clip.recorded);      // cam-c has audio there, no video
    CHECK_FALSE(one(3, 300 * S, 300 * S).clip.recorded);  // cam-b never recorded
    // The list gives the same flags as the single read.
    auto q = wide();
    q.cameras = {"cam-a"};
    q.pad = {0, 0};
    std::map<std::int64_t, bool> flags;
    for (const auto& e : f.find(q).events) flags[e.id] = e.clip.recorded;
    CHECK(flags == std::map<std::int64_t, bool>{
                       {f.id[1], false}, {f.id[2], true}, {f.id[6], false}, {f.id[9], false}, {f.id[10], true}});
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
