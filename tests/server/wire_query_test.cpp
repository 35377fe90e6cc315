// Wire-protocol queries against a real vigild (docs/protocol.md, "Queries"): STREAMS lists the
// cameras (by name, with a limit), TIMELINE gives each camera's runs and gaps exactly as the HTTP
// timeline does, EVENTS filters by camera, time, type, class, zone and confidence, newest first
// with clips, and pages with a cursor. Bad queries get an Error carrying the request's id and the
// session stays open for the next one.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <string>

#include "client/wire/wire_client.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/recording_rig.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;

namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

proto::Envelope query(std::uint64_t id, proto::QueryKind kind, std::vector<std::string> names = {},
                      std::int64_t from_us = 0, std::int64_t to_us = 0) {
  proto::Envelope e;
  auto* q = e.mutable_query_request();
  q->set_request_id(id);
  q->set_kind(kind);
  for (auto& n : names) q->add_stream_names(n);
  q->set_from_us(from_us);
  q->set_to_us(to_us);
  return e;
}

proto::QueryResponse ask(client::WireClient& c, const proto::Envelope& q) {
  c.send(q);
  auto r = c.receive();
  REQUIRE(r.msg.has_query_response());
  CHECK(r.msg.query_response().request_id() == q.query_request().request_id());
  return r.msg.query_response();
}

// The Error a query gets: its code, and it names the request.
proto::ErrorCode refused(client::WireClient& c, const proto::Envelope& q) {
  c.send(q);
  try {
    auto r = c.receive();
    FAIL("answered instead of refused: " << r.msg.DebugString());
  } catch (const client::ServerError& e) {
    CHECK(e.request_id == q.query_request().request_id());
    CHECK(std::string(e.what()).size() > 5);  // a reason
    return e.code;
  }
  return proto::ERROR_CODE_UNSPECIFIED;
}

std::vector<std::int64_t> ids_of(const proto::QueryResponse& r) {
  std::vector<std::int64_t> out;
  for (const auto& e : r.events()) out.push_back(e.id());
  return out;
}

}  // namespace

