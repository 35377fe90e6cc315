#include "client/proxy/proxy_resource.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

namespace vigil::client {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t begin = 0;
  while (begin <= s.size()) {
    const auto end = std::min(s.find(sep, begin), s.size());
    out.push_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

// An absolute time: @UNIX_SECONDS (maybe %-encoded), ISO 8601 or plain microseconds.
bool absolute_time(std::string_view v) {
  if (v.empty()) return false;
  return v.front() == '@' || v.starts_with("%40") || (v.front() >= '0' && v.front() <= '9');
}

}  // namespace

Resource classify(std::string_view target) {
  Resource r;
  const auto q = target.find('?');
  r.path = std::string(target.substr(0, q));
  const std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  std::string kept;
  std::string_view from, to, at;
  bool has_from = false, has_to = false, has_at = false;
  if (!query.empty()) {
    for (auto param : split(query, '&')) {
      const auto eq = param.find('=');
      const auto key = param.substr(0, eq);
      const auto value = eq == std::string_view::npos ? std::string_view() : param.substr(eq + 1);
      if (key == "access_token") {
        r.access_token = std::string(value);
        continue;
      }
      if (key == "from") from = value, has_from = true;
      if (key == "to") to = value, has_to = true;
      if (key == "at") at = value, has_at = true;
      kept += kept.empty() ? "?" : "&";
      kept += param;
    }
  }
  r.target_without_token = r.path + kept;

  const auto seg = split(std::string_view(r.path).substr(r.path.empty() ? 0 : 1), '/');
  if (seg.size() < 5 || seg[0] != "api" || seg[1] != "v1" || seg[2] != "cameras" || seg[3].empty()) return r;
  r.camera = std::string(seg[3]);
  const std::string tail = seg.size() == 5   ? std::string(seg[4])
                           : seg.size() == 6 ? std::string(seg[4]) + "/" + std::string(seg[5])
                                             : "";
  const bool range_fixed = has_from && has_to && absolute_time(from) && absolute_time(to);
  if (tail == "export.mp4") r.kind = ResourceKind::export_mp4, r.fixed_times = range_fixed;
  else if (tail == "hls.m3u8") r.kind = ResourceKind::hls_playlist, r.fixed_times = range_fixed;
  else if (tail == "thumbnail.jpg") r.kind = ResourceKind::thumbnail, r.fixed_times = has_at && absolute_time(at);
  else if (tail == "hls/init.mp4") r.kind = ResourceKind::hls_init, r.fixed_times = true;
  else if (tail == "hls/seg.m4s") r.kind = ResourceKind::hls_segment, r.fixed_times = true;
  else if (tail == "live.m3u8") r.kind = ResourceKind::live_playlist;
  else if (tail == "live/init.mp4") r.kind = ResourceKind::live_init;
  else if (tail == "live/seg.m4s") r.kind = ResourceKind::live_segment;
  return r;
}

const char* kind_name(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::hls_segment: return "hls_segment";
    case ResourceKind::hls_init: return "hls_init";
    case ResourceKind::hls_playlist: return "hls_playlist";
    case ResourceKind::live_playlist: return "live_playlist";
    case ResourceKind::live_init: return "live_init";
    case ResourceKind::live_segment: return "live_segment";
    case ResourceKind::export_mp4: return "export";
    case ResourceKind::thumbnail: return "thumbnail";
    case ResourceKind::other: return "other";
  }
  return "other";
}

bool cacheable(ResourceKind kind) { return kind != ResourceKind::other; }

std::string cache_key(const Resource& r, std::string_view target) {
  if (r.kind == ResourceKind::hls_playlist || r.kind == ResourceKind::live_playlist) return std::string(target);
  return r.target_without_token;
}

std::chrono::milliseconds freshness(const Resource& r, std::string_view cache_control) {
  using namespace std::chrono_literals;
  switch (r.kind) {
    case ResourceKind::live_playlist: return 1s;
    case ResourceKind::hls_playlist:
    case ResourceKind::live_init:
    case ResourceKind::live_segment: return 2s;
    case ResourceKind::other: return 0s;
    default: break;
  }
  if (!r.fixed_times) return 5s;
  std::chrono::milliseconds ttl = 60s;
  if (const auto at = cache_control.find("max-age="); at != std::string_view::npos) {
    long long s = 0;
    const auto digits = cache_control.substr(at + 8);
    if (std::from_chars(digits.data(), digits.data() + digits.size(), s).ec == std::errc()) {
      ttl = std::chrono::seconds(std::clamp(s, 0LL, 3600LL));
    }
  }
  return ttl;
}

}  // namespace vigil::client
