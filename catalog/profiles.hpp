#pragma once
// Disk profiles in the catalog (disk_profiles): `vigil profile --db` stores each measured
// profile against its disk (found by node and device path, registered if new); admission reads
// the newest one per disk. Thread: catalog pool or tools. Errors: throws (pqxx).
#include <optional>
#include <pqxx/transaction>
#include <string>

#include "admission/admission.hpp"
#include "admission/profile.hpp"

namespace vigil::catalog {

// Returns the new disk_profiles id.
std::int64_t store_profile(pqxx::work& tx, const admission::DiskProfile& profile, const std::string& node);
std::int64_t store_profile_for_disk(pqxx::work& tx, const admission::DiskProfile& profile, std::int64_t disk_id);
// The disk a volume lives on.
std::int64_t disk_of_volume(pqxx::work& tx, std::int64_t volume_id);
std::optional<admission::DiskProfile> latest_profile(pqxx::work& tx, std::int64_t disk_id);

// One row of admission_decisions for DECISION about a stream on DISK_ID. Its camera is the
// stream's, else the camera named CAMERA (when it exists), else none.
std::int64_t log_decision(pqxx::work& tx, const admission::Decision& decision, std::optional<std::int64_t> disk_id,
                          std::optional<std::int64_t> stream_id, double cycle_s,
                          const std::optional<std::string>& camera = std::nullopt);

}  // namespace vigil::catalog
