#include "server/media/hls_live.hpp"

#include <atomic>
#include <cmath>

#include "server/media/hls_text.hpp"
#include "server/media/mp4_export.hpp"
#include "server/core/live_feed.hpp"

namespace vigil::server {

HlsLiveChannel::HlsLiveChannel(const std::shared_ptr<LiveFeed>& feed, const std::shared_ptr<LiveFeed>& audio)
    : last_used_(std::chrono::steady_clock::now()) {
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
  if (tap_) audio_codec_ = tap_audio(audio);
  inits_.push_back(make_init());
}

std::optional<media::CodecInfo> HlsLiveChannel::tap_audio(const std::shared_ptr<LiveFeed>& audio) {
  if (!audio || !hls_takes_audio(audio->codec().codec_name())) return std::nullopt;
  auto tap = audio->subscribe(
      static_cast<std::size_t>(audio->rate().bytes_over(kLiveTapSeconds)) + (64u << 10), [] {},
      /*at_keyframe=*/false);
  if (!tap) return std::nullopt;
  audio_tap_ = std::move(tap);
  audio_feed_ = audio;
  const auto& a = audio->codec();
  return media::CodecInfo{.codec_name = a.codec_name(),
                          .bit_rate = a.bit_rate(),
                          .extradata = a.extradata(),
                          .sample_rate = a.sample_rate(),
                          .channels = a.channels()};
}

std::shared_ptr<const media::Bytes> HlsLiveChannel::make_init() const {
  // The init segment depends on the codecs alone; its timeline origin is irrelevant to it.
  auto w = media::MediaWriter::fragmented(codec_, 0, audio_codec_ ? &*audio_codec_ : nullptr);
  return std::make_shared<const media::Bytes>(w.take_output());
}

void HlsLiveChannel::attach_audio(const std::shared_ptr<LiveFeed>& audio) {
  std::lock_guard lock(mu_);
  if (!audio || ended_ || !tap_) return;
  if (audio_tap_ && !audio_tap_->ended()) return;  // the feed tapped still records
  if (audio_feed_.lock() == audio) return;         // tapped already (it ends; no other yet)
  audio_next_ = tap_audio(audio);
}

void HlsLiveChannel::take_new_audio() {
  if (!audio_next_) return;
  const bool same = audio_codec_ && audio_codec_->codec_name == audio_next_->codec_name &&
                    audio_codec_->extradata == audio_next_->extradata &&
                    audio_codec_->sample_rate == audio_next_->sample_rate &&
                    audio_codec_->channels == audio_next_->channels;
  audio_codec_ = std::move(audio_next_);
  audio_next_.reset();
  if (!same) inits_.push_back(make_init());
}

std::shared_ptr<const media::Bytes> HlsLiveChannel::init_segment(std::uint64_t generation) const {
  std::lock_guard lock(mu_);
  return generation < inits_.size() ? inits_[generation] : nullptr;
}

void HlsLiveChannel::write_audio(std::int64_t until_us) {
  while (!audio_held_.empty() && audio_held_.front()->header.pts <= until_us) {
    const auto a = audio_held_.front();
    audio_held_.pop_front();
    // Before the open segment's start (or with none open: before the next keyframe) it is lost.
    if (!writer_ || a->header.pts < open_from_us_) continue;
    writer_->write({.pts_us = a->header.pts,
                    .dts_us = a->header.pts,
                    .duration_us = a->header.duration,
                    .keyframe = true,
                    .payload = a->payload,
                    .audio = true});
  }
}

void HlsLiveChannel::close_segment(std::int64_t end_us) {
  // This segment's audio: [its start, END_US); audio tapped since it opened waits for the next.
  if (audio_codec_ && !audio_next_) write_audio(end_us - 1);
  writer_->flush_fragment();
  auto bytes = std::make_shared<const media::Bytes>(writer_->take_output());
  writer_.reset();
  window_.push_back({.sequence = next_sequence_++,
                     .generation = inits_.size() - 1,
                     .from_us = open_from_us_,
                     .to_us = std::max(end_us, open_from_us_ + 1),
                     .bytes = std::move(bytes)});
  while (window_.size() > kLiveWindow) {
    const auto gone = window_.front().generation;
    window_.pop_front();
    if (window_.front().generation != gone) ++discontinuity_sequence_;  // its discontinuity left too
  }
}

void HlsLiveChannel::write_video(const LiveFrame& f) {
  const auto& h = f.header;
  const std::int64_t pts = h.pts != storage::kNoTimestamp ? h.pts : last_pts_us_;
  const std::int64_t dts = h.dts != storage::kNoTimestamp ? h.dts : pts;
  if (!origin_us_) {
    if (!h.keyframe()) return;  // a segment starts at a keyframe
    origin_us_ = dts;
  }
  // A keyframe after the target duration closes the segment (segments are whole GOPs).
  if (writer_ && h.keyframe() && pts - open_from_us_ >= kLiveTargetUs) close_segment(pts);
  if (!writer_) {
    if (!h.keyframe()) return;  // after a drop: wait for the next keyframe
    take_new_audio();
    writer_.emplace(media::MediaWriter::fragmented(codec_, *origin_us_, audio_codec_ ? &*audio_codec_ : nullptr));
    (void)writer_->take_output();  // its init segment: served once, by init_segment()
    open_from_us_ = pts;
  }
  if (audio_codec_ && !audio_next_) write_audio(dts);  // interleaved by time
  writer_->write(
      {.pts_us = pts, .dts_us = dts, .duration_us = h.duration, .keyframe = h.keyframe(), .payload = f.payload});
  last_pts_us_ = pts;
}

bool HlsLiveChannel::pump() {
  std::lock_guard lock(mu_);
  last_used_ = std::chrono::steady_clock::now();
  while (audio_tap_) {
    auto a = audio_tap_->pop();
    if (!a) break;
    audio_seen_us_ = std::max(audio_seen_us_, a->header.pts);
    audio_held_.push_back(std::move(a));
  }
  const bool audio_done = !audio_tap_ || audio_tap_->ended();
  while (tap_) {
    auto f = tap_->pop();
    if (!f) break;
    video_seen_us_ = std::max(video_seen_us_, f->header.pts);
    video_held_.push_back(std::move(f));
  }
  const bool video_done = !tap_ || tap_->ended();
  // A video frame is written once the audio up to its time has come (or a second of video waits
  // behind it, or either recording ended): the audio comes over its own session, a little later.
  const auto time_of = [](const LiveFrame& f) {
    return f.header.dts != storage::kNoTimestamp ? f.header.dts : f.header.pts;
  };
  while (!video_held_.empty()) {
    const auto& f = *video_held_.front();
    const std::int64_t t = time_of(f);
    const bool waited_enough = time_of(*video_held_.back()) - t >= kLiveAudioWaitUs;
    if (audio_tap_ && !audio_done && !video_done && t != storage::kNoTimestamp && audio_seen_us_ < t &&
        !waited_enough) {
      break;
    }
    write_video(f);
    video_held_.pop_front();
  }
  // Audio with no open segment to go into, before the video still held (the next segment starts
  // at one of its keyframes), is not kept.
  if (!writer_ && !audio_held_.empty()) {
    write_audio(video_held_.empty() ? video_seen_us_ : time_of(*video_held_.front()) - 1);
  }
  if (tap_ && tap_->ended() && video_held_.empty() && !ended_) {
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
      "\n#EXT-X-MEDIA-SEQUENCE:" + std::to_string(window_.empty() ? next_sequence_ : window_.front().sequence) + "\n";
  if (discontinuity_sequence_ > 0) {
    m3u8 += "#EXT-X-DISCONTINUITY-SEQUENCE:" + std::to_string(discontinuity_sequence_) + "\n";
  }
  m3u8 += "#EXT-X-INDEPENDENT-SEGMENTS\n";
  // Generation 0's init keeps the URI it always had; a later one names its generation.
  const auto map = [&](std::uint64_t generation) {
    return "#EXT-X-MAP:URI=\"live/init.mp4?c=" + std::to_string(epoch_) +
           (generation > 0 ? "&g=" + std::to_string(generation) : std::string()) + token_param + "\"\n";
  };
  std::optional<std::uint64_t> generation;
  if (window_.empty()) m3u8 += map(inits_.size() - 1);
  for (const auto& s : window_) {
    if (generation && *generation != s.generation) m3u8 += "#EXT-X-DISCONTINUITY\n";
    if (generation != s.generation) m3u8 += map(s.generation);
    generation = s.generation;
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
  auto audio = feeds_.find(Track{.camera = track.camera, .role = TrackRole::main, .media_kind = MediaKind::audio});
  if (it != channels_.end() && !(it->second->ended() && feed)) {
    it->second->attach_audio(audio);  // audio that started recording after the channel opened
    return it->second;
  }
  if (!feed) {
    if (it != channels_.end()) return it->second;
    return nullptr;
  }
  auto ch = std::make_shared<HlsLiveChannel>(feed, audio);
  channels_[key] = ch;
  return ch;
}

}  // namespace vigil::server
