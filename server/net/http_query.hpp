#pragma once
// Query-string parameters of an HTTP request, percent-decoded by Boost.URL, with the checks
// every route needs: times (common/time_arg forms), positive numbers, camera names. A bad value
// throws BadRequest naming the parameter, which the routes answer with 400.
// Thread: any. Errors: exceptions (BadRequest).
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/track.hpp"
#include "server/net/api_error.hpp"

namespace vigil::server {

class QueryParams {
 public:
  // TARGET is the request target ("/path?query"); throws BadRequest if it does not parse.
  explicit QueryParams(std::string_view target);

  const std::string& path() const noexcept { return path_; }
  // The path's segments, decoded ("/api/v1/cameras/x" -> api, v1, cameras, x).
  const std::vector<std::string>& segments() const noexcept { return segments_; }
  std::optional<std::string> get(std::string_view key) const;
  std::vector<std::string> all(std::string_view key) const;  // every value of a repeated key
  // Every (key, value) pair, in order.
  const std::vector<std::pair<std::string, std::string>>& params() const noexcept { return params_; }

  std::int64_t time(std::string_view key, std::int64_t now_us) const;  // required
  std::optional<double> number(std::string_view key, double min, double max) const;
  // camera=a&camera=b or cameras=a,b; each name checked.
  std::vector<std::string> cameras() const;
  // CAMERA's video track that stream=main|sub names (absent: main); another value is a 400.
  Track video_track(const std::string& camera) const;

 private:
  std::string path_;
  std::vector<std::string> segments_;
  std::vector<std::pair<std::string, std::string>> params_;
};

}  // namespace vigil::server
