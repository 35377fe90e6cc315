#pragma once
// What the CLI integration tests make before they start: a real H.264 clip from ffmpeg (lavfi test
// pattern, libx264, no B-frames, a keyframe per second at 25 fps) and the simulated WD400BB's
// disk profile from `vigil profile`. Each REQUIREs success.
#include <filesystem>

namespace vigil::test {

// DIR/clip.mp4 of SECONDS at 320x240, 25 fps: 25 × SECONDS packets.
std::filesystem::path make_h264_clip(const std::filesystem::path& dir, int seconds);
// DIR/wd.json.
std::filesystem::path make_sim_profile(const std::filesystem::path& dir);

}  // namespace vigil::test
