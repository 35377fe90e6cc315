#pragma once
// A pulled camera read with the buffered RTSP session (client/rtsp): its access units as packets
// for the recorder, and the codec parameters open-record needs. The first access unit is read at
// open (the picture size comes from its parameter sets, with no decoder: libavcodec's parser).
// Timestamps are the RTP clock from the first access unit. RTP carries presentation times only:
// with REORDER_DEPTH 0, dts = pts, and a stream whose frames turn out to be reordered (B-frames:
// a pts before the previous one) ends with reordered() set, before that frame is handed out,
// needed_reorder_depth() saying how deep it reorders; the recorder opens the camera's next
// connection with that depth (input_demuxer.hpp). With a depth, decode times come from
// rtsp::DecodeTimes (the first REORDER_DEPTH frames are held until their times are known). A
// larger step back (over half a second: the camera's encoder restarted) ends it as a lost input.
// With WITH_AUDIO, the camera's audio (AAC, G.711, Opus: sdp.hpp) is read in the same session;
// its frames come out of take_audio() as packets, timestamps the audio's RTP clock from its first
// frame. Its clock and the video's are unrelated (no RTCP sender reports are read): the recorder
// places each on the wall clock at its own first packet's arrival.
// Thread: one owner; INTERRUPTED from any thread. Errors: the constructor throws
// std::runtime_error (rtsp::UnsupportedStream: read it another way); next() returns null at the
// end, error() saying why.
extern "C" {
#include <libavcodec/codec_par.h>
}
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "client/cli/packet.hpp"
#include "client/rtsp/decode_times.hpp"
#include "client/rtsp/rtsp_session.hpp"

namespace vigil::client {

class RtspInput {
 public:
  RtspInput(const std::string& url, const std::atomic<bool>& stop, const std::atomic<bool>& interrupted,
            int reorder_depth = 0, bool with_audio = false);
  ~RtspInput();
  RtspInput(const RtspInput&) = delete;
  RtspInput& operator=(const RtspInput&) = delete;

  PacketPtr next();
  const AVCodecParameters& codecpar() const { return *codecpar_; }
  int clock_rate_hz() const { return session_.video().clock_rate_hz; }
  double advertised_bps() const { return static_cast<double>(session_.video().bandwidth_bps); }
  const std::string& error() const { return error_; }
  // The audio's codec parameters (null: no audio read) and RTP clock.
  const AVCodecParameters* audio_codecpar() const { return audio_codecpar_; }
  int audio_clock_rate_hz() const { return session_.audio() ? session_.audio()->clock_rate_hz : 0; }
  // Why the camera's audio is not read, as a line to say ("" when it is, or it has none).
  std::string skipped_audio() const;
  // The audio frames read so far, as packets, appended to OUT.
  void take_audio(std::vector<PacketPtr>& out);
  bool reordered() const { return reordered_; }
  int needed_reorder_depth() const { return decode_times_.needed_depth(); }

 private:
  bool fill();  // reads until an access unit is pending; false at the end
  PacketPtr to_packet(rtsp::AccessUnit& unit, std::int64_t pts);
  void hand_out(const std::vector<rtsp::TimedFrame>& timed);  // waiting_ → ready_ with their dts

  rtsp::RtspSession session_;
  AVCodecParameters* codecpar_ = nullptr;
  AVCodecParameters* audio_codecpar_ = nullptr;
  std::vector<rtsp::AudioFrame> audio_read_;
  std::optional<std::int64_t> first_audio_ts_;
  std::deque<rtsp::AccessUnit> pending_;
  std::vector<rtsp::AccessUnit> read_;
  std::optional<std::int64_t> first_ts_;
  std::int64_t max_pts_ = 0;  // the latest presentation time handed on, for the clock checks
  rtsp::DecodeTimes decode_times_;
  std::deque<PacketPtr> waiting_;  // packets whose decode times are not known yet
  std::deque<PacketPtr> ready_;
  std::vector<rtsp::TimedFrame> timed_;
  bool reordered_ = false;
  bool stopped_ = false;  // ended by its timestamps: nothing more is handed out
  std::string error_;
};

}  // namespace vigil::client
