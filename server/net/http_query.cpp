#include "server/net/http_query.hpp"

#include <boost/url/parse.hpp>
#include <cmath>

#include "common/time_arg.hpp"
#include "catalog/camera_rows.hpp"

namespace vigil::server {
namespace {
constexpr std::size_t kMaxParams = 256;
constexpr std::size_t kMaxCameras = 1000;
}  // namespace

QueryParams::QueryParams(std::string_view target) {
  auto parsed = boost::urls::parse_origin_form(target);
  if (!parsed) throw BadRequest("the request target is not a valid URL path: " + parsed.error().message());
  path_ = std::string(parsed->path());
  for (auto seg : parsed->segments()) segments_.push_back(std::string(seg));
  for (auto p : parsed->params()) {
    if (params_.size() == kMaxParams) throw BadRequest("too many query parameters (at most 256)");
    params_.emplace_back(std::string(p.key), p.has_value ? std::string(p.value) : std::string());
  }
}

std::optional<std::string> QueryParams::get(std::string_view key) const {
  for (const auto& [k, v] : params_) {
    if (k == key) return v;
  }
  return std::nullopt;
}

std::vector<std::string> QueryParams::all(std::string_view key) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : params_) {
    if (k == key) out.push_back(v);
  }
  return out;
}

std::int64_t QueryParams::time(std::string_view key, std::int64_t now_us) const {
  const auto v = get(key);
  if (!v || v->empty()) throw BadRequest("parameter '" + std::string(key) + "' is required (a time)");
  try {
    return parse_time_arg(*v, now_us);
  } catch (const std::invalid_argument& e) {
    throw BadRequest("parameter '" + std::string(key) + "': " + e.what());
  }
}

std::optional<double> QueryParams::number(std::string_view key, double min, double max) const {
  const auto v = get(key);
  if (!v) return std::nullopt;
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(*v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v->size() || !std::isfinite(x) || x < min || x > max) {
    throw BadRequest("parameter '" + std::string(key) + "' must be a number from " + std::to_string(min) + " to " +
                     std::to_string(max));
  }
  return x;
}

std::vector<std::string> QueryParams::cameras() const {
  std::vector<std::string> out = all("camera");
  for (const auto& list : all("cameras")) {
    std::size_t start = 0;
    while (start <= list.size()) {
      const auto comma = list.find(',', start);
      const auto end = comma == std::string::npos ? list.size() : comma;
      if (end > start) out.push_back(list.substr(start, end - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (out.size() > kMaxCameras) throw BadRequest("too many cameras in one query (at most 1000)");
  for (const auto& name : out) {
    if (!catalog::is_valid_camera_name(name)) {
      throw BadRequest("camera name '" + name.substr(0, 80) +
                       "' is not valid: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit");
    }
  }
  return out;
}

Track QueryParams::video_track(const std::string& camera) const {
  const auto word = get("stream");
  const auto role = parse_role(word.value_or(""));
  if (!role || (word && word->empty())) throw BadRequest("parameter 'stream' must be 'main' or 'sub'");
  return Track{.camera = camera, .role = *role, .media_kind = MediaKind::video};
}

}  // namespace vigil::server
