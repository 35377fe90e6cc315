#pragma once
// Admission state as the HTTP API reads it (docs/openapi.yaml, /api/v1/disks and
// /api/v1/admission/decisions): each disk's row with its newest profile's id and date, the
// stored profile document of a disk, and the admission_decisions audit, filtered, newest first,
// keyset-paginated by (decided_at_us, id).
// Thread: the catalog pool. Errors: throws (pqxx).
#include <cstdint>
#include <optional>
#include <pqxx/transaction>
#include <string>
#include <vector>

namespace vigil::catalog {

struct DiskRow {
  std::int64_t id = 0;
  std::string node, device_path, state;
  std::int64_t capacity_bytes = 0;
  std::optional<std::int64_t> profile_id, profile_measured_at_us;
};

std::optional<DiskRow> disk_row(pqxx::work& tx, std::int64_t disk_id);
// The newest stored profile document of DISK_ID (JSON text), with its id and date.
struct StoredProfile {
  std::int64_t id = 0, disk_id = 0, measured_at_us = 0;
  std::string json;
};
std::optional<StoredProfile> stored_profile(pqxx::work& tx, std::int64_t disk_id);

struct DecisionCursor {
  std::int64_t decided_at_us = 0, id = 0;
};

struct DecisionQuery {
  std::int64_t from_us = 0, to_us = 0;  // decided_at_us in [from_us, to_us]
  std::optional<std::int64_t> disk_id;
  std::optional<std::string> camera;   // by the decision's camera or its stream's
  std::optional<std::string> outcome;  // admitted | refused
  std::size_t limit = 100;
  std::optional<DecisionCursor> after;  // the page after this row
};

struct DecisionRow {
  std::int64_t id = 0, decided_at_us = 0;
  std::optional<std::int64_t> disk_id, stream_id;
  std::optional<std::string> camera;
  std::string policy, outcome;
  std::int64_t requested_rate_bps = 0;
  std::optional<std::int64_t> admitted_rate_bps, max_admissible_rate_bps, predicted_busy_us;
  std::int64_t cycle_us = 0;
  std::optional<std::string> reason;
  std::string details_json;
};

struct DecisionPage {
  std::vector<DecisionRow> rows;
  std::optional<DecisionCursor> next;  // set when more rows may follow
};

DecisionPage find_decisions(pqxx::work& tx, const DecisionQuery& q);

}  // namespace vigil::catalog
