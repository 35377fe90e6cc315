// Writing events: insert is all or nothing, delete by id, hostile input refused; the time filter
// uses the GiST range index.
#include "tests/catalog/event_fixture.hpp"

using namespace vigil;
using namespace vigil::test::events;

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
    tx.exec0(
        "INSERT INTO events (camera_id, start_us, end_us, type) "
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
  for (const auto& row :
       tx.exec_params("EXPLAIN " + catalog::find_events_sql(), 5 * S, 5 * S, T0, T0 + S, none, none, none, no_number,
                      no_number, no_number, no_number, none, no_number, no_cursor, no_cursor, std::int64_t{101})) {
    plan += row[0].as<std::string>() + "\n";
  }
  INFO(plan);
  CHECK(plan.find("events_time_range") != std::string::npos);
  CHECK(plan.find("Seq Scan on events") == std::string::npos);
}
