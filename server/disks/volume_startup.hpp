#pragma once
// Bringing vigild's volumes up at start: open (or create and format) each volume, register it
// in the catalog, and recover it — the segments the catalog cannot vouch for (open at a crash,
// damaged, unknown) scanned from the volume itself, closed ones trusted from their extent headers
// and catalog rows (fast restart), and the catalog reconciled with what was found
// (catalog/recovery_plan.hpp; streams the catalog lacks, as on an empty catalog, rebuilt from
// the segment headers: catalog/stream_rebuild.hpp) — before anything is served. A volume that cannot be brought up (missing, not a Vigil volume, failing) does not stop
// vigild: it is reported, marked failed in the catalog, and vigild runs on the others.
// Start-up code: catalog errors throw (vigild cannot start without its catalog); a volume's own
// failure is a value (UnavailableVolume).
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/faulty_device.hpp"
#include "storage/file_device.hpp"
#include "storage/guarded_device.hpp"
#include "storage/volume.hpp"

namespace vigil::server {

struct VolumeConfig {
  std::filesystem::path path;
  std::uint64_t create_bytes = 0;  // create a file volume of this size if it does not exist
  std::uint64_t extent_bytes = 64ull << 20;
  std::uint32_t fail_after = storage::GuardedDevice::kDefaultFailAfter;  // --volume-fail-after
  std::optional<storage::FaultPlan> fault_plan;  // tests only (--fault-plan): armed once the volume is up
};

struct OpenVolume {
  std::filesystem::path path;
  std::int64_t volume_id = 0;  // catalog id
  // The file or block device, under a fault plan in tests, under the retry-and-count guard that
  // takes a failing volume out of service (storage/guarded_device.hpp).
  std::unique_ptr<storage::GuardedDevice> device;
  storage::FaultyDevice* faults = nullptr;  // inside DEVICE, with --fault-plan
  std::unique_ptr<storage::Volume> volume;
};

struct UnavailableVolume {
  std::filesystem::path path;
  std::string reason;  // one line, for the log, /healthz and the operator
};

struct VolumesUp {
  std::vector<OpenVolume> open;
  std::vector<UnavailableVolume> unavailable;
};

// Opens every configured volume and recovers it against the catalog at CONNINFO.
VolumesUp bring_up_volumes(const std::vector<VolumeConfig>& configs, const std::string& conninfo,
                           const std::string& node);

}  // namespace vigil::server
