#pragma once
// A track of a camera (docs/catalog.md, "Tracks"): what one recorded stream of it carries — its
// main or its sub (low-resolution) encoding, video or audio. Recording, reconnect gaps, live feeds
// and every read path tell a camera's tracks apart by this; retention and evidence locks stay
// camera-wide. The catalog's streams.role and streams.media_kind spell the same words.
// Thread: pure code. Errors: none (parse_* answer nullopt for a word they do not know).
#include <optional>
#include <string>
#include <string_view>

namespace vigil {

enum class TrackRole { main, sub };
enum class MediaKind { video, audio };

std::string_view role_name(TrackRole role) noexcept;
std::string_view media_kind_name(MediaKind kind) noexcept;
// "main" or "sub"; empty is main (what a client that predates tracks sends).
std::optional<TrackRole> parse_role(std::string_view word) noexcept;
// "video" or "audio"; empty is video.
std::optional<MediaKind> parse_media_kind(std::string_view word) noexcept;

struct Track {
  std::string camera;
  TrackRole role = TrackRole::main;
  MediaKind media_kind = MediaKind::video;

  // "cam" (main video), "cam/sub", "cam/audio", "cam/sub/audio": the key of live feeds and logs.
  std::string label() const;
  // "main video", "sub video", "main audio", "sub audio": what messages call it.
  std::string kind_words() const;
  // "camera 'cam'" for the main video, else e.g. "the sub video of camera 'cam'".
  std::string described() const;
  bool operator==(const Track&) const = default;
};

// LABEL as Track::label() writes it; nullopt if it is not one (the camera part is not checked
// here beyond being non-empty and free of '/').
std::optional<Track> parse_track_label(std::string_view label);

}  // namespace vigil
