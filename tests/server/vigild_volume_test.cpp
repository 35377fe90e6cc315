// vigild owns its volumes from start-up: it creates and formats a missing volume file,
// registers it in the catalog, and on every start recovers it — a segment left on the volume
// by a crash (never committed to the catalog) is adopted as a closed segment, with its GOP
// index; one of a stream the catalog never heard of (its header without a stream description,
// as before descriptions) is adopted under a stand-in camera, never reclaimed. A file that is not
// a volume is refused.
#include <signal.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>
#include <pqxx/pqxx>

#include "client/wire/wire_client.hpp"
#include "storage/file_device.hpp"
#include "storage/segment_writer.hpp"
#include "storage/volume.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/script_frames.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

namespace {

std::string catalog_of(const std::filesystem::path& data) {
  return "host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil";
}

// What a crash leaves: durable records of segment ID on the volume, nothing in the catalog.
void leave_segment_on_volume(const std::filesystem::path& volume, std::uint64_t id, std::uint64_t stream) {
  auto dev = storage::FileDevice::open(volume);
  REQUIRE(dev.has_value());
  auto vol = *storage::Volume::open(**dev);
  storage::SegmentWriter w(*vol, stream, {.buffer_bytes = 64 * 1024});
  REQUIRE(w.open_segment(id, {}, 1, 0).has_value());
  for (std::uint64_t seq = 1; seq <= 20; ++seq) {
    auto f = test::script_frame(seq, stream);
    if (!w.append(f.header, f.payload)) {
      REQUIRE(w.write_cycle().has_value());
      REQUIRE(w.append(f.header, f.payload).has_value());
    }
  }
  REQUIRE(w.write_cycle().has_value());
  REQUIRE(storage::flush_sync(**dev).has_value());
}

}  // namespace

TEST_CASE("vigild creates its volume and recovers crash leftovers on the next start", "[vigild][volume]") {
  test::TempDir dir;
  const auto data = dir.path() / "data";
  const auto volume = dir.path() / "vol";
  const std::vector<std::string> args = {"--volume",       volume.string(),
                                         "--volume-size",  std::to_string(64 << 20),
                                         "--extent-bytes", std::to_string(4 << 20)};
  std::int64_t stream = 0;
  {
    test::VigildProcess d(data, args);
    REQUIRE(d.wait_ready());
    CHECK_THAT(d.output(), ContainsSubstring("volume formatted"));
    CHECK_THAT(d.output(), ContainsSubstring("disk IO thread started"));
    CHECK_THAT(d.output(), ContainsSubstring("no disk profile"));
    // The volume is vigild's while it runs: fsck refuses to work on it.
    auto fsck = test::run_to_exit(VIGIL_CLI_PATH, {"fsck", volume.string()}, dir.path() / "fsck.log");
    CHECK(fsck.status == 3);
    CHECK_THAT(fsck.output, ContainsSubstring("is vigild running"));
    pqxx::connection conn(catalog_of(data));
    pqxx::work tx(conn);
    CHECK(tx.exec1("SELECT count(*) FROM volumes")[0].as<int>() == 1);
    auto cam = tx.exec1("INSERT INTO cameras (name) VALUES ('door') RETURNING id")[0].as<std::int64_t>();
    stream = tx.exec_params1(
                   "INSERT INTO streams (camera_id, codec, declared_rate_bps) VALUES ($1, 'h264', 2000000) "
                   "RETURNING id",
                   cam)[0]
                 .as<std::int64_t>();
    tx.commit();
    REQUIRE(d.stop(SIGTERM) == 0);
  }
  leave_segment_on_volume(volume, 700, static_cast<std::uint64_t>(stream));
  leave_segment_on_volume(volume, 701, 4242);  // a stream the catalog never heard of

  test::VigildProcess again(data, args);
  REQUIRE(again.wait_ready());
  INFO(again.output());
  CHECK_THAT(again.output(), ContainsSubstring("adopted=2"));
  CHECK_THAT(again.output(), ContainsSubstring("reclaimed=0"));
  CHECK_THAT(again.output(), ContainsSubstring("unknown-stream-4242"));
  pqxx::connection conn(catalog_of(data));
  pqxx::nontransaction q(conn);
  auto seg = q.exec1("SELECT state, frame_count, stream_id FROM segments WHERE id = 700");
  CHECK(seg[0].as<std::string>() == "closed");
  CHECK(seg[1].as<int>() == 20);
  CHECK(seg[2].as<std::int64_t>() == stream);
  CHECK(q.exec1("SELECT gop_count FROM gop_index WHERE segment_id = 700")[0].as<int>() == 3);
  auto kept = q.exec1(
      "SELECT c.name, g.frame_count FROM segments g JOIN streams s ON s.id = g.stream_id "
      "JOIN cameras c ON c.id = s.camera_id WHERE g.id = 701");
  CHECK(kept[0].as<std::string>() == "unknown-stream-4242");
  CHECK(kept[1].as<int>() == 20);
}

