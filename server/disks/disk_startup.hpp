#pragma once
// From recovered volumes to running disks: each volume's device handed to its IO thread, which
// schedules with the disk's profile (the newest in the catalog, else --profile, then stored
// there for next time), and each disk's slot in the DiskSet (catalog disk id, next segment id).
// Start-up code: throws (pqxx errors from the catalog).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "admission/profile.hpp"
#include "catalog/batcher.hpp"
#include "server/core/vigild_metrics.hpp"
#include "server/disks/disk_io.hpp"
#include "server/disks/disk_set.hpp"
#include "server/disks/volume_startup.hpp"

namespace vigil::server {

struct StartedDisks {
  std::vector<std::unique_ptr<DiskIoThread>> io_threads;  // one per volume, in configuration order
  std::vector<std::unique_ptr<Disk>> slots;               // for the DiskSet, same order
};

// VOLUMES, BATCHER and METRICS must outlive the IO threads. A volume failing at runtime is marked
// 'failed' in the catalog through BATCHER and shown by vigil_volume_unavailable.
StartedDisks start_disks(std::vector<OpenVolume>& volumes, const std::string& conninfo, catalog::Batcher& batcher,
                         const DiskIoConfig& config, const std::optional<admission::DiskProfile>& given,
                         Metrics& metrics);

// Streams a previous run left recording (it was killed) are ended now; the hole is a gap.
void end_streams_left_open(const std::vector<std::unique_ptr<Disk>>& slots, const std::string& conninfo);

}  // namespace vigil::server
