#include "server/app/archive_startup.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "common/log.hpp"

namespace vigil::server {

archive::Credentials archive_credentials(const std::optional<std::filesystem::path>& file, const std::string& region) {
  archive::Credentials c;
  c.region = region;
  if (file) {
    std::ifstream in(*file);
    if (!in) throw ConfigError("--archive-credentials: cannot read '" + file->string() + "'");
    std::getline(in, c.access_key);
    std::getline(in, c.secret_key);
    for (auto* s : {&c.access_key, &c.secret_key}) {
      while (!s->empty() && (s->back() == '\r' || s->back() == ' ')) s->pop_back();
    }
    if (c.access_key.empty() || c.secret_key.empty())
      throw ConfigError("--archive-credentials: '" + file->string() +
                        "' must hold the access key id on its first line and the secret key on its second");
    struct stat st {};
    if (::stat(file->c_str(), &st) == 0 && (st.st_mode & 077) != 0)
      log::warn("--archive-credentials: the file is readable by others; chmod 600 it", {{"file", file->string()}});
    return c;
  }
  const char* id = std::getenv("AWS_ACCESS_KEY_ID");
  const char* secret = std::getenv("AWS_SECRET_ACCESS_KEY");
  if (!id || !*id || !secret || !*secret)
    throw ConfigError(
        "--archive-endpoint needs credentials: --archive-credentials FILE, or AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY");
  c.access_key = id;
  c.secret_key = secret;
  return c;
}

std::unique_ptr<ArchiveService> start_archive(const ServerConfig& cfg, const std::string& conninfo,
                                              std::span<const std::unique_ptr<Disk>> disks) {
  if (!cfg.archive_endpoint) return nullptr;
  ArchiveOptions options{.endpoint = {.host = cfg.archive_endpoint->host,
                                      .port = cfg.archive_endpoint->port,
                                      .credentials = archive_credentials(cfg.archive_credentials, cfg.archive_region)},
                         .bucket = cfg.archive_bucket,
                         .after = std::chrono::milliseconds(static_cast<std::int64_t>(cfg.archive_after_s * 1000)),
                         .retention_days = cfg.archive_retention_days,
                         .day_us = cfg.retention_day_ms > 0 ? cfg.retention_day_ms * 1000 : 86'400'000'000LL,
                         .poll = std::chrono::milliseconds(cfg.archive_poll_ms)};
  log::info("archive tier on", {{"endpoint", cfg.archive_endpoint->to_string()},
                                {"bucket", cfg.archive_bucket},
                                {"after_s", cfg.archive_after_s}});
  return std::make_unique<ArchiveService>(conninfo, disks, std::move(options));
}

std::unique_ptr<ArchiveReads> start_archive_reads(const ServerConfig& cfg) {
  if (!cfg.archive_endpoint) return nullptr;
  return std::make_unique<ArchiveReads>(
      archive::S3Endpoint{.host = cfg.archive_endpoint->host,
                          .port = cfg.archive_endpoint->port,
                          .credentials = archive_credentials(cfg.archive_credentials, cfg.archive_region)});
}

}  // namespace vigil::server
