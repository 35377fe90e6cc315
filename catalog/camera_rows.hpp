#pragma once
// Cameras the server pulls (docs/catalog.md): `vigil camera add NAME URL` puts a camera with its
// URL into the catalog, the camera manager in vigild records every enabled camera with a URL,
// `vigil camera remove NAME` stops that (a camera with recordings stays in the catalog, disabled,
// so its recordings keep their owner; one without any is deleted).
// Thread: any thread with its own connection (the CLI, the camera manager). Errors: throws
// (pqxx; CatalogError for a bad name or URL, with the rule it broke).
#include <cstdint>
#include <optional>
#include <pqxx/transaction>
#include <string>
#include <vector>

namespace vigil::catalog {

struct CameraRow {
  std::int64_t id = 0;
  std::string name;
  std::optional<std::string> url, substream_url;  // no URL: pushed by a recording client
  std::optional<std::int64_t> declared_rate_bps;  // the operator's rate (schema 0007); none: measured
  bool enabled = true;
  std::string last_stream_state;  // of its newest stream: recording, stopped, interrupted; empty: none
  std::int64_t last_end_us = 0;   // when its newest stream ended (0: still recording or none)
};

// Adds camera NAME pulled from URL, or updates and re-enables it. Returns its id.
std::int64_t add_camera(pqxx::work& tx, const std::string& name, const std::string& url,
                        const std::optional<std::string>& substream_url = {});
std::vector<CameraRow> list_cameras(pqxx::work& tx);
// 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit (safe in URLs, file
// names and SQL literals).
bool is_valid_camera_name(const std::string& name);
// True if NAME existed. Deleted when it has no streams, else disabled.
bool remove_camera(pqxx::work& tx, const std::string& name);

}  // namespace vigil::catalog
