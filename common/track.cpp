#include "common/track.hpp"

namespace vigil {

std::string_view role_name(TrackRole role) noexcept { return role == TrackRole::sub ? "sub" : "main"; }

std::string_view media_kind_name(MediaKind kind) noexcept { return kind == MediaKind::audio ? "audio" : "video"; }

std::optional<TrackRole> parse_role(std::string_view word) noexcept {
  if (word.empty() || word == "main") return TrackRole::main;
  if (word == "sub") return TrackRole::sub;
  return std::nullopt;
}

std::optional<MediaKind> parse_media_kind(std::string_view word) noexcept {
  if (word.empty() || word == "video") return MediaKind::video;
  if (word == "audio") return MediaKind::audio;
  return std::nullopt;
}

std::string Track::label() const {
  std::string out = camera;
  if (role == TrackRole::sub) out += "/sub";
  if (media_kind == MediaKind::audio) out += "/audio";
  return out;
}

std::string Track::kind_words() const {
  return std::string(role_name(role)) + " " + std::string(media_kind_name(media_kind));
}

std::string Track::described() const {
  const std::string cam = "camera '" + camera + "'";
  if (role == TrackRole::main && media_kind == MediaKind::video) return cam;
  return "the " + kind_words() + " of " + cam;
}

std::optional<Track> parse_track_label(std::string_view label) {
  const auto slash = label.find('/');
  Track t{.camera = std::string(label.substr(0, slash))};
  if (t.camera.empty()) return std::nullopt;
  if (slash == std::string_view::npos) return t;
  const auto rest = label.substr(slash + 1);
  if (rest == "sub") t.role = TrackRole::sub;
  else if (rest == "audio") t.media_kind = MediaKind::audio;
  else if (rest == "sub/audio") t = Track{.camera = t.camera, .role = TrackRole::sub, .media_kind = MediaKind::audio};
  else return std::nullopt;
  return t;
}

}  // namespace vigil
