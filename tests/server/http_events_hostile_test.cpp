// The events API against hostile input: SQL in every query parameter and JSON field (plain and
// percent-encoded), malformed JSON, wrong types, NaN and huge numbers, out-of-range confidence and
// zones, bad attributes, unknown cameras, bad time ranges, too many parameters, limits and batches
// over their caps, a body over the server's limit: each a 4xx with "error", and the events table
// unchanged afterwards.
#include "tests/server/events_api_fixture.hpp"

using Catch::Matchers::ContainsSubstring;
namespace json = boost::json;
using namespace vigil::test::events_api;

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
        // Read as infinity, written back as "Infinity": an event nobody could read again (fuzzer).
        {"attributes number out of range", "{" + ok_head + R"(,"attributes":{"d":56E05000000}})"},
        {"attributes nested number out of range", "{" + ok_head + R"(,"attributes":{"a":[1,-1e400]}})"},
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
