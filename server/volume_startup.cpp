#include "server/volume_startup.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <pqxx/pqxx>
#include <random>

#include "common/log.hpp"
#include "server/recovery_plan.hpp"
#include "storage/retention.hpp"

namespace vigil::server {
namespace {

std::string uuid_text(const storage::VolumeUuid& u) {
  char out[37];
  const auto b = [&](int i) { return static_cast<unsigned>(u[static_cast<std::size_t>(i)]); };
  std::snprintf(out, sizeof out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b(0), b(1),
                b(2), b(3), b(4), b(5), b(6), b(7), b(8), b(9), b(10), b(11), b(12), b(13), b(14), b(15));
  return out;
}

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

// The catalog row of this volume (by the uuid in its superblock), created on first sight.
std::int64_t register_volume(pqxx::work& tx, const storage::Volume& vol, const std::string& path) {
  const auto& sb = vol.superblock();
  const std::string uuid = uuid_text(sb.volume_uuid);
  auto found = tx.exec_params("SELECT id FROM volumes WHERE volume_uuid = $1::uuid", uuid);
  if (!found.empty()) return found[0][0].as<std::int64_t>();
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const auto capacity = static_cast<std::int64_t>(sb.extent_offset(sb.extent_count));
  auto disk = tx.exec_params1("INSERT INTO disks (node, device_path, capacity_bytes) VALUES ($1, $2, $3) RETURNING id",
                              std::string(host), path, capacity)[0]
                  .as<std::int64_t>();
  return tx.exec_params1("INSERT INTO volumes (disk_id, volume_uuid, path, capacity_bytes, block_bytes, extent_bytes) "
                         "VALUES ($1, $2::uuid, $3, $4, $5, $6) RETURNING id",
                         disk, uuid, path, capacity, static_cast<int>(sb.block_bytes),
                         static_cast<std::int64_t>(sb.extent_bytes))[0]
      .as<std::int64_t>();
}

OpenVolume open_volume(const VolumeConfig& cfg) {
  OpenVolume ov;
  ov.path = cfg.path;
  const bool existed = std::filesystem::exists(cfg.path);
  if (!existed && cfg.create_bytes == 0) {
    throw std::runtime_error("volume " + cfg.path.string() + " does not exist (give --volume-size to create it)");
  }
  auto dev = storage::FileDevice::open(cfg.path, {.create_bytes = existed ? 0 : cfg.create_bytes});
  if (!dev) throw std::runtime_error("cannot open volume " + cfg.path.string() + ": " + dev.error().message());
  ov.device = std::move(*dev);
  auto vol = storage::Volume::open(*ov.device);
  if (!vol && !existed) {
    // A volume file we just created: format it.
    auto f = storage::Volume::format(*ov.device, {.extent_bytes = cfg.extent_bytes, .volume_uuid = random_uuid(),
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

std::vector<OpenVolume> bring_up_volumes(const std::vector<VolumeConfig>& configs, const std::string& conninfo) {
  std::vector<OpenVolume> out;
  pqxx::connection conn(conninfo);
  for (const auto& cfg : configs) {
    auto ov = open_volume(cfg);
    auto found = scan_volume(*ov.volume);
    RecoveryPlan plan;
    {
      pqxx::work tx(conn);
      ov.volume_id = register_volume(tx, *ov.volume, cfg.path.string());
      std::set<std::int64_t> streams;
      for (const auto& row : tx.exec("SELECT id FROM streams")) streams.insert(row[0].as<std::int64_t>());
      plan = plan_recovery(found, catalog_segments(tx, ov.volume_id), streams);
      apply_recovery_plan(tx, ov.volume_id, plan, now_us());
      tx.commit();
    }
    // Space is reclaimed only after the catalog no longer points at it.
    for (auto id : plan.reclaim) {
      if (auto r = storage::reclaim_segment(*ov.volume, id); !r) {
        throw std::runtime_error("reclaiming segment " + std::to_string(id) + " on " + cfg.path.string() + ": " +
                                 r.error().message());
      }
    }
    log::info("volume recovered", {{"path", cfg.path.string()},
                                   {"volume_id", ov.volume_id},
                                   {"segments", found.size()},
                                   {"closed_after_crash", plan.close.size()},
                                   {"adopted", plan.adopt.size()},
                                   {"reclaimed", plan.reclaim.size()},
                                   {"lost", plan.lost.size()},
                                   {"free_extents", ov.volume->free_extent_count()},
                                   {"extents", ov.volume->extent_count()}});
    out.push_back(std::move(ov));
  }
  return out;
}

}  // namespace vigil::server
