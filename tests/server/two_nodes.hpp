#pragma once
// Two vigild nodes on one PostgreSQL catalog with pulled GStreamer RTSP cameras (docs/nodes.md):
// the set-up the multi-node tests share (nodes_failover_test.cpp, nodes_drain_test.cpp, front_door_test.cpp).
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <vector>

#include "catalog/camera_rows.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/rtsp_camera_process.hpp"
#include "tests/support/temp_cluster.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

namespace vigil::test {

using namespace std::chrono_literals;

inline std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Catalog {
  pqxx::connection db;
  explicit Catalog(const std::string& conninfo) : db(conninfo) {}
  std::int64_t number(const std::string& sql) {
    pqxx::nontransaction q(db);
    const auto r = q.exec(sql);
    return r.empty() || r[0][0].is_null() ? 0 : r[0][0].as<std::int64_t>();
  }
  std::set<std::string> names(const std::string& sql) {
    pqxx::nontransaction q(db);
    std::set<std::string> out;
    for (const auto& r : q.exec(sql)) out.insert(r[0].as<std::string>());
    return out;
  }
};

// EXTRA: more vigild options.
inline std::unique_ptr<test::VigildProcess> start_node(const std::filesystem::path& dir,
                                                       const std::filesystem::path& profile, const std::string& db,
                                                       const std::string& node,
                                                       const std::vector<std::string>& extra = {}) {
  auto args = test::sim_volume_args(dir, profile, 256, /*pull_cameras=*/true);
  args.insert(args.end(), {"--db", db, "--node", node, "--recorder", VIGIL_CLI_PATH});
  args.insert(args.end(), extra.begin(), extra.end());
  auto d = std::make_unique<test::VigildProcess>(dir / "data", args);
  REQUIRE(d->wait_ready());
  return d;
}

// Cameras whose live stream (one in state recording, with a segment) is on NODE's disk.
inline std::string recording_on(const std::string& node) {
  return "SELECT DISTINCT c.name FROM cameras c JOIN streams s ON s.camera_id = c.id "
         "JOIN segments g ON g.stream_id = s.id JOIN disks d ON d.id = s.disk_id "
         "WHERE s.state = 'recording' AND s.role = 'main' AND s.media_kind = 'video' AND d.node = '" +
         node + "'";
}

// Two nodes, a and b, on a catalog of their own, both leases live (placement sees both nodes),
// then CAMERAS pulled cameras (cam0…) from one GStreamer RTSP test camera added to the catalog.
// EXTRA: more options for both nodes. A_DB: what node a's --db is made of the catalog's conninfo
// (node_partition_test.cpp puts a proxy between a and PostgreSQL); unset: the same as b's.
struct TwoNodes {
  test::TempDir dir;
  std::string db;
  std::filesystem::path profile;
  test::RtspCamera camera;
  std::unique_ptr<test::VigildProcess> a, b;
  Catalog cat;

  TwoNodes(const std::string& database, int cameras, const std::vector<std::string>& extra = {},
           const std::function<std::string(const std::string&)>& a_db = {})
      : db(test::shared_cluster().create_database(database)),
        profile(test::make_sim_profile(dir.path())),
        camera(test::start_rtsp_camera(dir.path(), 0, 256)),
        a(start_node(mkdir(dir.path() / "a"), profile, a_db ? a_db(db) : db, "a", extra)),
        b(start_node(mkdir(dir.path() / "b"), profile, db, "b", extra)),
        cat(db) {
    REQUIRE(
        eventually([&] { return cat.number("SELECT count(*) FROM nodes WHERE lease_until > clock_timestamp()") == 2; },
                   30s));
    pqxx::work tx(cat.db);
    for (int i = 0; i < cameras; ++i) {
      catalog::add_camera(tx, "cam" + std::to_string(i), "rtsp://127.0.0.1:" + std::to_string(camera.port) + "/cam1");
    }
    tx.commit();
  }
  static std::filesystem::path mkdir(const std::filesystem::path& p) {
    std::filesystem::create_directories(p);
    return p;
  }
  void logs() const {
    UNSCOPED_INFO("node a: " << a->output().substr(0, 30000));
    UNSCOPED_INFO("node b: " << b->output().substr(0, 30000));
  }
};

}  // namespace vigil::test
