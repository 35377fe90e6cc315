#pragma once
// The event catalog tests' seeded events (cameras, kinds, objects, times) on a private cluster.
#include <algorithm>
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <map>
#include <pqxx/pqxx>
#include <set>

#include "catalog/event_rows.hpp"
#include "catalog/migrator.hpp"
#include "tests/support/temp_cluster.hpp"

namespace vigil::test::events {

inline constexpr std::int64_t S = 1'000'000;
inline constexpr std::int64_t T0 = 1'767'225'600 * S;  // 2026-01-01T00:00:00Z

struct Seed {
  int label;
  catalog::NewEvent event;
};

inline std::vector<Seed> seeds() {
  using catalog::FrameBox;
  auto ev = [](std::string cam, std::int64_t start, std::int64_t end, std::string type) {
    catalog::NewEvent e;
    e.camera = std::move(cam);
    e.start_us = start;
    e.end_us = end;
    e.type = std::move(type);
    return e;
  };
  std::vector<Seed> out;
  out.push_back({1, ev("cam-a", T0 + 10 * S, T0 + 12 * S, "motion")});
  {
    auto e = ev("cam-a", T0 + 20 * S, T0 + 20 * S, "object");
    e.object_class = "person";
    e.confidence = 0.9;
    e.location = FrameBox{0.1, 0.1, 0.3, 0.4};
    e.attributes_json = R"({"color":"red","plate":"AB123"})";
    e.source = "det1";
    out.push_back({2, e});
  }
  {
    auto e = ev("cam-b", T0 + 30 * S, T0 + 40 * S, "object");
    e.object_class = "car";
    e.confidence = 0.5;
    e.location = FrameBox{0.6, 0.6, 0.9, 0.9};
    e.attributes_json = R"({"color":"blue","plate":"XY999"})";
    out.push_back({3, e});
  }
  {
    auto e = ev("cam-b", T0 + 50 * S, T0 + 55 * S, "line_crossing");
    e.object_class = "person";
    e.confidence = 0.75;
    e.location = FrameBox{0.0, 0.5, 0.2, 0.7};
    e.attributes_json = R"({"color":"red","line":"north"})";
    out.push_back({4, e});
  }
  out.push_back({5, ev("cam-c", T0 + 5 * S, T0 + 100 * S, "tamper")});
  {
    auto e = ev("cam-a", T0 + 100 * S, T0 + 101 * S, "object");
    e.object_class = "car";
    e.confidence = 0.3;
    e.location = FrameBox{0.4, 0.4, 0.5, 0.5};
    e.attributes_json = R"({"color":"red","nested":{"k":1},"plate":"AB123"})";
    out.push_back({6, e});
  }
  {
    auto e = ev("cam-c", T0 + 200 * S, T0 + 210 * S, "object");
    e.object_class = "person";
    e.confidence = 1.0;
    e.location = FrameBox{0.45, 0.45, 0.55, 0.55};
    e.attributes_json = R"({"color":"green"})";
    out.push_back({7, e});
  }
  {
    auto e = ev("cam-b", T0 - 50 * S, T0 - 40 * S, "object");
    e.object_class = "dog";
    e.confidence = 0.6;
    e.attributes_json = R"({"color":"red"})";
    out.push_back({8, e});
  }
  {
    auto e = ev("cam-a", T0 + 30 * S, T0 + 30 * S, "motion");
    e.confidence = 0.2;
    e.location = FrameBox{0.9, 0.9, 1.0, 1.0};
    out.push_back({9, e});
  }
  {
    auto e = ev("cam-a", T0 + 30 * S, T0 + 35 * S, "motion");
    e.confidence = 0.95;
    out.push_back({10, e});
  }
  out.push_back({11, ev("cam-c", 2 * S, 3 * S, "manual")});  // near the epoch: its clip clamps at 0
  return out;
}

struct Fixture {
  pqxx::connection conn;
  std::map<int, std::int64_t> id;  // label -> event id
  std::map<int, catalog::NewEvent> by_label;

  explicit Fixture(const std::string& db) : conn(db) {
    catalog::migrate(conn);
    pqxx::work tx(conn);
    for (const char* cam : {"cam-a", "cam-b", "cam-c"}) tx.exec_params0("INSERT INTO cameras (name) VALUES ($1)", cam);
    const auto disk = tx.exec1(
                            "INSERT INTO disks (node, device_path, capacity_bytes) VALUES ('n', 'sim:0', 1000000) "
                            "RETURNING id")[0]
                          .as<std::int64_t>();
    const auto vol = tx.exec_params1(
                           "INSERT INTO volumes (disk_id, path, capacity_bytes, extent_bytes) "
                           "VALUES ($1, 'sim:0', 1048576, 4096) RETURNING id",
                           disk)[0]
                         .as<std::int64_t>();
    auto stream = [&](const char* cam, const char* kind) {
      return tx
          .exec_params1(
              "INSERT INTO streams (camera_id, media_kind, codec, declared_rate_bps, state, started_at_us, ended_at_us) "
              "SELECT id, $2, 'x', 1000, 'stopped', $3, $4 FROM cameras WHERE name = $1 RETURNING id",
              cam, kind, T0 - 1000 * S, T0 + 1000 * S)[0]
          .as<std::int64_t>();
    };
    auto segment = [&](std::int64_t stream, const char* state, std::int64_t start, std::int64_t end) {
      tx.exec_params0(
          "INSERT INTO segments (stream_id, volume_id, state, start_us, end_us, checksum_crc32c, "
          "closed_at_us) VALUES ($1, $2, $3, $4, $5, 0, $5)",
          stream, vol, state, start, end);
    };
    const auto a = stream("cam-a", "video");
    segment(a, "closed", T0, T0 + 8 * S);
    segment(a, "open", T0 + 18 * S, T0 + 22 * S);
    segment(a, "closed", T0 + 35 * S, T0 + 36 * S);
    segment(a, "deleting", T0 + 96 * S, T0 + 97 * S);
    const auto c_audio = stream("cam-c", "audio");
    segment(c_audio, "closed", T0 + 200 * S, T0 + 210 * S);

    std::vector<catalog::NewEvent> batch;
    for (const auto& s : seeds()) batch.push_back(s.event);
    const auto ids = catalog::insert_events(tx, batch);
    REQUIRE(ids.size() == batch.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      id[seeds()[i].label] = ids[i];
      by_label[seeds()[i].label] = batch[i];
    }
    tx.commit();
  }

  catalog::EventPage find(const catalog::EventQuery& q) {
    pqxx::read_transaction tx(conn);
    return catalog::find_events(tx, q);
  }

  // The expected ids of LABELS in the API's order: start_us descending, then id descending.
  std::vector<std::int64_t> ordered(std::vector<int> labels) {
    std::sort(labels.begin(), labels.end(), [&](int l, int r) {
      const auto kl = std::pair(by_label.at(l).start_us, id.at(l));
      const auto kr = std::pair(by_label.at(r).start_us, id.at(r));
      return kl > kr;
    });
    std::vector<std::int64_t> out;
    for (int l : labels) out.push_back(id.at(l));
    return out;
  }

  std::vector<std::int64_t> ids_of(const catalog::EventQuery& q) {
    const auto page = find(q);
    CHECK_FALSE(page.next.has_value());
    std::vector<std::int64_t> out;
    for (const auto& e : page.events) out.push_back(e.id);
    return out;
  }
};

inline catalog::EventQuery wide() {
  catalog::EventQuery q;
  q.from_us = T0 - 100 * S;
  q.to_us = T0 + 300 * S;
  q.limit = 1000;
  return q;
}

}  // namespace vigil::test::events