TEST_CASE("vigild runs without a volume it cannot bring up, says so, and leaves the file untouched",
          "[vigild][volume]") {
  test::TempDir dir;
  const auto junk = dir.path() / "junk";
  {
    std::ofstream out(junk);
    out << std::string(1 << 20, 'x');
  }
  const auto good = dir.path() / "vol";
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", {"--volume", junk.string(), "--volume", good.string(), "--volume-size",
                                              std::to_string(64 << 20), "--extent-bytes", std::to_string(4 << 20),
                                              "--profile", profile.string(), "--model-check-cycles", "0"});
  REQUIRE(d.wait_ready());
  INFO(d.output());
  CHECK_THAT(d.output(), ContainsSubstring("volume unavailable"));
  CHECK_THAT(d.output(), ContainsSubstring("is not a Vigil volume"));
  // /healthz: degraded but serving, naming the volume.
  const auto health = test::http_request_without_token(d.http(), "GET", "/healthz");
  CHECK(health.status == 200);
  const auto doc = boost::json::parse(health.body).as_object();
  CHECK(doc.at("status").as_string() == "degraded");
  const auto& unavailable = doc.at("volumes").at("unavailable").as_array();
  REQUIRE(unavailable.size() == 1);
  CHECK(unavailable[0].at("path").as_string() == junk.string());
  CHECK_THAT(std::string(unavailable[0].at("error").as_string()), ContainsSubstring("not a Vigil volume"));
  const auto metrics = test::http_request_without_token(d.http(), "GET", "/metrics");
  CHECK_THAT(metrics.body, ContainsSubstring("vigil_volume_unavailable{volume=\"" + junk.string() + "\"} 1"));
  // The other volume records.
  client::WireClient c(d.wire(), std::chrono::seconds(20));
  test::open_admitted(c, "door", 1'000'000);
  // Never formatted: the operator decides.
  std::ifstream in(junk);
  std::string head(16, '\0');
  in.read(head.data(), 16);
  CHECK(head == std::string(16, 'x'));
}

TEST_CASE("vigild schedules with the disk profile: --profile the first time, the catalog after",
          "[vigild][volume][admission]") {
  test::TempDir dir;
  const auto data = dir.path() / "data";
  const auto json = dir.path() / "wd.json";
  auto prof = test::run_to_exit(VIGIL_CLI_PATH, {"profile", "sim:wd400bb", "--quick", "-o", json.string()},
                                dir.path() / "p.log");
  REQUIRE(prof.status == 0);
  const std::vector<std::string> base = {"--volume",       (dir.path() / "vol").string(),
                                         "--volume-size",  std::to_string(64 << 20),
                                         "--extent-bytes", std::to_string(4 << 20)};
  {
    auto args = base;
    args.insert(args.end(), {"--profile", json.string(), "--admission-policy", "aggressive"});
    test::VigildProcess d(data, args);
    REQUIRE(d.wait_ready());
    INFO(d.output());
    CHECK_THAT(d.output(), ContainsSubstring("disk profile in use"));
    CHECK_THAT(d.output(), ContainsSubstring("profiled=sim:wd400bb"));
    CHECK_THAT(d.output(), ContainsSubstring("policy=adm2"));
    REQUIRE(d.stop(SIGTERM) == 0);
  }
  test::VigildProcess again(data, base);
  REQUIRE(again.wait_ready());
  INFO(again.output());
  CHECK_THAT(again.output(), ContainsSubstring("disk profile in use"));  // remembered in the catalog
  pqxx::connection conn(catalog_of(data));
  CHECK(pqxx::nontransaction(conn).exec1("SELECT count(*) FROM disk_profiles")[0].as<int>() == 1);

  auto bad = test::run_to_exit(VIGILD_PATH, {"--data", (dir.path() / "d2").string(), "--admission-policy", "yolo"},
                               dir.path() / "bad.log");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.output, ContainsSubstring("unknown policy 'yolo'"));
  for (const char* p : {"0", "0.7", "nan", "-1"}) {
    auto over = test::run_to_exit(VIGILD_PATH, {"--data", (dir.path() / "d3").string(), "--overbooking", p},
                                  dir.path() / "over.log");
    INFO(p << ": " << over.output);
    CHECK(over.status == 2);
    CHECK_THAT(over.output, ContainsSubstring("--overbooking must be a probability"));
  }
}
