// Faults on the real daemon: vigild with two volumes, the first under a test fault plan
// (--fault-plan, storage/faulty_device.hpp), recorded by a recorder that logs every
// acknowledgement and resends after a session that ends on IO_ERROR. One case per fault kind:
// an EIO that the retry repairs, an EIO that survives the retry (a bad spot), a failed flush, a
// torn write, a volume that fails for good and a full one. In every case, once vigild stopped:
// every acknowledged frame is on a volume byte for byte, no frame that was never acknowledged is
// served (read up to the catalog's end of each segment), and
// `vigil fsck VOLUME --db` finds nothing wrong on either volume. A volume that keeps failing is
// taken out of service: 'failed' in the catalog, /healthz degraded naming it, the metric set, its
// recording continues on the other volume and new ones go there.
#include <signal.h>

#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <map>
#include <pqxx/pqxx>
#include <set>

#include "storage/file_device.hpp"
#include "storage/segment_recovery.hpp"
#include "storage/volume.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/resending_recorder.hpp"
#include "tests/support/script_frames.hpp"
#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

namespace {

constexpr std::uint64_t kFrames = 150;         // 3 s of camera at 25 fps
constexpr std::uint64_t kRateBps = 2'000'000;  // ~15 script frames per 200 ms cycle

struct FaultRig {
  explicit FaultRig(const std::string& plan) : db(test::shared_cluster().create_database("faults")) {
    const auto profile = test::make_sim_profile(dir.path());
    for (int i = 0; i < 2; ++i) volumes.push_back(dir.path() / ("vol" + std::to_string(i)));
    args = {"--db",
            db,
            "--volume",
            volumes[0].string(),
            "--volume",
            volumes[1].string(),
            "--volume-size",
            std::to_string(64 << 20),
            "--extent-bytes",
            std::to_string(4 << 20),
            "--profile",
            profile.string(),
            "--cycle-ms",
            "200",
            "--model-check-cycles",
            "0",
            "--fault-plan",
            "0:" + plan};
    vigild = std::make_unique<test::VigildProcess>(dir.path() / "data", args);
    REQUIRE(vigild->wait_ready());
  }
  // Stops vigild and starts it again: its recovery must not make served what was never
  // acknowledged (a failed batch that landed in part) nor lose what was.
  void restart() {
    REQUIRE(vigild->stop(SIGTERM) == 0);
    vigild = std::make_unique<test::VigildProcess>(dir.path() / "data", args);
    REQUIRE(vigild->wait_ready());
  }
  // The catalog id of the disk holding volume I.
  std::int64_t disk_of(std::size_t i) const {
    pqxx::connection conn(db);
    pqxx::nontransaction q(conn);
    return q.exec_params1("SELECT disk_id FROM volumes WHERE path = $1", volumes[i].string())[0].as<std::int64_t>();
  }
  std::int64_t disk_of_stream(std::uint64_t stream) const {
    pqxx::connection conn(db);
    pqxx::nontransaction q(conn);
    return q.exec_params1("SELECT disk_id FROM streams WHERE id = $1", static_cast<std::int64_t>(stream))[0]
        .as<std::int64_t>();
  }
  // A stream ended by a disk failure: 'interrupted', and the only gap it may have is io_error (a
  // recorder that sends faster than real time has none: its frames' time is ahead of the clock).
  void check_ended_by_io_error(std::uint64_t stream) const {
    pqxx::connection conn(db);
    pqxx::nontransaction q(conn);
    const auto id = static_cast<std::int64_t>(stream);
    CHECK(q.exec_params1("SELECT state FROM streams WHERE id = $1", id)[0].as<std::string>() == "interrupted");
    CHECK(q.exec_params1("SELECT count(*) FROM gaps WHERE stream_id = $1 AND reason <> 'io_error'", id)[0].as<int>() ==
          0);
  }
  std::string volume_state(std::size_t i) const {
    pqxx::connection conn(db);
    pqxx::nontransaction q(conn);
    return q.exec_params1("SELECT state FROM volumes WHERE path = $1", volumes[i].string())[0].as<std::string>();
  }
  test::TempDir dir;
  std::string db;
  std::vector<std::filesystem::path> volumes;
  std::vector<std::string> args;
  std::unique_ptr<test::VigildProcess> vigild;
};

// Records camera NAME to its end; every frame must end up acknowledged.
test::ResendingRecorder record(const FaultRig& rig, const std::string& name, std::uint64_t tag) {
  test::ResendingRecorder r(*rig.vigild, name, tag, kRateBps);
  r.record(kFrames);
  INFO(rig.vigild->output());
  CHECK(r.refusal().empty());
  CHECK(r.acked_frames() == kFrames);
  return r;
}

// Stops vigild, then reads both volumes as a reader would, up to each closed segment's catalog
// row: every acknowledged frame of RECORDERS is there with its camera frame's bytes, nothing of
// their streams past what was acknowledged is, and fsck --db passes each volume.
void check_volumes(FaultRig& rig, const std::vector<const test::ResendingRecorder*>& recorders,
                   const std::vector<std::uint64_t>& tags) {
  const std::string output = rig.vigild->output();
  REQUIRE(rig.vigild->stop(SIGTERM) == 0);
  std::map<std::uint64_t, std::uint64_t> served_frames;  // closed segment → its row's frame count
  {
    pqxx::connection conn(rig.db);
    pqxx::nontransaction q(conn);
    for (const auto& row : q.exec("SELECT id, frame_count FROM segments WHERE state = 'closed'")) {
      served_frames[row[0].as<std::uint64_t>()] = row[1].as<std::uint64_t>();
    }
  }
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::byte>> on_volume;  // (stream, seq) → payload
  for (const auto& path : rig.volumes) {
    auto dev = storage::FileDevice::open(path, {.backend = storage::IoBackend::sync});
    REQUIRE(dev.has_value());
    auto vol = storage::Volume::open(**dev);
    REQUIRE(vol.has_value());
    for (const auto& [id, uses] : (*vol)->segments()) {
      const auto row = served_frames.find(id);
      std::uint64_t n = 0;
      auto rec = storage::recover_segment(**vol, id, [&](const storage::ScannedRecord& r) {
        if (row == served_frames.end() || n++ >= row->second) return;  // not served
        on_volume[{r.header.stream_id, r.header.sequence}].assign(r.payload.begin(), r.payload.end());
      });
      INFO("segment " << id << " on " << path);
      CHECK(rec.has_value());
    }
  }
  INFO(output);
  for (std::size_t i = 0; i < recorders.size(); ++i) {
    std::map<std::uint64_t, std::uint64_t> acked_upto;  // per stream
    std::size_t missing = 0, wrong = 0;
    for (const auto& a : recorders[i]->acked()) {
      acked_upto[a.stream_id] = std::max(acked_upto[a.stream_id], a.sequence);
      const auto it = on_volume.find({a.stream_id, a.sequence});
      if (it == on_volume.end()) ++missing;
      else if (it->second != test::script_frame(a.camera_frame, tags[i]).payload) ++wrong;
    }
    CHECK(missing == 0);
    CHECK(wrong == 0);
    std::size_t unacknowledged = 0;
    for (const auto& [key, payload] : on_volume) {
      const auto it = acked_upto.find(key.first);
      if (it != acked_upto.end() && key.second > it->second) ++unacknowledged;
    }
    CHECK(unacknowledged == 0);
  }
  for (const auto& path : rig.volumes) {
    auto fsck = test::run_to_exit(VIGIL_CLI_PATH, {"fsck", path.string(), "--db", rig.db},
                                  rig.dir.path() / (path.filename().string() + ".fsck.log"));
    INFO(fsck.output);
    CHECK(fsck.status == 0);
    CHECK_THAT(fsck.output, !ContainsSubstring("orphan"));
  }
}

boost::json::object healthz(const FaultRig& rig) {
  const auto h = test::http_request_without_token(rig.vigild->http(), "GET", "/healthz");
  REQUIRE(h.status == 200);
  return boost::json::parse(h.body).as_object();
}

// The volume is out of service: failed in the catalog, degraded in /healthz, set in /metrics.
void check_volume_failed(const FaultRig& rig) {
  CHECK(rig.volume_state(0) == "failed");
  CHECK(rig.volume_state(1) == "active");
  const auto doc = healthz(rig);
  CHECK(doc.at("status").as_string() == "degraded");
  const auto& unavailable = doc.at("volumes").at("unavailable").as_array();
  REQUIRE(unavailable.size() == 1);
  CHECK(unavailable[0].at("path").as_string() == rig.volumes[0].string());
  CHECK_THAT(std::string(unavailable[0].at("error").as_string()), ContainsSubstring("failed in a row"));
  // The disks part: degraded (the other volume still records), each volume with its state and a
  // live IO thread; the catalog and cameras parts are ok.
  const auto& part = doc.at("disks").as_object();
  CHECK(part.at("status").as_string() == "degraded");
  CHECK(part.at("configured").as_int64() == 2);
  CHECK(part.at("recording_possible").as_int64() == 1);
  std::map<std::string, std::string> states;
  for (const auto& v : part.at("volumes").as_array()) {
    states[std::string(v.at("volume").at("path").as_string())] = v.at("state").as_string();
    CHECK(v.at("io_thread").at("alive").as_bool());
    CHECK(v.at("io_thread").at("cycles").as_int64() > 0);
  }
  CHECK(states[rig.volumes[0].string()] == "failed");
  CHECK(states[rig.volumes[1].string()] == "in_service");
  CHECK(doc.at("catalog").at("status").as_string() == "ok");
  CHECK(doc.at("cameras").at("status").as_string() == "ok");
  const auto metrics = test::http_request_without_token(rig.vigild->http(), "GET", "/metrics");
  CHECK_THAT(metrics.body, ContainsSubstring("vigil_volume_unavailable{volume=\"" + rig.volumes[0].string() + "\"} 1"));
  CHECK_THAT(metrics.body,
             ContainsSubstring("vigil_disk_state{disk=\"" + rig.volumes[0].string() + "\",state=\"failed\"} 1"));
  CHECK_THAT(metrics.body,
             ContainsSubstring("vigil_disk_state{disk=\"" + rig.volumes[1].string() + "\",state=\"in_service\"} 1"));
  // /api/v1/disks says which disk and why.
  const auto disks = test::http_request(rig.vigild->http(), "GET", "/api/v1/disks");
  REQUIRE(disks.status == 200);
  int failed = 0;
  const auto listed = boost::json::parse(disks.body);
  for (const auto& d : listed.at("disks").as_array()) {
    const auto& f = d.at("failed");
    if (f.is_null()) continue;
    ++failed;
    CHECK(d.at("volume").at("path").as_string() == rig.volumes[0].string());
  }
  CHECK(failed == 1);
}

}  // namespace

