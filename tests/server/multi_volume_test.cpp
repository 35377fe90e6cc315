// Three volumes on one vigild: recordings spread over them (each disk admits what fits), and
// vigild restarts after a clean stop and after SIGKILL with every acknowledged frame in the
// catalog. Segment ids come from per-volume ranges, so two disks never write the same id (a
// shared counter once made the second volume's segment rows collide, and vigild refused to
// start again: "duplicate key value violates unique constraint segments_pkey").
#include <signal.h>

#include <catch2/catch_test_macros.hpp>
#include <memory>
#include <pqxx/pqxx>
#include <set>
#include <thread>

#include "catalog/recording_rows.hpp"
#include "client/wire/wire_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/paced_sender.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using namespace vigil;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kPackets = 60;

struct ThreeVolumes {
  ThreeVolumes() {
    test::make_sim_profile(dir.path());
    for (int i = 0; i < 3; ++i)
      args.insert(args.end(), {"--volume", (dir.path() / ("vol" + std::to_string(i))).string()});
    args.insert(args.end(),
                {"--volume-size", std::to_string(128 << 20), "--extent-bytes", std::to_string(4 << 20), "--profile",
                 (dir.path() / "wd.json").string(), "--cycle-ms", "200", "--model-check-cycles", "0"});
  }
  std::unique_ptr<test::VigildProcess> start() {
    auto d = std::make_unique<test::VigildProcess>(dir.path() / "data", args);
    REQUIRE(d->wait_ready());
    return d;
  }
  std::string catalog() const {
    return "host=" + (dir.path() / "data" / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil";
  }
  test::TempDir dir;
  std::vector<std::string> args;
};

// The largest recording rate an empty disk of this vigild admits (asked with a rate none takes).
std::uint64_t largest_rate_bps(const test::VigildProcess& d) {
  client::WireClient c(d.wire(), 20s);
  c.hello("multi-volume test", test::token());
  c.send(test::open_record("probe", 100'000'000'000));
  auto r = c.receive();
  REQUIRE(r.msg.has_refuse());
  REQUIRE(r.msg.refuse().largest_rate_bps() > 0);
  return r.msg.refuse().largest_rate_bps();
}

// Three recordings open at once, each taking most of a disk, so each lands on its own volume;
// every packet sent and acknowledged. Returns their stream ids.
std::vector<std::uint64_t> record_on_three_disks(const test::VigildProcess& d, const std::string& prefix) {
  const std::uint64_t rate = largest_rate_bps(d) * 3 / 4;
  std::vector<std::unique_ptr<client::WireClient>> clients;
  std::vector<std::uint64_t> streams;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<client::WireClient>(d.wire(), 20s));
    INFO(d.output());
    streams.push_back(test::open_admitted(*clients.back(), prefix + std::to_string(i), rate));
  }
  for (std::size_t i = 0; i < clients.size(); ++i) {
    test::PacedSender sender(*clients[i], streams[i]);
    sender.send_until(kPackets, 20);
    sender.finish();
    CHECK(sender.counts().acked == kPackets);
  }
  return streams;
}

// Frames the catalog holds for STREAM and the volumes its segments are on; waits (bounded) for
// the batcher to commit after a clean end.
std::pair<std::uint64_t, std::set<std::int64_t>> catalogued(const std::string& conninfo, std::uint64_t stream) {
  pqxx::connection conn(conninfo);
  std::uint64_t frames = 0;
  std::set<std::int64_t> volumes;
  for (int i = 0; i < 100 && frames < kPackets; ++i) {
    pqxx::nontransaction q(conn);
    frames = q.exec_params1("SELECT COALESCE(sum(frame_count), 0) FROM segments WHERE stream_id = $1",
                            static_cast<std::int64_t>(stream))[0]
                 .as<std::uint64_t>();
    volumes.clear();
    for (const auto& row : q.exec_params("SELECT DISTINCT volume_id FROM segments WHERE stream_id = $1",
                                         static_cast<std::int64_t>(stream))) {
      volumes.insert(row[0].as<std::int64_t>());
    }
    if (frames < kPackets) std::this_thread::sleep_for(100ms);  // a bounded wait for the batcher, not timing
  }
  {
    pqxx::nontransaction q(conn);
    for (const auto& row : q.exec("SELECT id, stream_id, volume_id, frame_count, state FROM segments")) {
      UNSCOPED_INFO("segment " << row[0].c_str() << " stream " << row[1].c_str() << " volume " << row[2].c_str()
                               << " frames " << row[3].c_str() << " " << row[4].c_str());
    }
  }
  return {frames, volumes};
}

}  // namespace

TEST_CASE("three volumes: recordings spread over them, and vigild restarts after a stop and after a kill",
          "[vigild][volume]") {
  ThreeVolumes rig;
  std::vector<std::uint64_t> first, second;
  {
    auto d = rig.start();
    first = record_on_three_disks(*d, "cam-a");
    INFO(d->output());
    std::set<std::int64_t> used;
    for (auto s : first) {
      auto [frames, volumes] = catalogued(rig.catalog(), s);
      CHECK(frames == kPackets);
      REQUIRE(volumes.size() == 1);
      used.insert(*volumes.begin());
    }
    CHECK(used.size() == 3);  // one recording per volume
    REQUIRE(d->stop(SIGTERM) == 0);
  }
  {
    auto d = rig.start();  // a shared id counter made this start fail
    second = record_on_three_disks(*d, "cam-b");
    // Killed before the batcher may have committed the last segments: recovery finds them.
    d->stop(SIGKILL);
  }
  auto d = rig.start();
  INFO(d->output());
  for (auto s : first) CHECK(catalogued(rig.catalog(), s).first == kPackets);
  for (auto s : second) CHECK(catalogued(rig.catalog(), s).first == kPackets);
  // Each volume's segment ids lie in that volume's range.
  pqxx::connection conn(rig.catalog());
  pqxx::nontransaction q(conn);
  const auto outside = q.exec1("SELECT count(*) FROM segments WHERE id >> " +
                               std::to_string(catalog::kSegmentIdVolumeShift) + " <> volume_id")[0]
                           .as<int>();
  CHECK(outside == 0);
  CHECK(q.exec1("SELECT count(DISTINCT volume_id) FROM segments")[0].as<int>() == 3);
}

TEST_CASE("three volumes: a new recording goes to the disk with the most share left", "[vigild][volume]") {
  ThreeVolumes rig;
  auto d = rig.start();
  const std::uint64_t rate = largest_rate_bps(*d) / 4;  // four would fit on the first disk alone
  std::vector<std::unique_ptr<client::WireClient>> clients;
  std::vector<std::uint64_t> streams;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<client::WireClient>(d->wire(), 20s));
    streams.push_back(test::open_admitted(*clients.back(), "spread-" + std::to_string(i), rate));
  }
  pqxx::connection conn(rig.catalog());
  pqxx::nontransaction q(conn);
  std::set<std::int64_t> disks;
  for (auto s : streams) {
    disks.insert(q.exec_params1("SELECT disk_id FROM streams WHERE id = $1", static_cast<std::int64_t>(s))[0]
                     .as<std::int64_t>());
  }
  CHECK(disks.size() == 3);  // configuration order would have put all three on the first
}