TEST_CASE("wire queries: streams, timeline and events, with errors that name the request", "[vigild][query]") {
  test::RecordingRig rig;
  test::record_script(rig, "aisle", 100);  // 4 s at 25 fps
  test::record_script(rig, "dock", 50);

  client::WireClient c(rig.vigild->wire(), 20s);
  c.hello("query test", test::token());
  const auto from = now_us() - 3'600'000'000, to = now_us() + 60'000'000;

  // STREAMS: every camera, some by name, and a limit that truncates.
  {
    auto all = ask(c, query(1, proto::QUERY_KIND_STREAMS));
    std::vector<std::string> names(all.stream_names().begin(), all.stream_names().end());
    CHECK(names == std::vector<std::string>{"aisle", "dock"});
    CHECK_FALSE(all.truncated());
    auto one = ask(c, query(2, proto::QUERY_KIND_STREAMS, {"dock"}));
    REQUIRE(one.stream_names_size() == 1);
    CHECK(one.stream_names(0) == "dock");
    auto q = query(3, proto::QUERY_KIND_STREAMS);
    q.mutable_query_request()->set_limit(1);
    auto limited = ask(c, q);
    CHECK(limited.stream_names_size() == 1);
    CHECK(limited.truncated());
  }

  // TIMELINE: one run of aisle's 4 s, the same as the HTTP timeline says.
  std::int64_t run_from = 0, run_to = 0;
  {
    auto t = ask(c, query(4, proto::QUERY_KIND_TIMELINE, {"aisle"}, from, to));
    REQUIRE(t.timelines_size() == 1);
    const auto& aisle = t.timelines(0);
    CHECK(aisle.stream_name() == "aisle");
    CHECK_FALSE(aisle.recording());
    REQUIRE(aisle.runs_size() == 1);
    run_from = aisle.runs(0).from_us();
    run_to = aisle.runs(0).to_us();
    CHECK(run_to - run_from >= 3'960'000);  // 99 frame intervals and the last frame's duration
    CHECK(run_to - run_from <= 4'040'000);
    for (const auto& g : aisle.gaps()) CHECK_FALSE(g.reason().empty());

    auto http = test::http_request(rig.vigild->http(), "GET",
                                   "/api/v1/cameras/aisle/timeline?from=%40" + std::to_string(from / 1'000'000) +
                                       "&to=%40" + std::to_string(to / 1'000'000));
    REQUIRE(http.status == 200);
    const auto runs = http.json().at("runs").as_array();
    REQUIRE(runs.size() == 1);
    CHECK(runs.at(0).at("start_us").to_number<std::int64_t>() == run_from);
    CHECK(runs.at(0).at("end_us").to_number<std::int64_t>() == run_to);

    auto both = ask(c, query(5, proto::QUERY_KIND_TIMELINE, {}, from, to));
    CHECK(both.timelines_size() == 2);
  }

  // EVENTS: three on aisle inside its run, one on dock.
  const auto at = [&](int tenth) { return run_from + tenth * 100'000; };  // tenths of a second into the run
  auto post = [&](const std::string& body) {
    auto r = test::HttpApi{rig.vigild->http()}.call("POST", "/api/v1/events", body);
    INFO(r.body);
    REQUIRE(r.status == 201);
    return r.json().at("id").to_number<std::int64_t>();
  };
  const auto motion = post(R"({"camera":"aisle","start_us":)" + std::to_string(at(5)) + R"(,"end_us":)" +
                           std::to_string(at(10)) + R"(,"type":"motion"})");
  const auto person = post(R"({"camera":"aisle","start_us":)" + std::to_string(at(15)) +
                           R"(,"type":"object","object_class":"person","confidence":0.9,)"
                           R"("location":{"x0":0.1,"y0":0.1,"x1":0.2,"y1":0.2},"attributes":{"color":"red"}})");
  const auto car = post(R"({"camera":"aisle","start_us":)" + std::to_string(at(25)) +
                        R"(,"type":"object","object_class":"car","confidence":0.5,)"
                        R"("location":{"x0":0.7,"y0":0.7,"x1":0.9,"y1":0.9}})");
  const auto on_dock =
      post(R"({"camera":"dock","start_us":)" + std::to_string(at(20)) + R"(,"type":"motion","source":"det-2"})");
  {
    auto all = ask(c, query(10, proto::QUERY_KIND_EVENTS, {"aisle"}, from, to));
    CHECK(ids_of(all) == std::vector<std::int64_t>{car, person, motion});  // newest first
    REQUIRE(all.events_size() == 3);
    const auto& p = all.events(1);
    CHECK(p.stream_name() == "aisle");
    CHECK(p.type() == "object");
    CHECK(p.object_class() == "person");
    REQUIRE(p.has_confidence());
    CHECK(p.confidence() == 0.9);
    REQUIRE(p.has_location());
    CHECK(p.location().x1() == 0.2);
    CHECK_THAT(p.attributes_json(), ContainsSubstring("\"red\""));
    CHECK(p.clip().from_us() == at(15) - 5'000'000);
    CHECK(p.clip().to_us() == at(15) + 5'000'000);
    CHECK(p.clip_recorded());
    CHECK_FALSE(all.events(2).has_confidence());
    CHECK_FALSE(all.events(2).has_location());
    CHECK_FALSE(all.truncated());

    auto typed = query(11, proto::QUERY_KIND_EVENTS, {"aisle"}, from, to);
    typed.mutable_query_request()->set_event_type("object");
    CHECK(ids_of(ask(c, typed)) == std::vector<std::int64_t>{car, person});
    auto classed = typed;
    classed.mutable_query_request()->set_request_id(12);
    classed.mutable_query_request()->set_object_class("person");
    CHECK(ids_of(ask(c, classed)) == std::vector<std::int64_t>{person});
    auto zoned = query(13, proto::QUERY_KIND_EVENTS, {"aisle"}, from, to);
    auto* z = zoned.mutable_query_request()->mutable_zone();
    z->set_x1(0.5);
    z->set_y1(0.5);
    CHECK(ids_of(ask(c, zoned)) == std::vector<std::int64_t>{person, motion});  // no location: the whole frame
    auto confident = query(14, proto::QUERY_KIND_EVENTS, {"aisle"}, from, to);
    confident.mutable_query_request()->set_min_confidence(0.8);
    CHECK(ids_of(ask(c, confident)) == std::vector<std::int64_t>{person});

    // Pages of two: the cursor continues exactly where the first page ended.
    auto first = query(15, proto::QUERY_KIND_EVENTS, {}, from, to);
    first.mutable_query_request()->set_limit(2);
    auto page1 = ask(c, first);
    CHECK(ids_of(page1) == std::vector<std::int64_t>{car, on_dock});
    REQUIRE(page1.truncated());
    auto second = first;
    second.mutable_query_request()->set_request_id(16);
    *second.mutable_query_request()->mutable_after() = page1.next();
    auto page2 = ask(c, second);
    CHECK(ids_of(page2) == std::vector<std::int64_t>{person, motion});
    CHECK_FALSE(page2.truncated());
  }

  // Refusals name the request, and the session answers the next query.
  CHECK(refused(c, query(20, proto::QUERY_KIND_TIMELINE, {"nobody"}, from, to)) == proto::ERROR_CODE_NOT_FOUND);
  CHECK(refused(c, query(21, proto::QUERY_KIND_EVENTS, {"nobody"}, from, to)) == proto::ERROR_CODE_NOT_FOUND);
  CHECK(refused(c, query(22, proto::QUERY_KIND_EVENTS, {}, to, from)) == proto::ERROR_CODE_INVALID_ARGUMENT);
  CHECK(refused(c, query(23, proto::QUERY_KIND_TIMELINE, {}, from - 500LL * 86'400'000'000, to)) ==
        proto::ERROR_CODE_INVALID_ARGUMENT);
  CHECK(refused(c, query(24, proto::QUERY_KIND_UNSPECIFIED)) == proto::ERROR_CODE_INVALID_ARGUMENT);
  auto bad_word = query(25, proto::QUERY_KIND_EVENTS, {}, from, to);
  bad_word.mutable_query_request()->set_event_type("not a word!");
  CHECK(refused(c, bad_word) == proto::ERROR_CODE_INVALID_ARGUMENT);
  auto bad_zone = query(26, proto::QUERY_KIND_EVENTS, {}, from, to);
  bad_zone.mutable_query_request()->mutable_zone()->set_x0(0.8);
  CHECK(refused(c, bad_zone) == proto::ERROR_CODE_INVALID_ARGUMENT);
  auto bad_name = query(27, proto::QUERY_KIND_STREAMS, {"a/b"});
  CHECK(refused(c, bad_name) == proto::ERROR_CODE_INVALID_ARGUMENT);
  CHECK(ask(c, query(28, proto::QUERY_KIND_STREAMS)).stream_names_size() == 2);
}
