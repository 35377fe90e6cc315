#include "server/disks/disk_startup.hpp"

#include <chrono>
#include <pqxx/pqxx>

#include "catalog/profiles.hpp"
#include "catalog/recording_rows.hpp"
#include "common/log.hpp"

namespace vigil::server {

StartedDisks start_disks(std::vector<OpenVolume>& volumes, const std::string& conninfo, catalog::Batcher& batcher,
                         const DiskIoConfig& config, const std::optional<admission::DiskProfile>& given,
                         Metrics& metrics) {
  StartedDisks out;
  pqxx::connection conn(conninfo);
  for (auto& v : volumes) {
    std::optional<admission::DiskProfile> profile;
    std::uint64_t next_segment = 1;
    std::int64_t disk_id = 0;
    {
      pqxx::work tx(conn);
      disk_id = catalog::disk_of_volume(tx, v.volume_id);
      profile = catalog::latest_profile(tx, disk_id);
      if (!profile && given) {
        catalog::store_profile_for_disk(tx, *given, disk_id);
        profile = given;
      }
      next_segment = catalog::next_segment_id(tx, v.volume_id, *v.volume);
      tx.commit();
    }
    // On the IO thread, once: never waits for PostgreSQL (the batcher queues the row).
    auto on_failed = [&batcher, &metrics, path = v.path.string(), volume_id = v.volume_id](const std::string&) {
      metrics.volume_unavailable(path);
      batcher.enqueue("volume " + std::to_string(volume_id) + " failed", [volume_id](pqxx::work& tx) {
        tx.exec_params0("UPDATE volumes SET state = 'failed' WHERE id = $1", volume_id);
      });
    };
    out.io_threads.push_back(
        std::make_unique<DiskIoThread>(v, config, profile, &metrics.disk(v.path.string()), std::move(on_failed)));
    auto slot = std::make_unique<Disk>();
    slot->volume = &v;
    slot->io = out.io_threads.back().get();
    slot->disk_id = disk_id;
    slot->next_segment = next_segment;
    out.slots.push_back(std::move(slot));
  }
  return out;
}

void end_streams_left_open(const std::vector<std::unique_ptr<Disk>>& slots, const std::string& conninfo) {
  std::vector<std::int64_t> disk_ids;
  for (const auto& d : slots) disk_ids.push_back(d->disk_id);
  pqxx::connection conn(conninfo);
  pqxx::work tx(conn);
  const auto restart =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  if (const int n = catalog::end_streams_after_crash(tx, disk_ids, restart); n > 0) {
    log::warn("streams left recording by an unclean stop were ended; their gaps are recorded", {{"streams", n}});
  }
  tx.commit();
}

}  // namespace vigil::server
