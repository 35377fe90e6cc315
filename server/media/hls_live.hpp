#pragma once
// Live HLS (fMP4) at the live edge (docs/openapi.yaml, /live.m3u8): while somebody watches a
// camera that is recording, one channel per camera taps its LiveFeed (the frames the recording
// session accepts, no disk IO), cuts them into fMP4 segments at keyframes of about
// kLiveTargetUs and keeps the last kLiveWindow in memory. Every viewer of the camera shares it.
//
// Pull model, no thread of its own: each request drains what the tap holds into segments first
// (players poll the playlist about once per target duration; the tap holds kLiveTapSeconds of
// the camera's rate, so nothing is dropped between polls; a viewer gone longer than that loses
// frames up to a keyframe, counted by the tap, never slowing the recording). A channel nobody
// asked for in kLiveIdle is closed; when the recording ends the playlist gets EXT-X-ENDLIST.
// Memory per watched camera: the window (kLiveWindow × target × rate) plus the tap's bound.
// The camera's audio, where it is AAC (docs/media.md, "Audio"), is each segment's second track,
// from a tap of its own: a video frame waits (at most kLiveAudioWaitUs of video behind it) until
// the audio up to its time has come, the audio arriving over its own session a little after, so
// each segment holds the audio of its own time. Audio that starts recording after the channel
// opened (its session starts late, or restarts with another configuration) is not lost for the
// viewers already there: from the next segment on, the channel has a new init segment (a new
// generation, its EXT-X-MAP after an EXT-X-DISCONTINUITY), so every segment's init describes its
// tracks.
// Thread: any thread (one mutex per channel, one for the map); the HLS routes call pump(), the
// muxing, on the media pool (media_pool.hpp). Errors: exceptions (std::runtime_error from the
// muxer).
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/media_writer.hpp"
#include "server/core/live_feed.hpp"

namespace vigil::server {

class LiveFeeds;

inline constexpr std::int64_t kLiveTargetUs = 2'000'000;
inline constexpr std::size_t kLiveWindow = 6;
inline constexpr double kLiveTapSeconds = 10.0;
inline constexpr std::chrono::seconds kLiveIdle{30};
inline constexpr std::int64_t kLiveAudioWaitUs = 1'000'000;

class HlsLiveChannel {
 public:
  // AUDIO: the camera's audio feed, or null (then, or when it is not AAC, the video alone).
  explicit HlsLiveChannel(const std::shared_ptr<LiveFeed>& feed, const std::shared_ptr<LiveFeed>& audio = nullptr);

  // AUDIO: the camera's audio feed now (null: none). A feed other than the one tapped (none yet,
  // or one whose recording ended) is tapped, its track in the segments from the next one on.
  void attach_audio(const std::shared_ptr<LiveFeed>& audio);

  // Drains the tap into segments; true once at least one segment is complete (or it ended).
  bool pump();
  // The live playlist; TOKEN_PARAM ("&access_token=…" or "") is appended to every URI.
  std::string playlist(const std::string& token_param);
  // The init segment of GENERATION (0: the channel's first); null if there is no such.
  std::shared_ptr<const media::Bytes> init_segment(std::uint64_t generation = 0) const;
  // Names this channel in its URIs and ETags: a new recording of the camera is a new channel
  // whose segment numbers start again, so a cached segment of the old one is never taken for it.
  std::uint64_t epoch() const noexcept { return epoch_; }
  // Segment SEQUENCE if it is still in the window.
  std::shared_ptr<const media::Bytes> segment(std::uint64_t sequence);
  bool ended();
  std::chrono::steady_clock::time_point last_used() const;

 private:
  struct Segment {
    std::uint64_t sequence = 0;
    std::uint64_t generation = 0;  // its init segment
    std::int64_t from_us = 0, to_us = 0;
    std::shared_ptr<const media::Bytes> bytes;
  };
  void close_segment(std::int64_t end_us);
  void write_video(const LiveFrame& f);
  // The held audio up to UNTIL_US (inclusive) into the open segment; what is before it is dropped.
  void write_audio(std::int64_t until_us);
  // Taps AUDIO if it is AAC; the codec of its track, or nullopt (not tapped).
  std::optional<media::CodecInfo> tap_audio(const std::shared_ptr<LiveFeed>& audio);
  // A segment opens: audio tapped since the last one becomes its track (a new generation if its
  // codec differs).
  void take_new_audio();
  std::shared_ptr<const media::Bytes> make_init() const;

  std::shared_ptr<LiveTap> tap_;
  std::shared_ptr<LiveTap> audio_tap_;  // null: no audio track
  std::uint64_t epoch_ = 0;
  media::CodecInfo codec_;
  std::weak_ptr<LiveFeed> audio_feed_;                                     // the feed audio_tap_ taps
  std::optional<media::CodecInfo> audio_codec_;                            // the open segment's audio track
  std::optional<media::CodecInfo> audio_next_;                             // tapped, its track from the next segment on
  std::deque<std::shared_ptr<const LiveFrame>> video_held_, audio_held_;   // popped, not yet written
  std::int64_t audio_seen_us_ = std::numeric_limits<std::int64_t>::min();  // the latest audio pts popped
  std::int64_t video_seen_us_ = std::numeric_limits<std::int64_t>::min();  // the latest video pts popped
  std::vector<std::shared_ptr<const media::Bytes>> inits_;                 // by generation
  mutable std::mutex mu_;
  std::optional<std::int64_t> origin_us_;     // the first keyframe's dts: the timeline's zero
  std::optional<media::MediaWriter> writer_;  // the segment being cut
  std::int64_t open_from_us_ = 0, last_pts_us_ = 0;
  std::deque<Segment> window_;
  std::uint64_t next_sequence_ = 0;
  std::uint64_t discontinuity_sequence_ = 0;  // discontinuities that left the window
  bool ended_ = false;
  std::chrono::steady_clock::time_point last_used_;
};

class HlsLive {
 public:
  explicit HlsLive(LiveFeeds& feeds) : feeds_(feeds) {}
  // TRACK's channel, opened if it records now; null if it does not (and no channel is left).
  // The camera's audio (its main audio track) goes into the channel of either video track.
  std::shared_ptr<HlsLiveChannel> channel(const Track& track);

 private:
  LiveFeeds& feeds_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<HlsLiveChannel>> channels_;  // by Track::label()
};

}  // namespace vigil::server
