#pragma once
// The recorder's input: INPUT (a file, an rtsp:// camera, anything libavformat opens) demuxed,
// never decoded, to the packets of its best video stream, with that stream's codec parameters
// for open-record. When asked (WITH_AUDIO), its audio stream of a codec vigild records
// (audio_track.hpp) is read with it and handed to an AudioTrack, recorded as its own stream;
// audio of another codec is named in one line of LOG and left out. An rtsp:// camera with H.264
// or H.265 over TCP is read by the buffered RTSP session (rtsp_input.hpp) unless
// VIGIL_RTSP_CLIENT=libavformat is set; a camera whose frames turn out to be reordered (B-frames)
// is read from its next connection on with decode times derived at the depth it showed
// (rtsp::DecodeTimes; libavformat past 16); anything else by libavformat. The first packets are
// read ahead once, to measure the rate when none is declared (rate_policy.hpp); next() hands them
// out first.
// Thread: the recorder's (or its reader thread, live_reader.hpp); interrupt() from any thread.
// Errors: the constructor throws std::runtime_error naming the input and the reason; next()
// returns null at the end, and lost() tells a lost source from an end.
extern "C" {
#include <libavformat/avformat.h>
}
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iostream>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "client/cli/audio_track.hpp"
#include "client/cli/packet.hpp"
#include "client/cli/packet_source.hpp"
#include "client/cli/rtsp_input.hpp"
#include "proto/vigil.pb.h"

namespace vigil::client {

struct ReadAhead {
  double bytes = 0;
  double span_s = 0;  // media time from the first packet to the last one read ahead
};

class InputDemuxer final : public PacketSource {
 public:
  // Opens INPUT; STOP (set by a signal) ends reading, also while libavformat waits on a network.
  // LOG: where a lost input is reported. WITH_AUDIO: read its audio too (audio()).
  InputDemuxer(const std::string& input, const std::atomic<bool>& stop, std::ostream& log = std::cerr,
               bool with_audio = false);

  // Reads packets ahead until SPAN_S seconds of media are held (or the input ends).
  ReadAhead read_ahead(double span_s);
  // Reads packets ahead, at least one, until ENOUGH(packet) says so (or the input ends).
  void read_ahead_until(const std::function<bool(const AVPacket&)>& enough);
  // Payload bytes read ahead and not yet handed out by next().
  std::size_t ahead_bytes() const override;
  // The next video packet (read-ahead ones first); null at the end of the input.
  PacketPtr next() override;
  // From any thread: the read under way (a live camera waiting for its next packet) and every
  // later one end now, as with STOP; next() returns null (and the audio's ends).
  void interrupt() override;
  bool live() const override { return live_source_; }  // a network source: it does not wait for the recorder
  // The input's audio, read with its video (null: none, another codec, or not asked for). Its
  // packets arrive as next() reads the video; it ends with it.
  AudioTrack* audio() const { return audio_.get(); }
  // The bitrate a live input advertises (an RTSP camera's SDP b=AS), bits/s; 0: unknown or a file.
  double advertised_bps() const;

  void describe(proto::CodecParameters& codec) const;
  double time_base_s() const override;
  // The first packet's pts or dts, if it had one (the recorder's clock is pinned to it), and its pts.
  std::optional<std::int64_t> first_timestamp() const { return first_ts_; }
  std::optional<std::int64_t> first_pts() const override { return first_pts_; }
  bool lost() const { return lost_; }  // the source failed or a live one ended
  // Which reader: "rtsp" (the buffered session) or "libavformat".
  const char* reader() const { return rtsp_ ? "rtsp" : "libavformat"; }

 private:
  struct FormatCloser {
    void operator()(AVFormatContext* c) const { avformat_close_input(&c); }
  };
  PacketPtr read_packet();
  PacketPtr read_rtsp_packet();
  PacketPtr read_libav_packet();
  void open_libav_audio(int video_index);
  static int on_interrupt(void* self);

  const std::atomic<bool>& stop_;
  std::ostream& log_;
  std::atomic<bool> interrupted_{false};
  std::unique_ptr<AVFormatContext, FormatCloser> format_;
  AVStream* video_ = nullptr;                    // libavformat's reader
  std::unique_ptr<RtspInput> rtsp_;              // or the buffered RTSP session's
  const AVCodecParameters* codecpar_ = nullptr;  // either one's
  AVRational time_base_{1, 1};
  int audio_index_ = -1;  // libavformat's audio stream
  std::unique_ptr<AudioTrack> audio_;
  std::string input_;
  bool live_source_ = false, done_ = false, lost_ = false, any_read_ = false;
  std::deque<PacketPtr> ahead_;
  std::optional<std::int64_t> first_ts_, first_pts_;
};

// A packet's pts, else its dts, else nullopt.
std::optional<std::int64_t> timestamp_of(const AVPacket& p);

}  // namespace vigil::client
