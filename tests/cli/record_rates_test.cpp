// Nothing lost silently on a camera's path (issue [O], "Honest rates"), with real peers: ffmpeg
// makes the camera's clip, `vigil record --as-live` reads it as a camera is read (at real time,
// never waiting for vigild), a real vigild records it.
// - A camera sending ~1.3 Mbit/s declared at 0.5 Mbit/s on a disk with no room to re-admit it:
//   vigild polices it, the recorder keeps reading (its queue fills) and drops to the next keyframe
//   when the queue is full; every packet the camera sent is either acknowledged as durable or in a
//   rate_exceeded gap of the timeline (its frames in the gap's detail, its time exactly the dropped
//   frames'), and /metrics counts the same frames and gaps.
// - A clip with a 2 s hole in its timestamps (frames the camera never delivered): one source_loss
//   gap over exactly that hole, in the timeline and /metrics.
// - A pulled camera's rate given by the operator (`vigil camera add --rate`, the API's
//   declared_rate_bps) reaches its recorder and is what the stream declares.
// Deterministic: the disk's room is measured (largest admissible rates), not assumed; drops follow
// from 400 frames at 2.7× the admitted rate against a 256 KiB queue, whatever the machine's speed,
// and only the recorder's own account of what it dropped is compared with vigild's.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <pqxx/pqxx>
#include <cstdio>
#include <regex>
#include <string>

#include "client/wire/wire_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;
using Catch::Matchers::ContainsSubstring;
namespace json = boost::json;

namespace {

constexpr std::int64_t kFrameUs = 40'000;  // 25 fps

std::filesystem::path ffmpeg_clip(const std::filesystem::path& dir, const std::string& name,
                                  std::vector<std::string> filter_and_length) {
  std::vector<std::string> args = {"-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25"};
  args.insert(args.end(), filter_and_length.begin(), filter_and_length.end());
  for (const char* a : {"-c:v", "libx264", "-g", "25", "-bf", "0", "-sc_threshold", "0", "-pix_fmt", "yuv420p"}) {
    args.emplace_back(a);
  }
  args.push_back((dir / name).string());
  REQUIRE(test::run_to_exit("/usr/bin/ffmpeg", args, dir / (name + ".log")).status == 0);
  return dir / name;
}

json::object camera_timeline(const test::VigildProcess& d, const std::string& camera) {
  auto r = test::http_request(d.http(), "GET", "/api/v1/timeline?from=-10m&cameras=" + camera);
  REQUIRE(r.status == 200);
  const auto cams = json::parse(r.body).at("cameras").as_array();
  REQUIRE(cams.size() == 1);
  return cams.at(0).as_object();
}

std::uint64_t number_after(const std::string& text, const std::string& pattern) {
  std::smatch m;
  REQUIRE(std::regex_search(text, m, std::regex(pattern)));
  return std::stoull(m[1].str());
}

test::PromText metrics(const test::VigildProcess& d) {
  auto r = test::http_request(d.http(), "GET", "/metrics");
  REQUIRE(r.status == 200);
  auto prom = test::parse_prometheus_text(r.body);
  CHECK(prom.errors.empty());
  return prom;
}

}  // namespace

