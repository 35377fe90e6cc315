#pragma once
// The admin token vigild keeps in its data directory (DATA/admin.token, mode 0600) so that the
// person who started it — and the CLI run from the same place — can use it at once: written on
// first start and whenever the token in the file is no longer valid (revoked, or a new
// catalog), kept otherwise. vigild also makes a recorder token for its own camera recorders at
// every start (the previous run's is revoked), passed to them in their environment.
// Thread: start-up. Errors: throws (pqxx, std::system_error for the file).
#include <filesystem>
#include <string>

namespace vigil::server {

inline constexpr const char* kAdminTokenFile = "admin.token";
inline constexpr const char* kRecorderTokenLabel = "vigild camera recorders";  // + " on NODE" (docs/nodes.md)

// The path of the admin token file, after making sure it holds a valid admin token.
std::filesystem::path ensure_admin_token(const std::string& conninfo, const std::filesystem::path& data_dir);
// A fresh recorder token for this run's camera recorders on NODE. Revokes only this node's earlier
// ones (and those from before nodes had names): other nodes' recorders on a shared catalog keep theirs.
std::string make_recorder_token(const std::string& conninfo, const std::string& node);

}  // namespace vigil::server
