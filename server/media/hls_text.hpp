#pragma once
// Text forms HLS playlists (RFC 8216) need, shared by the VOD and live playlists: an EXTINF
// duration and an EXT-X-PROGRAM-DATE-TIME (UTC, milliseconds). Thread: any. Errors: none.
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>

namespace vigil::server {

// Microseconds as seconds with six decimals ("4.000000").
inline std::string hls_seconds(std::int64_t us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(us) / 1e6);
  return buf;
}

// Unix microseconds as ISO 8601 UTC with milliseconds ("2026-11-24T02:03:17.756Z").
inline std::string hls_date_time(std::int64_t us) {
  const std::time_t t = static_cast<std::time_t>(us / 1'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(us / 1000 % 1000));
  return buf;
}

}  // namespace vigil::server
