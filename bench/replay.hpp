#pragma once
// What the benches that record into a vigild share (`vigil bench ingest`, `vigil bench export`):
// a pre-encoded H.264 clip held in memory, replayed as one camera through the wire protocol
// (open-record, bursts of 100 ms of media paced at SPEED x real time, what vigild polices sent
// again as `vigil record` does, half-close), the profile of the disk a bench directory lives on,
// and counting vigild's log lines.
// Thread: replay() runs on its caller's thread (one per camera). Errors: exceptions (tool
// layer); replay() returns its error in the result instead.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/rate.hpp"

namespace vigil::bench {

struct ReplayPacket {
  std::int64_t pts = 0, dts = 0, duration = 0;
  bool key = false;
  std::vector<std::byte> data;
};

// 25 fps, a keyframe every 25 packets, no B-frames.
struct ReplayClip {
  std::vector<ReplayPacket> packets;
  int tb_num = 1, tb_den = 1;
  int width = 0, height = 0;
  std::string extradata;  // SPS/PPS (avcC), as FFmpeg's extradata: what a muxer or decoder needs
  double seconds = 0, bytes = 0;
  double rate_bps() const { return seconds > 0 ? Rate::from_bytes_over(bytes, seconds).bps() : 0; }
};

// An H.264 test clip of 10 s at RATE bits/s (SIZE: WxH), encoded by the ffmpeg tool into DIR,
// demuxed into memory.
ReplayClip make_replay_clip(const std::filesystem::path& dir, double rate_bps, const std::string& size = "1280x720");

struct ReplayOptions {
  double declared_bps = 0;  // the rate asked of admission
  double seconds = 0;       // of media (the clip loops, timestamps keep increasing)
  double speed = 1;         // media seconds per wall second
  std::stop_token stop{};   // ends the replay early (it still half-closes and takes the acks)
  // Called once the open is answered (admitted or not), before any media is sent.
  std::function<void(bool admitted)> on_open{};
  // Wall-clock microseconds of the first packet (open-record's first_wall_us): packet I is then
  // at FIRST_WALL_US + I x 40 ms in vigild's timeline. 0: when it arrives.
  std::int64_t first_wall_us = 0;
  // Called on the replay's thread as soon as a durable acknowledgement arrives, with how many
  // distinct packets are durable now (packets 0 .. ACKED_TOTAL-1) and when the newest of them was
  // first written to the socket. A burst sends up to 80 ms of media ahead of its nominal capture
  // time, so a delay measured from FIRST_WALL_US + I x 40 ms can be negative; from NEWEST_SENT it
  // cannot. Set, the replay waits for its next burst on the socket instead of sleeping, so an
  // acknowledgement is seen when it arrives.
  std::function<void(std::uint64_t acked_total, std::chrono::steady_clock::time_point newest_sent)> on_ack{};
};

struct ReplayResult {
  std::uint64_t sent = 0, acked = 0, buffer_bytes = 0;  // sent: distinct packets, resent ones once
  std::uint64_t refused = 0;           // packets vigild policed (rate_exceeded) and the replay sent again
  std::uint64_t largest_rate_bps = 0;  // from a refusal: what would have been admitted
  bool admitted = false;
  std::string error;
  bool complete() const { return admitted && sent > 0 && acked == sent; }
};

// One camera NAME on vigild's wire address WIRE: open-record, replay CLIP as OPTIONS say,
// end with a half-close and read the acknowledgements until vigild closes.
ReplayResult replay(const std::string& wire, const std::string& name, const ReplayClip& clip,
                    const ReplayOptions& options);

// Writes the quick profile (`vigil profile --quick`) of the device DIR is on to DIR/profile.json,
// measured on a scratch file there that is removed afterwards; returns its path.
std::filesystem::path profile_disk_of(const std::filesystem::path& dir);

// The profile admission and the slack test use: GIVEN if not empty (a profile of this disk made
// before), else DISK's — "this" (this machine's disk, profile_disk_of(DIR)) or "sim:PRESET" (a
// simulated disk's, by `vigil profile PRESET --quick`) — written into DIR.
std::filesystem::path profile_for(const std::string& disk, const std::filesystem::path& given,
                                  const std::filesystem::path& dir);

// Lines of LOG that contain NEEDLE.
std::size_t count_lines(const std::filesystem::path& log, const std::string& needle);
// The value of FIELD (FIELD=VALUE, unquoted) in the last line of LOG that contains NEEDLE; "" if none.
std::string last_field(const std::filesystem::path& log, const std::string& needle, const std::string& field);

}  // namespace vigil::bench
