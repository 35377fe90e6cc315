#pragma once
// Evidence locks in the catalog (schema 0002): lock a time range of a stream, unlock it, and
// load the active ones as retention's input (storage::EvidenceLock). The catalog is where
// locks live, so they survive restarts; retention reads them before choosing what to reclaim.
// Thread: the catalog pool. Errors: throws (pqxx errors; CatalogError for bad input).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/transaction>

#include "storage/retention.hpp"

namespace vigil::catalog {

struct LockRequest {
  std::int64_t stream_id = 0;
  std::int64_t start_us = 0;
  std::int64_t end_us = 0;  // exclusive
  std::string reason{};
  std::string locked_by{};
};

// Returns the new lock's id. Throws CatalogError on an empty range or reason.
std::int64_t add_evidence_lock(pqxx::work& tx, const LockRequest& request);
// True if an active lock with ID was released; false if there is none (or it was already).
bool remove_evidence_lock(pqxx::work& tx, std::int64_t id);
struct LockRow {
  std::int64_t id = 0;
  std::int64_t stream_id = 0;
  std::string camera;
  std::int64_t start_us = 0, end_us = 0;
  std::string reason, locked_by;
  std::int64_t locked_at_us = 0;
  std::optional<std::int64_t> unlocked_at_us;
};

// Locks [START_US, END_US) of every stream of CAMERA that overlaps it (the API's camera lock: one
// row per stream, since retention reclaims per stream). Returns the new ids, in stream order;
// empty when the camera has no stream in the range. Nullopt: no such camera.
std::optional<std::vector<std::int64_t>> lock_camera_range(pqxx::work& tx, const std::string& camera,
                                                           std::int64_t start_us, std::int64_t end_us,
                                                           const std::string& reason, const std::string& locked_by);
// Locks, newest first, at most LIMIT; released ones too when ALL.
std::vector<LockRow> list_evidence_locks(pqxx::work& tx, bool all, std::size_t limit);

// Active locks on the streams stored on VOLUME_ID (or on every stream when VOLUME_ID is 0).
std::vector<storage::EvidenceLock> active_evidence_locks(pqxx::work& tx, std::int64_t volume_id = 0);

}  // namespace vigil::catalog
