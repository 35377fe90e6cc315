#pragma once
// What the CLI integration tests make before they start: a real H.264 clip from ffmpeg (lavfi test
// pattern, libx264, no B-frames, a keyframe per second at 25 fps) and the simulated WD400BB's
// disk profile from `vigil profile`. Each REQUIREs success.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/vigild_process.hpp"

namespace vigil::test {

// DIR/NAME of SECONDS at SIZE (WxH), 25 fps: 25 × SECONDS packets.
std::filesystem::path make_h264_clip(const std::filesystem::path& dir, int seconds, const std::string& size = "320x240",
                                     const std::string& name = "clip.mp4");
// DIR/NAME: an H.265 clip of SECONDS at SIZE, 25 fps (libx265, a keyframe every 25 frames, no scene
// cuts, BFRAMES B-frames per mini-GOP), tagged hvc1: 25 × SECONDS packets.
std::filesystem::path make_hevc_clip(const std::filesystem::path& dir, int seconds, int bframes,
                                     const std::string& size = "320x240", const std::string& name = "hevc.mp4");
// DIR/wd.json.
std::filesystem::path make_sim_profile(const std::filesystem::path& dir);
// vigild's arguments for a file volume DIR/vol of VOLUME_MB (4 MiB extents) admitted on PROFILE,
// 200 ms cycles, the online model check off (the profile is not of this machine's disk) and,
// unless PULL_CAMERAS, no camera pulling, playbacks free to use the whole budget (--playback-share 1):
// what the media and recording tests run.
std::vector<std::string> sim_volume_args(const std::filesystem::path& dir, const std::filesystem::path& profile,
                                         int volume_mb = 128, bool pull_cameras = false);
// Waits (bounded) until the embedded catalog of vigild's data directory DATA holds FRAMES frames
// in closed segments (the last segment reaches it through the batcher, up to its 1 s delay after
// the recorder ends); REQUIREs it does. Returns the earliest closed segment's start_us.
std::int64_t wait_for_closed_frames(const std::filesystem::path& data, std::int64_t frames);

struct ProbedPacket {
  std::int64_t size = 0;
  bool key = false;
  double pts = 0;  // seconds; -1 if the container gave none
};
// ffprobe's packet list of FILE (or URL): size, key flag, pts. DIR holds ffprobe's output.
std::vector<ProbedPacket> probe_packets(const std::filesystem::path& file, const std::filesystem::path& dir);
// ffprobe's codec_name, width, height and duration of FILE, as "key=value" lines.
std::string probe_stream(const std::filesystem::path& file, const std::filesystem::path& dir);
// The number after "KEY=" in TEXT (REQUIREs it is there).
double probe_field(const std::string& text, const std::string& key);

// The media tests' starting point: in DIR, a SECONDS test clip (probed: SOURCE), a vigild on the
// simulated disk (sim_volume_args, data in DIR/data), and the clip recorded whole as camera NAME
// and closed in the catalog.
struct RecordedCamera {
  std::filesystem::path clip, data;
  std::vector<ProbedPacket> source;
  std::unique_ptr<VigildProcess> vigild;
};
RecordedCamera recorded_camera(const std::filesystem::path& dir, const std::string& name, int seconds);

}  // namespace vigil::test