// In service, volume 0's writes are: 1 the first extent's header, 2 the segment header, then
// one stream write per cycle (3, 4, ...: a cycle's ~50 KB is one chunk); flushes: one per cycle.

TEST_CASE("faults: an EIO on the Nth write is repaired by writing the same bytes again", "[vigild][fault]") {
  FaultRig rig("write@4");
  auto a = record(rig, "cam-a", 1);
  CHECK(a.io_errors() == 0);
  CHECK(a.streams().size() == 1);  // the session never noticed
  CHECK(rig.disk_of_stream(a.streams()[0]) == rig.disk_of(0));
  CHECK_THAT(rig.vigild->output(), ContainsSubstring("writing the same bytes again"));
  CHECK(healthz(rig).at("status").as_string() == "ok");
  check_volumes(rig, {&a}, {1});
}

TEST_CASE("faults: an EIO that the retry does not repair ends the session at its last durable frame",
          "[vigild][fault]") {
  FaultRig rig("write@8!");  // a bad spot, so its retry fails too; in the second cycle
  auto a = record(rig, "cam-a", 1);
  CHECK(a.io_errors() == 1);
  CHECK(a.streams().size() == 2);  // resent from the first frame not acknowledged, in a new stream
  CHECK(rig.disk_of_stream(a.streams()[0]) == rig.disk_of(0));
  rig.check_ended_by_io_error(a.streams()[0]);
  CHECK(rig.volume_state(0) == "active");  // one failure is not a failing volume
  CHECK(healthz(rig).at("status").as_string() == "ok");
  check_volumes(rig, {&a}, {1});
}

