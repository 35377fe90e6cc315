#include "server/media/hls_live.hpp"

#include <atomic>
#include <cmath>

#include "server/media/hls_text.hpp"
#include "server/core/live_feed.hpp"

namespace vigil::server {

HlsLiveChannel::HlsLiveChannel(const std::shared_ptr<LiveFeed>& feed) : last_used_(std::chrono::steady_clock::now()) {
  // Wall-clock microseconds at opening, made unique within the process.
  static std::atomic<std::uint64_t> last{0};
  std::uint64_t now = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  std::uint64_t prev = last.load();
  do {
    epoch_ = std::max(now, prev + 1);
  } while (!last.compare_exchange_weak(prev, epoch_));
  // The feed itself is not kept: it ends with its recording, the tap outlives it.
  const auto& c = feed->codec();
  codec_ = {.codec_name = c.codec_name(),
            .width = c.width(),
            .height = c.height(),
            .bit_rate = c.bit_rate(),
            .extradata = c.extradata()};
  const auto bound = static_cast<std::size_t>(feed->rate().bytes_over(kLiveTapSeconds)) + (1u << 20);
  tap_ = feed->subscribe(bound, [] {});  // pulled by requests: nothing to wake
  if (!tap_) ended_ = true;
  // The init segment depends on the codec alone; its timeline origin is irrelevant to it.
  auto w = media::MediaWriter::fragmented(codec_, 0);
  init_ = std::make_shared<const media::Bytes>(w.take_output());
}

void HlsLiveChannel::close_segment(std::int64_t end_us) {
  writer_->flush_fragment();
  auto bytes = std::make_shared<const media::Bytes>(writer_->take_output());
  writer_.reset();
  window_.push_back({next_sequence_++, open_from_us_, std::max(end_us, open_from_us_ + 1), std::move(bytes)});
  while (window_.size() > kLiveWindow) window_.pop_front();
}

bool HlsLiveChannel::pump() {
  std::lock_guard lock(mu_);
  last_used_ = std::chrono::steady_clock::now();
  while (tap_) {
    auto f = tap_->pop();
    if (!f) break;
    const auto& h = f->header;
    const std::int64_t pts = h.pts != storage::kNoTimestamp ? h.pts : last_pts_us_;
    const std::int64_t dts = h.dts != storage::kNoTimestamp ? h.dts : pts;
    if (!origin_us_) {
      if (!h.keyframe()) continue;  // a segment starts at a keyframe
      origin_us_ = dts;
    }
    // A keyframe after the target duration closes the segment (segments are whole GOPs).
    if (writer_ && h.keyframe() && pts - open_from_us_ >= kLiveTargetUs) close_segment(pts);
    if (!writer_) {
      if (!h.keyframe()) continue;  // after a drop: wait for the next keyframe
      writer_.emplace(media::MediaWriter::fragmented(codec_, *origin_us_));
      (void)writer_->take_output();  // its init segment: served once, by init_segment()
      open_from_us_ = pts;
    }
    writer_->write(
        {.pts_us = pts, .dts_us = dts, .duration_us = h.duration, .keyframe = h.keyframe(), .payload = f->payload});
    last_pts_us_ = pts;
  }
  if (tap_ && tap_->ended() && !ended_) {
    if (writer_ && writer_->frames() > 0) close_segment(last_pts_us_ + 40'000);
    ended_ = true;
  }
  return !window_.empty() || ended_;
}

std::string HlsLiveChannel::playlist(const std::string& token_param) {
  std::lock_guard lock(mu_);
  std::int64_t longest = kLiveTargetUs;
  for (const auto& s : window_) longest = std::max(longest, s.to_us - s.from_us);
  std::string m3u8 =
      "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:" +
      std::to_string(static_cast<std::int64_t>(std::ceil(static_cast<double>(longest) / 1e6))) +
      "\n#EXT-X-MEDIA-SEQUENCE:" + std::to_string(window_.empty() ? next_sequence_ : window_.front().sequence) +
      "\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-MAP:URI=\"live/init.mp4?c=" + std::to_string(epoch_) + token_param +
      "\"\n";
  for (const auto& s : window_) {
    m3u8 += "#EXT-X-PROGRAM-DATE-TIME:" + hls_date_time(s.from_us) + "\n#EXTINF:" + hls_seconds(s.to_us - s.from_us) +
            ",\nlive/seg.m4s?c=" + std::to_string(epoch_) + "&n=" + std::to_string(s.sequence) + token_param + "\n";
  }
  if (ended_) m3u8 += "#EXT-X-ENDLIST\n";
  return m3u8;
}

std::shared_ptr<const media::Bytes> HlsLiveChannel::segment(std::uint64_t sequence) {
  std::lock_guard lock(mu_);
  for (const auto& s : window_) {
    if (s.sequence == sequence) return s.bytes;
  }
  return nullptr;
}

bool HlsLiveChannel::ended() {
  std::lock_guard lock(mu_);
  return ended_;
}

std::chrono::steady_clock::time_point HlsLiveChannel::last_used() const {
  std::lock_guard lock(mu_);
  return last_used_;
}

std::shared_ptr<HlsLiveChannel> HlsLive::channel(const Track& track) {
  const std::string key = track.label();
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  // Channels nobody asked for lately are closed (their tap with them).
  std::erase_if(channels_, [&](const auto& kv) { return now - kv.second->last_used() > kLiveIdle; });
  auto it = channels_.find(key);
  // A channel whose recording ended is kept (its playlist says ENDLIST) until a new recording
  // of the camera starts.
  auto feed = feeds_.find(track);
  if (it != channels_.end() && !(it->second->ended() && feed)) return it->second;
  if (!feed) {
    if (it != channels_.end()) return it->second;
    return nullptr;
  }
  auto ch = std::make_shared<HlsLiveChannel>(feed);
  channels_[key] = ch;
  return ch;
}

}  // namespace vigil::server
