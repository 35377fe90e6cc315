#include "server/disks/volume_startup.hpp"

#include <chrono>
#include <pqxx/pqxx>
#include <random>
#include <set>

#include "common/log.hpp"
#include "catalog/node_rows.hpp"
#include "catalog/volume_reconcile.hpp"

namespace vigil::server {
namespace {

storage::VolumeUuid random_uuid() {
  std::random_device rd;
  storage::VolumeUuid u;
  for (auto& b : u) b = std::byte(static_cast<std::uint8_t>(rd()));
  u[6] = (u[6] & std::byte{0x0f}) | std::byte{0x40};  // version 4
  u[8] = (u[8] & std::byte{0x3f}) | std::byte{0x80};  // RFC 4122 variant
  return u;
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::size_t corrupt_spans(const std::vector<catalog::VolumeSegment>& found) {
  std::size_t n = 0;
  for (const auto& v : found) n += v.damaged.size();
  return n;
}

// Streams the catalog lacked (a new or emptied catalog) were rebuilt from the volume: say so,
// and warn about those whose segments did not say what they are.
void log_rebuilt_streams(const std::string& path, const std::vector<catalog::RebuiltStream>& rebuilt) {
  for (const auto& r : rebuilt) {
    if (r.warning.empty()) {
      log::info("stream rebuilt from the volume", {{"path", path},
                                                   {"stream", r.stream_id},
                                                   {"camera", r.description.camera},
                                                   {"codec", r.description.codec},
                                                   {"segments", r.segments},
                                                   {"frames", r.frames}});
    } else {
      log::warn("stream rebuilt from the volume without its description: kept under a stand-in camera",
                {{"path", path},
                 {"stream", r.stream_id},
                 {"camera", r.description.camera},
                 {"segments", r.segments},
                 {"frames", r.frames},
                 {"why", r.warning}});
    }
  }
}

OpenVolume open_volume(const VolumeConfig& cfg) {
  OpenVolume ov;
  ov.path = cfg.path;
  const bool existed = std::filesystem::exists(cfg.path);
  if (!existed && cfg.create_bytes == 0) {
    throw std::runtime_error("volume " + cfg.path.string() + " does not exist (give --volume-size to create it)");
  }
  auto dev = storage::FileDevice::open(cfg.path, {.create_bytes = existed ? 0 : cfg.create_bytes, .exclusive = true});
  if (!dev) throw std::runtime_error("cannot open volume " + cfg.path.string() + ": " + dev.error().message());
  std::unique_ptr<storage::Device> inner = std::move(*dev);
  if (cfg.fault_plan) {
    auto faulty = std::make_unique<storage::FaultyDevice>(std::move(inner), *cfg.fault_plan);
    ov.faults = faulty.get();
    inner = std::move(faulty);
  }
  ov.device = std::make_unique<storage::GuardedDevice>(std::move(inner), cfg.fail_after);
  auto vol = storage::Volume::open(*ov.device);
  if (!vol && !existed) {
    // A volume file we just created: format it.
    auto f = storage::Volume::format(*ov.device, {.extent_bytes = cfg.extent_bytes,
                                                  .volume_uuid = random_uuid(),
                                                  .created_us = now_us()});
    if (!f) throw std::runtime_error("cannot format volume " + cfg.path.string() + ": " + f.error().message());
    log::info("volume formatted", {{"path", cfg.path.string()}, {"bytes", cfg.create_bytes}});
    vol = storage::Volume::open(*ov.device);
  }
  if (!vol) {
    // Never format something that exists: it may be someone's data. The operator decides.
    throw std::runtime_error(cfg.path.string() + " is not a Vigil volume (" + vol.error().message() +
                             "); check it with `vigil fsck`, or remove it to let vigild create a new one");
  }
  ov.volume = std::move(*vol);
  return ov;
}

}  // namespace

VolumesUp bring_up_volumes(const std::vector<VolumeConfig>& configs, const std::string& conninfo,
                           const std::string& node) {
  VolumesUp out;
  pqxx::connection conn(conninfo);
  std::set<std::int64_t> rebuilt;  // streams rebuilt from segment headers, on any volume
  for (const auto& cfg : configs) {
    try {
      auto ov = open_volume(cfg);
      {
        pqxx::work tx(conn);
        ov.volume_id = catalog::register_volume(tx, *ov.volume, cfg.path.string(), node);
        // A volume that failed at an earlier start and is readable again is in service again.
        tx.exec_params0("UPDATE volumes SET state = 'active' WHERE id = $1 AND state = 'failed'", ov.volume_id);
        tx.commit();
      }
      const auto rec = catalog::reconcile_volume(conn, *ov.volume, ov.volume_id, now_us());
      const auto& plan = rec.plan;
      log_rebuilt_streams(cfg.path.string(), rec.rebuilt);
      for (const auto& r : rec.rebuilt) rebuilt.insert(r.stream_id);
      log::info("volume recovered", {{"path", cfg.path.string()},
                                     {"volume_id", ov.volume_id},
                                     {"segments", rec.found.size()},
                                     {"scanned", rec.scanned},
                                     {"trusted", rec.trusted},
                                     {"corrupt_spans", corrupt_spans(rec.found)},
                                     {"closed_after_crash", plan.close.size()},
                                     {"adopted", plan.adopt.size()},
                                     {"reclaimed", plan.reclaim.size()},
                                     {"lost", plan.lost.size()},
                                     {"unreadable_kept", plan.kept.size()},
                                     {"restored", plan.restore.size()},
                                     {"streams_rebuilt", rec.rebuilt.size()},
                                     {"free_extents", ov.volume->free_extent_count()},
                                     {"extents", ov.volume->extent_count()}});
      if (ov.faults) {
        // From here on the plan counts: the volume in service, not its formatting or recovery.
        ov.faults->arm();
        log::warn("volume runs under a fault plan (test only)",
                  {{"path", cfg.path.string()}, {"plan", storage::fault_plan_text(*cfg.fault_plan)}});
      }
      out.open.push_back(std::move(ov));
    } catch (const pqxx::failure&) {
      throw;  // the catalog, not the volume
    } catch (const std::exception& e) {
      // The other volumes still record; this one is for the operator to look at (fsck), and its
      // recordings stay in the catalog, findable, until it comes back.
      log::error("volume unavailable: vigild runs without it",
                 {{"path", cfg.path.string()}, {"reason", std::string(e.what())}});
      pqxx::work tx(conn);
      // Only this node's volume at that path: another node on the same catalog may use the same path.
      tx.exec_params0(
          "UPDATE volumes SET state = 'failed' WHERE path = $1 AND state = 'active' "
          "AND disk_id IN (SELECT id FROM disks WHERE node = $2)",
          cfg.path.string(), node);
      tx.commit();
      out.unavailable.push_back({cfg.path, e.what()});
    }
  }
  // Holes between a rebuilt stream and the others of its camera, whatever volume each is on.
  if (const int gaps = catalog::write_rebuild_gaps(conn, rebuilt); gaps > 0) {
    log::info("gaps between rebuilt streams recorded", {{"gaps", gaps}});
  }
  // This node died and another took its cameras over: its recovery found footage the catalog
  // did not know yet (the open segments' rows trail the recording), so the 'failover' gaps after
  // its streams start where that footage ends (docs/nodes.md).
  std::vector<std::int64_t> volume_ids;
  for (const auto& ov : out.open) volume_ids.push_back(ov.volume_id);
  if (!volume_ids.empty()) {
    pqxx::work tx(conn);
    const int shortened = catalog::shorten_failover_gaps(tx, volume_ids);
    tx.commit();
    if (shortened > 0) log::info("failover gaps shortened to the recovered footage", {{"gaps", shortened}});
  }
  return out;
}

}  // namespace vigil::server
