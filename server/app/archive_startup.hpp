#pragma once
// Starts the archive tier's copier from vigild's settings (docs/archive.md): the store's address,
// bucket and region, and credentials read from --archive-credentials or the environment.
// Thread: the daemon's start-up. Errors: ConfigError for settings that cannot work (no
// credentials, an unreadable file); the store being down is not an error here (the copier retries).
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "archive/sigv4.hpp"
#include "server/app/config.hpp"
#include "server/disks/archive_reads.hpp"
#include "server/disks/archive_service.hpp"

namespace vigil::server {

// The access key id and secret key: FILE's first two lines, or AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY when FILE is none.
archive::Credentials archive_credentials(const std::optional<std::filesystem::path>& file, const std::string& region);

// None when CFG names no archive endpoint.
std::unique_ptr<ArchiveService> start_archive(const ServerConfig& cfg, const std::string& conninfo,
                                              std::span<const std::unique_ptr<Disk>> disks);

// The readers of archived segments, with the copier's store and credentials; none when CFG names
// no archive endpoint.
std::unique_ptr<ArchiveReads> start_archive_reads(const ServerConfig& cfg);

}  // namespace vigil::server