TEST_CASE("a camera above its admitted rate that cannot be re-admitted: every dropped packet is a rate_exceeded gap",
          "[record][cli][rates][gaps]") {
  test::TempDir dir;
  // 16 s (400 frames) of noise: ~1.3 Mbit/s, frames of 6.6–9.1 KB, so each fits the 12.5 KB
  // buffer half of 0.5 Mbit/s at 200 ms cycles (no re-open for a large frame).
  const auto clip = ffmpeg_clip(dir.path(), "noisy.mp4", {"-vf", "noise=alls=30:allf=t", "-t", "16"});
  const auto profile = test::make_sim_profile(dir.path());
  auto args = test::sim_volume_args(dir.path(), profile);
  args.insert(args.end(), {"--stall-timeout", "0"});  // the fillers send nothing and keep their share
  test::VigildProcess d(dir.path() / "data", args);
  REQUIRE(d.wait_ready());

  // Fill the disk until a new recording fits at ~1 Mbit/s and no more: the recorder's 0.5 Mbit/s is
  // admitted, and its re-admission at what it really sends (×1.25 headroom: ~1.7 Mbit/s) is not.
  const auto largest = test::largest_new_rate(d);
  client::WireClient filler1(d.wire(), 30s), filler2(d.wire(), 30s);
  test::open_admitted(filler1, "filler1", largest / 2);
  const auto second = test::largest_new_rate(d);
  const auto per_stream = largest / 2 > second ? largest / 2 - second : 0;  // a stream's fixed cost, as rate
  // Not quite linear (buffers are whole blocks): 1.6 Mbit/s left this way is ~1 Mbit/s of room on
  // the simulated WD400BB (deterministic: the profile and the admitted set decide it, not the machine).
  constexpr std::uint64_t kLeftBps = 1'600'000;
  REQUIRE(second > per_stream + kLeftBps);
  test::open_admitted(filler2, "filler2", second - per_stream - kLeftBps);
  const auto room = test::largest_new_rate(d);
  INFO("room for a new recording: " << room << " bit/s");
  REQUIRE(room >= 550'000);
  REQUIRE(room <= 1'500'000);

  auto rec = test::run_to_exit(VIGIL_CLI_PATH,
                               {"--server", d.wire(), "record", "--stream", "cam", clip.string(), "--rate", "0.5",
                                "--as-live"},
                               dir.path() / "rec.log");
  INFO(rec.output);
  INFO(d.output());
  REQUIRE(rec.status == 0);
  const auto stored = number_after(rec.output, "recorded ([0-9]+) packets of cam");
  CHECK(number_after(rec.output, "; ([0-9]+) acknowledged as durable") == stored);
  const auto dropped = number_after(rec.output, "([0-9]+) packets dropped above the admitted rate");
  CHECK(stored + dropped == 400);  // every packet the camera sent: stored, or dropped and reported
  CHECK(dropped > 0);
  CHECK_THAT(d.output(), ContainsSubstring("re-admission refused"));  // it asked for more; no room

  // Every dropped frame is in a rate_exceeded gap, exactly its time; no other gap.
  json::object timeline;
  std::uint64_t in_gaps = 0;
  REQUIRE(test::eventually([&] {
    timeline = camera_timeline(d, "cam");
    in_gaps = 0;
    for (const auto& g : timeline.at("gaps").as_array()) {
      in_gaps += static_cast<std::uint64_t>((g.at("end_us").as_int64() - g.at("start_us").as_int64()) / kFrameUs);
    }
    return !timeline.at("recording").as_bool() && in_gaps >= dropped;
  }));
  std::uint64_t frames = 0, gaps = 0;
  for (const auto& g : timeline.at("gaps").as_array()) {
    const std::string detail(g.at("detail").as_string());
    INFO(detail);
    CHECK(g.at("reason").as_string() == "rate_exceeded");
    unsigned long long f = 0, b = 0;
    REQUIRE(std::sscanf(detail.c_str(), "%llu frames (%llu payload bytes) dropped by the recorder", &f, &b) == 2);
    CHECK(static_cast<std::int64_t>(f) * kFrameUs == g.at("end_us").as_int64() - g.at("start_us").as_int64());
    CHECK(b > f * 5'000);  // noise frames are 6.3–9.1 KB
    frames += f;
    ++gaps;
  }
  CHECK(frames == dropped);
  CHECK(in_gaps == dropped);

  const auto prom = metrics(d);
  CHECK(prom.value("vigil_camera_lost_frames_total", {{"camera", "cam"}, {"reason", "rate_exceeded"}}) ==
        static_cast<double>(dropped));
  CHECK(prom.value("vigil_gaps_total", {{"reason", "rate_exceeded"}}) == static_cast<double>(gaps));
  CHECK(prom.value("vigil_gaps_total", {{"reason", "source_loss"}}) == 0);
}

TEST_CASE("a hole in the camera's timestamps is a source_loss gap over exactly that hole",
          "[record][cli][rates][gaps]") {
  test::TempDir dir;
  // 8 s at 25 fps without the frames of [3 s, 5 s): 150 packets, timestamps kept (passthrough).
  const auto clip = ffmpeg_clip(dir.path(), "holed.mp4",
                                {"-t", "8", "-vf", "select='not(between(t,3,4.99))'", "-fps_mode", "passthrough"});
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());

  // Paced at real time: the timeline ends at the query's now, and the hole must be behind it.
  auto rec = test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", "holed", clip.string()},
                               dir.path() / "rec.log");
  INFO(rec.output);
  REQUIRE(rec.status == 0);
  CHECK_THAT(rec.output, ContainsSubstring("recorded 150 packets of holed"));
  CHECK_THAT(rec.output, ContainsSubstring("150 acknowledged as durable"));
  CHECK_THAT(rec.output, ContainsSubstring("source_loss gap"));

  json::object timeline;
  REQUIRE(test::eventually([&] {
    timeline = camera_timeline(d, "holed");
    return !timeline.at("recording").as_bool() && !timeline.at("gaps").as_array().empty() &&
           !timeline.at("runs").as_array().empty();
  }));
  INFO(json::serialize(timeline));
  const auto& gaps = timeline.at("gaps").as_array();
  REQUIRE(gaps.size() == 1);
  const auto& g = gaps.at(0).as_object();
  CHECK(g.at("reason").as_string() == "source_loss");
  CHECK_THAT(std::string(g.at("detail").as_string()), ContainsSubstring("about 50 frames"));
  // The recording starts at media time 0: the hole is [3 s, 5 s) of it.
  const std::int64_t t0 = timeline.at("runs").as_array().at(0).at("start_us").as_int64();
  CHECK(g.at("start_us").as_int64() - t0 == 3'000'000);
  CHECK(g.at("end_us").as_int64() - t0 == 5'000'000);

  const auto prom = metrics(d);
  CHECK(prom.value("vigil_gaps_total", {{"reason", "source_loss"}}) == 1);
  CHECK(prom.value("vigil_camera_lost_frames_total", {{"camera", "holed"}, {"reason", "source_loss"}}) == 50);
}