TEST_CASE("faults: an EIO on the Nth flush is never retried; the session ends and the recorder resends",
          "[vigild][fault]") {
  FaultRig rig("flush@3");
  auto a = record(rig, "cam-a", 1);
  CHECK(a.io_errors() == 1);
  REQUIRE(a.streams().size() == 2);
  rig.check_ended_by_io_error(a.streams()[0]);
  CHECK_THAT(rig.vigild->output(), !ContainsSubstring("writing the same bytes again"));
  check_volumes(rig, {&a}, {1});
}

TEST_CASE("faults: a torn write is written whole by the retry; torn and failing again, its part is erased",
          "[vigild][fault]") {
  SECTION("repaired") {
    FaultRig rig("torn@4");
    auto a = record(rig, "cam-a", 1);
    CHECK(a.io_errors() == 0);
    CHECK(a.streams().size() == 1);
    check_volumes(rig, {&a}, {1});
  }
  SECTION("not repaired: the half that landed is never read as frames") {
    FaultRig rig("torn@8!");  // in the second cycle: after durable frames of the same segment
    auto a = record(rig, "cam-a", 1);
    CHECK(a.io_errors() == 1);
    REQUIRE(a.streams().size() == 2);
    rig.check_ended_by_io_error(a.streams()[0]);
    rig.restart();
    check_volumes(rig, {&a}, {1});  // nothing past the acknowledged frames is served
  }
}

TEST_CASE("faults: a volume that fails for good is taken out of service and recording continues on the other",
          "[vigild][fault]") {
  const std::string plan = GENERATE(std::string("write@4+"), std::string("full@4"));
  INFO("plan " << plan);
  FaultRig rig(plan);
  auto a = record(rig, "cam-a", 1);
  CHECK(a.io_errors() >= 1);
  REQUIRE_FALSE(a.streams().empty());
  CHECK(rig.disk_of_stream(a.streams().front()) == rig.disk_of(0));  // it began on the failing volume
  CHECK(rig.disk_of_stream(a.streams().back()) == rig.disk_of(1));   // and ended on the other
  for (std::size_t i = 0; i + 1 < a.streams().size(); ++i) rig.check_ended_by_io_error(a.streams()[i]);
  check_volume_failed(rig);
  // New recordings go to the healthy volume, though the failed one has all its share left.
  auto b = record(rig, "cam-b", 2);
  CHECK(b.io_errors() == 0);
  REQUIRE(b.streams().size() == 1);
  CHECK(rig.disk_of_stream(b.streams()[0]) == rig.disk_of(1));
  rig.restart();  // the failed volume is tried again, and what it held is all there
  CHECK(rig.volume_state(0) == "active");
  check_volumes(rig, {&a, &b}, {1, 2});
}
