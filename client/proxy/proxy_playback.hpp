#pragma once
// One upstream playback that many viewers share: an OpenPlayback on a vigild node (wire
// protocol), its packets kept in a PlaybackBuffer (client/proxy/proxy_buffer.hpp: which segments it
// covers, what it drops, when to pause) that viewers' HLS segment requests are cut from. The
// buffer masks upstream and network jitter: vigild sends at RATE times real time until the
// playback is READ_AHEAD ahead of the furthest segment any viewer asked for, then it is paused
// (Control PAUSE) and resumed when a viewer needs more. A viewer more than KEEP_BEHIND behind the
// furthest one is not allowed to rewind or stall it; PlaybackHub serves it keyframes only.
// Memory: about (READ_AHEAD + KEEP_BEHIND) × the recording's rate, never much above MAX_BYTES.
// Thread: the proxy's io_context thread; no locking. Errors: none thrown; a refusal (admission),
// a token refused, an unreachable or lost node become the ProxyReply every waiting viewer gets.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "client/proxy/proxy_buffer.hpp"
#include "client/proxy/proxy_reply.hpp"
#include "client/proxy/proxy_upstream.hpp"
#include "client/proxy/proxy_wire.hpp"
#include "common/media_writer.hpp"

namespace vigil::client {

struct PlaybackLimits : BufferLimits {
  double rate = 4.0;                         // upstream speed while filling the buffer
  std::int64_t span_us = 10 * 60'000'000ll;  // each playback's range: [start, start + span)
  std::chrono::milliseconds open_timeout{30'000};
};

struct PlaybackParams {
  UpstreamNode node;
  std::string camera, token;
  std::int64_t start_us = 0, end_us = 0;
  bool keyframes_only = false;
};

class UpstreamPlayback : public std::enable_shared_from_this<UpstreamPlayback> {
 public:
  UpstreamPlayback(const boost::asio::any_io_executor& ex, PlaybackParams params, PlaybackLimits limits);
  void start();  // connects and opens the playback in the background
  void close();  // ends the upstream playback (the connection closes); waiters get a 502

  const PlaybackParams& params() const { return params_; }
  bool failed() const { return failure_.has_value(); }
  bool ended() const { return buffer_.ended(); }
  // The viewer can be served from here now or soon: [T0, T1) is in the range, not dropped yet,
  // and within READ_AHEAD of what has arrived.
  bool covers(std::int64_t t0, std::int64_t t1) const;
  // [T0, T1) was in this playback's range but its GOPs were dropped already: that viewer lags.
  bool passed(std::int64_t t0, std::int64_t t1) const;
  // Waits until every packet of [T0, T1) is here (or the playback ended, failed, or DEADLINE
  // passed). nullopt: ready, cut it with segment(); else the viewer's error reply.
  boost::asio::awaitable<std::optional<ProxyReply>> wait_for(std::int64_t t0, std::int64_t t1,
                                                             std::chrono::steady_clock::time_point deadline);
  // Waits until vigild said PlaybackStarted (the codec is known). nullopt: ready.
  boost::asio::awaitable<std::optional<ProxyReply>> wait_started(std::chrono::steady_clock::time_point deadline);
  // The fMP4 media segment of the GOPs starting in [T0, T1), on the decode timeline from ORIGIN
  // (as vigild's hls/seg.m4s). Empty when nothing is there. Call right after wait_for.
  media::Bytes segment(std::int64_t t0, std::int64_t t1, std::int64_t origin) const;
  // The init segment (ftyp + moov) for the codec vigild announced.
  media::Bytes init_segment(std::int64_t origin) const;

  std::size_t buffered_bytes() const { return buffer_.bytes(); }
  std::size_t waiters() const { return waiters_.size(); }
  std::chrono::steady_clock::time_point last_used() const { return last_used_; }

 private:
  static boost::asio::awaitable<void> run(std::shared_ptr<UpstreamPlayback> self);
  void on_packet(const proto::MediaPacket& m, std::span<const std::byte> payload);
  void fail(ProxyReply reply);
  boost::asio::awaitable<std::optional<ProxyReply>> wait_until(const std::function<bool()>& ready,
                                                               std::chrono::steady_clock::time_point deadline);
  void wake();
  void steer();  // pause or resume the upstream

  boost::asio::any_io_executor ex_;
  PlaybackParams params_;
  PlaybackLimits limits_;
  std::shared_ptr<WireConnection> conn_;
  bool started_ = false, closed_ = false, paused_ = false;
  std::optional<ProxyReply> failure_;
  std::optional<media::CodecInfo> codec_;
  std::uint64_t stream_id_ = 0;
  PlaybackBuffer buffer_;
  std::int64_t last_pts_ = 0;  // for packets without a pts
  std::set<boost::asio::steady_timer*> waiters_;
  std::chrono::steady_clock::time_point last_used_;
};

}  // namespace vigil::client
