#pragma once
// How the catalog commands (`vigil camera`, `vigil token`) reach vigild's catalog: --db URL (an
// external PostgreSQL, as given to vigild) or the embedded cluster of vigild's data directory
// (--data DIR, default ./data), whose socket is DIR/pg/run. Errors: exceptions (pqxx).
#include <cstdint>
#include <memory>
#include <pqxx/connection>
#include <string>

namespace vigil::client {

// The connection string for DB if given, else for the embedded catalog under DATA.
std::string catalog_conninfo(const std::string& data, const std::string& db);
// A UTC time as 2026-11-24T02:03:17Z.
std::string utc_time(std::int64_t us);

}  // namespace vigil::client