TEST_CASE("a pulled camera's declared rate is the operator's: camera add --rate, the API, its recorder",
          "[record][cli][rates][camera]") {
  test::TempDir dir;
  const auto clip = ffmpeg_clip(dir.path(), "gate.mp4", {"-t", "4"});
  const auto profile = test::make_sim_profile(dir.path());
  const auto data = dir.path() / "data";
  test::VigildProcess d(data, test::sim_volume_args(dir.path(), profile, 128, /*pull_cameras=*/true));
  REQUIRE(d.wait_ready());
  auto cli = [&](std::vector<std::string> args, const std::string& log) {
    return test::run_to_exit(VIGIL_CLI_PATH, std::move(args), dir.path() / log);
  };
  CHECK(cli({"camera", "add", "gate", "file://" + clip.string(), "--rate", "0.01", "--data", data.string()}, "bad.log")
            .status == 2);
  auto add =
      cli({"camera", "add", "gate", "file://" + clip.string(), "--rate", "2.5", "--data", data.string()}, "add.log");
  INFO(add.output);
  REQUIRE(add.status == 0);
  auto shown = test::http_request(d.http(), "GET", "/api/v1/cameras/gate");
  REQUIRE(shown.status == 200);
  CHECK(json::parse(shown.body).at("declared_rate_bps").to_number<std::int64_t>() == 2'500'000);

  // The camera manager hands it to the camera's recorder, which declares it as given.
  pqxx::connection db("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  std::int64_t declared = 0;
  INFO(d.output());
  REQUIRE(test::eventually([&] {
    pqxx::nontransaction q(db);
    const auto r = q.exec(
        "SELECT s.declared_rate_bps FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = 'gate' "
        "ORDER BY s.id LIMIT 1");
    if (r.empty()) return false;
    declared = r[0][0].as<std::int64_t>();
    return true;
  }));
  CHECK(declared == 2'500'000);

  // Cleared: null again, and the API says so.
  auto patch = [&](const std::string& body) {
    return test::http_request(d.http(), "PATCH", "/api/v1/cameras/gate",
                              "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                                  "\r\n",
                              body);
  };
  auto cleared = patch(R"({"declared_rate_bps": null})");
  CHECK(cleared.status == 200);
  CHECK(json::parse(cleared.body).at("declared_rate_bps").is_null());
  auto bad = patch(R"({"declared_rate_bps": 10})");
  CHECK(bad.status == 400);
}
