#pragma once
// A camera's audio, recorded beside its video as its own stream (docs/media.md, "Audio"): the
// packets of the input's audio stream, handed over by the demuxer that reads them with the video
// (InputDemuxer reads one input for both) to the audio's own RecorderSession. Packets are never
// decoded or transcoded; every one is a keyframe (any audio packet starts a decodable run).
// A file's audio waits for room (the demuxer's thread waits, as a file's reader does: nothing is
// lost); a live camera's is never waited for: what does not fit is dropped and the next packet
// says how many went (frames_lost_before, a source_loss gap).
// Thread: push() and end() on the demuxer's thread; next() on the audio session's reader thread;
// interrupt() and the rest from any thread. Errors: none thrown after construction.
extern "C" {
#include <libavcodec/codec_par.h>
#include <libavutil/rational.h>
}
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "client/cli/packet_source.hpp"
#include "proto/vigil.pb.h"

namespace vigil::client {

// What is held for the audio session at most: seconds of audio at any codec's rate, far more
// than a session's start-up takes (admission, the first packet).
inline constexpr std::size_t kAudioQueueBytes = std::size_t{2} << 20;

// Whether vigild records CODEC (FFmpeg's name) as a camera's audio (common/media_limits.hpp).
bool recordable_audio_codec(std::string_view codec);

class AudioTrack final : public PacketSource {
 public:
  // PAR: the audio stream's codec parameters (copied); TIME_BASE: its packets'.
  AudioTrack(const AVCodecParameters& par, AVRational time_base, bool live);
  ~AudioTrack() override;
  AudioTrack(const AudioTrack&) = delete;
  AudioTrack& operator=(const AudioTrack&) = delete;

  // The demuxer's side: a packet of the audio stream (marked a keyframe here), and the input's end.
  void push(PacketPtr p);
  void end();

  // The session's side.
  PacketPtr next() override;
  void interrupt() override;  // the session is over: later packets are not kept
  bool live() const override { return live_; }
  std::size_t ahead_bytes() const override;
  double time_base_s() const override { return av_q2d(time_base_); }
  std::optional<std::int64_t> first_pts() const override;
  // Waits for the first packet; false when the input ended (or the track closed) before one.
  bool wait_first_packet();
  // The wall clock (us) when the first packet arrived; nullopt before it.
  std::optional<std::int64_t> first_arrival_wall_us() const;

  // CodecParameters of open-record: codec, time base, sample rate, channels, extradata.
  void describe(proto::CodecParameters& codec) const;
  std::string codec_name() const;
  // The rate to declare for it (rate_policy.hpp, declared_audio_rate).
  double declared_rate_bps() const;

 private:
  AVCodecParameters* par_ = nullptr;
  const AVRational time_base_;
  const bool live_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::deque<PacketPtr> queue_;                   // guarded by mu_
  std::size_t queued_bytes_ = 0;                  // guarded by mu_
  bool ended_ = false, closed_ = false;           // guarded by mu_
  std::uint64_t dropped_ = 0;                     // guarded by mu_: since the last packet kept
  std::optional<std::int64_t> first_pts_;         // guarded by mu_
  std::optional<std::int64_t> first_arrival_us_;  // guarded by mu_
  bool any_ = false;                              // guarded by mu_
};

}  // namespace vigil::client
