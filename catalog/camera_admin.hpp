#pragma once
// Camera administration rows for the HTTP API (docs/openapi.yaml, /api/v1/cameras/...): create a
// camera without overwriting one (409 territory), read one with its settings, change its
// settings (enabled, URLs, retention_days of schema 0003, retention_bytes of 0008), list its streams, remove it as
// `vigil camera remove` does (deleted without recordings, else disabled), and the per-stream
// retention that retention_days implies (storage::RetentionPolicy::per_stream).
// Names and URLs are checked here as by add_camera (CatalogError naming the rule).
// Thread: the catalog pool. Errors: throws (pqxx; CatalogError for bad input or a taken name).
#include <cstdint>
#include <map>
#include <optional>
#include <pqxx/transaction>
#include <string>
#include <vector>

#include "catalog/catalog_error.hpp"
#include "storage/retention.hpp"

namespace vigil::catalog {

inline constexpr int kMaxRetentionDays = 36500;
// A camera's archive_after_s (schema 0012): at most a year.
inline constexpr int kMaxArchiveAfterS = 31'536'000;
// A camera's byte quota (cameras.retention_bytes, schema 0008): from 1 MiB to 1 EiB.
inline constexpr std::int64_t kMinRetentionBytes = 1 << 20;
inline constexpr std::int64_t kMaxRetentionBytes = 1LL << 60;
// A pulled camera's declared rate (cameras.declared_rate_bps), bits per second.
inline constexpr std::int64_t kMinDeclaredRateBps = 64'000;
inline constexpr std::int64_t kMaxDeclaredRateBps = 10'000'000'000;

struct CameraDetails {
  std::int64_t id = 0;
  std::string name;
  std::optional<std::string> url, substream_url;  // raw: may carry credentials (callers redact)
  bool enabled = true;
  std::optional<int> retention_days;
  std::optional<std::int64_t> retention_bytes;    // the camera's quota (schema 0008)
  std::int64_t recorded_bytes = 0;                // what counts against it now: data_bytes of its unlocked segments
  std::optional<std::int64_t> declared_rate_bps;  // the operator's rate for a pulled camera (schema 0007)
  // Archive policy (schema 0012); none: vigild's --archive-after / --archive-retention.
  std::optional<int> archive_after_s, archive_retention_days;
  std::int64_t created_at_us = 0;
  std::string state;             // of its newest stream; "never recorded" without one
  std::int64_t streams = 0;      // how many streams it has
  std::int64_t last_end_us = 0;  // end of its newest stream (0: recording or none)
};

struct NewCamera {
  std::string name{};
  std::optional<std::string> url{}, substream_url{};  // no URL: pushed by a recording client
  bool enabled = true;
  std::optional<int> retention_days{};
  std::optional<std::int64_t> retention_bytes{};
  std::optional<std::int64_t> declared_rate_bps{};
};

// A settings change; an empty optional leaves the setting as it is.
struct CameraChange {
  std::optional<bool> enabled;
  std::optional<std::optional<std::string>> url, substream_url;  // inner nullopt: clear
  std::optional<std::optional<int>> retention_days;              // inner nullopt: clear
  std::optional<std::optional<std::int64_t>> retention_bytes;    // inner nullopt: clear
  std::optional<std::optional<std::int64_t>> declared_rate_bps;  // inner nullopt: clear
  std::optional<std::optional<int>> archive_after_s;             // inner nullopt: clear
  std::optional<std::optional<int>> archive_retention_days;      // inner nullopt: clear
};

struct StreamInfo {
  std::int64_t id = 0;
  std::optional<std::int64_t> disk_id;
  std::string role, media_kind, codec, state;
  int width = 0, height = 0;
  int sample_rate_hz = 0, channels = 0;  // audio; 0: video, or not kept
  std::int64_t declared_rate_bps = 0;
  std::optional<std::int64_t> admitted_rate_bps, measured_rate_bps;
  std::int64_t started_at_us = 0;
  std::optional<std::int64_t> ended_at_us;
  std::int64_t segments = 0, bytes = 0;
  std::optional<std::int64_t> first_us, last_us;  // recorded media time span (segments)
};

enum class Removal { none, deleted, disabled };

void check_camera_url(const std::string& url);  // the rule add_camera applies
// The new camera's id. A camera named so exists already: CatalogError of kind conflict, and
// nothing is changed.
std::int64_t create_camera(pqxx::work& tx, const NewCamera& camera);
std::optional<CameraDetails> camera_details(pqxx::work& tx, const std::string& name);
// False if there is no such camera. Throws CatalogError for a substream without a URL.
bool update_camera(pqxx::work& tx, const std::string& name, const CameraChange& change);
// The camera's streams, newest first, at most LIMIT. Nullopt when there is no such camera.
std::optional<std::vector<StreamInfo>> camera_streams(pqxx::work& tx, const std::string& name, std::size_t limit);
Removal remove_or_disable_camera(pqxx::work& tx, const std::string& name);
// max_age_us of every stream whose camera has retention_days set.
std::map<std::uint64_t, storage::StreamRetention> camera_retention(pqxx::work& tx);

}  // namespace vigil::catalog
