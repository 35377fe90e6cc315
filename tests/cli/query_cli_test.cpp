// `vigil query` against a real vigild: events of a recorded camera filtered by type, class and
// zone, newest first, as a table and as JSON lines; pages followed up to --limit (and a note when
// more match); --clips saves each recorded clip as a playable MP4 (ffprobe reads H.264 from it)
// and says which event had no video; no match is exit 5, a bad option exit 2, an unknown camera 1.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <sstream>

#include "common/exit_codes.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

namespace {

// The JSON lines of OUTPUT (`vigil query --json`), in order.
std::vector<boost::json::object> json_lines(const std::string& output) {
  std::vector<boost::json::object> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.front() == '{') out.push_back(boost::json::parse(line).as_object());
  }
  return out;
}

std::vector<std::int64_t> ids(const std::vector<boost::json::object>& events) {
  std::vector<std::int64_t> out;
  for (const auto& e : events) out.push_back(e.at("id").to_number<std::int64_t>());
  return out;
}

}  // namespace

TEST_CASE("vigil query: filtered events, pages, JSON lines and saved clips", "[cli][query][ffmpeg]") {
  test::TempDir dir;
  auto cam = test::recorded_camera(dir.path(), "gate", 4);
  auto& d = *cam.vigild;
  const auto start = test::wait_for_closed_frames(cam.data, 100);

  const test::HttpApi api{d.http()};
  auto post = [&](const std::string& body) {
    auto r = api.call("POST", "/api/v1/events", body);
    INFO(r.body);
    REQUIRE(r.status == 201);
    return r.json().at("id").to_number<std::int64_t>();
  };
  const auto at = [&](int tenths) { return std::to_string(start + tenths * 100'000); };
  const auto motion =
      post(R"({"camera":"gate","start_us":)" + at(5) + R"(,"end_us":)" + at(15) + R"(,"type":"motion"})");
  const auto person = post(R"({"camera":"gate","start_us":)" + at(20) +
                           R"(,"type":"object","object_class":"person","confidence":0.75,)"
                           R"("location":{"x0":0.1,"y0":0.1,"x1":0.3,"y1":0.3}})");
  // An hour later than the recording: its clip has no video.
  const auto late = post(R"({"camera":"gate","start_us":)" + std::to_string(start + 3'600'000'000) +
                         R"(,"type":"object","object_class":"car","location":{"x0":0.6,"y0":0.6,"x1":0.9,"y1":0.9}})");

  const auto now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string from = "@" + std::to_string(start / 1'000'000 - 60);
  const std::string to = "@" + std::to_string(std::max<std::int64_t>(now_s, start / 1'000'000) + 7200);
  auto query = [&](std::vector<std::string> extra, const std::string& log) {
    std::vector<std::string> args = {"query", "--http", d.http(), "--from", from, "--to", to};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_to_exit(VIGIL_CLI_PATH, std::move(args), dir.path() / log);
  };

  {  // everything, newest first, as JSON lines
    auto r = query({"--json"}, "all.log");
    INFO(r.output);
    REQUIRE(r.status == exit_code::kOk);
    CHECK(ids(json_lines(r.output)) == std::vector<std::int64_t>{late, person, motion});
  }
  {  // the table: one line per event, the clip's URL or "(no video)"
    auto r = query({"--camera", "gate"}, "table.log");
    INFO(r.output);
    REQUIRE(r.status == exit_code::kOk);
    CHECK_THAT(r.output, ContainsSubstring("CAMERA"));
    CHECK_THAT(r.output, ContainsSubstring("person"));
    CHECK_THAT(r.output, ContainsSubstring("0.75"));
    CHECK_THAT(r.output, ContainsSubstring("/export.mp4?"));
    CHECK_THAT(r.output, ContainsSubstring("(no video)"));
  }
  {  // filters: type, class, zone
    auto typed = query({"--json", "--type", "object"}, "typed.log");
    CHECK(ids(json_lines(typed.output)) == std::vector<std::int64_t>{late, person});
    auto classed = query({"--json", "--class", "person", "--class", "car"}, "classed.log");
    CHECK(ids(json_lines(classed.output)) == std::vector<std::int64_t>{late, person});
    auto zoned = query({"--json", "--zone", "0,0,0.5,0.5"}, "zoned.log");
    CHECK(ids(json_lines(zoned.output)) == std::vector<std::int64_t>{person, motion});  // no box: the whole frame
  }
  {  // --limit: the newest N, and a note that more match
    auto r = query({"--json", "--limit", "2"}, "limit.log");
    INFO(r.output);
    CHECK(r.status == exit_code::kOk);
    CHECK(ids(json_lines(r.output)) == std::vector<std::int64_t>{late, person});
    CHECK_THAT(r.output, ContainsSubstring("more events match"));
  }
  {  // --clips: the two recorded clips saved as MP4 that ffprobe reads; the late one has none
    const auto clips = dir.path() / "clips";
    auto r = query({"--clips", clips.string()}, "clips.log");
    INFO(r.output);
    REQUIRE(r.status == exit_code::kOk);
    for (const auto id : {motion, person}) {
      const auto file = clips / (std::to_string(id) + "_gate.mp4");
      REQUIRE(std::filesystem::exists(file));
      const auto probed = test::probe_stream(file, dir.path());
      CHECK_THAT(probed, ContainsSubstring("codec_name=h264"));
      CHECK(test::probe_field(probed, "duration") > 1.0);  // 10 s of clip around the event, cut to the recording
    }
    CHECK_FALSE(std::filesystem::exists(clips / (std::to_string(late) + "_gate.mp4")));
  }
  // No match, bad options, an unknown camera.
  CHECK(query({"--type", "tamper"}, "none.log").status == exit_code::kNothing);
  CHECK(query({"--limit", "0"}, "usage.log").status == exit_code::kUsage);
  CHECK(query({"--min-confidence", "2"}, "usage2.log").status == exit_code::kUsage);
  CHECK(query({"--zone", "1,1,0,0"}, "usage3.log").status == exit_code::kUsage);
  auto unknown = query({"--camera", "nobody"}, "unknown.log");
  CHECK(unknown.status == exit_code::kFailed);
  CHECK_THAT(unknown.output, ContainsSubstring("nobody"));
}
