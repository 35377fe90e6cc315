#include "common/track.hpp"

#include <catch2/catch_test_macros.hpp>

namespace vigil {

TEST_CASE("a track's words: empty is the main video, unknown words are refused", "[track]") {
  CHECK(parse_role("") == TrackRole::main);
  CHECK(parse_role("main") == TrackRole::main);
  CHECK(parse_role("sub") == TrackRole::sub);
  CHECK_FALSE(parse_role("Sub").has_value());
  CHECK_FALSE(parse_role("third").has_value());
  CHECK(parse_media_kind("") == MediaKind::video);
  CHECK(parse_media_kind("audio") == MediaKind::audio);
  CHECK_FALSE(parse_media_kind("text").has_value());
  CHECK(role_name(TrackRole::sub) == "sub");
  CHECK(media_kind_name(MediaKind::video) == "video");
}

TEST_CASE("a track's label names the camera, then what is not the main video", "[track]") {
  CHECK(Track{.camera = "cam"}.label() == "cam");
  CHECK(Track{.camera = "cam", .role = TrackRole::sub}.label() == "cam/sub");
  CHECK(Track{.camera = "cam", .media_kind = MediaKind::audio}.label() == "cam/audio");
  CHECK(Track{.camera = "cam", .role = TrackRole::sub, .media_kind = MediaKind::audio}.label() == "cam/sub/audio");
  CHECK(Track{.camera = "cam"} != Track{.camera = "cam", .role = TrackRole::sub});
  CHECK(Track{.camera = "cam"}.described() == "camera 'cam'");
  CHECK(Track{.camera = "cam", .role = TrackRole::sub}.described() == "the sub video of camera 'cam'");
  CHECK(Track{.camera = "cam", .media_kind = MediaKind::audio}.kind_words() == "main audio");
}

TEST_CASE("a track label reads back as the track it names", "[track]") {
  for (const auto& t : {Track{.camera = "cam"}, Track{.camera = "cam", .role = TrackRole::sub},
                        Track{.camera = "cam", .media_kind = MediaKind::audio},
                        Track{.camera = "cam", .role = TrackRole::sub, .media_kind = MediaKind::audio}}) {
    CHECK(parse_track_label(t.label()) == t);
  }
  CHECK_FALSE(parse_track_label("").has_value());
  CHECK_FALSE(parse_track_label("/sub").has_value());
  CHECK_FALSE(parse_track_label("cam/").has_value());
  CHECK_FALSE(parse_track_label("cam/main").has_value());
  CHECK_FALSE(parse_track_label("cam/sub/x").has_value());
}

}  // namespace vigil
