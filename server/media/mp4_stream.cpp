#include "server/media/mp4_stream.hpp"

#include <algorithm>

namespace vigil::server {

Mp4Stream::Mp4Stream(DiskSet* disks, const ClipPlan& plan, std::size_t batch_bytes, MediaPool* pool,
                     const std::optional<ClipPlan>& audio)
    : pool_(pool),
      codec_(plan.codec()),
      cursor_(disks, plan, storage::PlaybackRange{.from_pts = plan.from_us, .to_pts = plan.to_us}, batch_bytes) {
  if (audio && media::container_takes_audio("mp4", audio->plan.codec)) {
    audio_codec_ = audio->codec();
    audio_cursor_.emplace(disks, *audio, storage::PlaybackRange{.from_pts = audio->from_us, .to_pts = audio->to_us},
                          batch_bytes);
    audio_from_us_ = audio->from_us;
    audio_to_us_ = audio->to_us;
  }
}

boost::asio::awaitable<void> Mp4Stream::read_audio(std::int64_t until_us) {
  const auto reached = [&] {
    if (audio_gops_.empty() || audio_gops_.back()->frames.empty()) return false;
    return audio_gops_.back()->frames.back().header.pts >= until_us;
  };
  while (audio_cursor_ && !audio_read_all_ && !reached()) {
    auto batch = co_await audio_cursor_->next();
    if (batch.empty()) audio_read_all_ = true;
    for (auto& g : batch) {
      if (!g->damaged) audio_gops_.push_back(std::move(g));
    }
  }
}

AudioClip Mp4Stream::take_audio(std::int64_t to_us) {
  AudioClip a{.codec = *audio_codec_, .clip = {}, .from_us = audio_from_us_, .to_us = to_us, .exact = true};
  for (const auto& g : audio_gops_) {
    a.clip.frames += g->frames.size();
    a.clip.gops.push_back(g);
  }
  for (const auto& g : audio_gops_) {
    for (const auto& f : g->frames) audio_frames_ += f.header.pts >= audio_from_us_ && f.header.pts < to_us ? 1 : 0;
  }
  // A GOP whose last frame is before TO_US is written whole: the next fragment needs none of it.
  std::erase_if(audio_gops_, [&](const auto& g) { return g->frames.empty() || g->frames.back().header.pts < to_us; });
  audio_from_us_ = to_us;
  return a;
}

boost::asio::awaitable<std::optional<std::vector<std::byte>>> Mp4Stream::next() {
  if (done_) co_return std::nullopt;
  for (;;) {
    auto batch = co_await cursor_.next();
    if (batch.empty()) {
      done_ = true;
      if (!writer_) co_return std::nullopt;  // nothing readable at all: the route answered before the head
      // The audio recorded after the video's last frame, up to the range's end, in a last fragment.
      std::optional<AudioClip> rest;
      if (audio_codec_ && audio_from_us_ < audio_to_us_) {
        co_await read_audio(audio_to_us_);
        rest.emplace(take_audio(audio_to_us_));
      }
      auto tail = co_await run_media(pool_, [this, &rest] {
        if (rest) {
          write_clip(*writer_, Clip{}, audio_from_us_, &*rest);
          writer_->flush_fragment();
        }
        writer_->finish();
        return writer_->take_output();
      });
      if (tail.empty()) co_return std::nullopt;
      co_return tail;
    }
    Clip clip;
    for (auto& g : batch) {
      if (g->damaged) {
        ++damaged_gops_;
        continue;
      }
      clip.frames += g->frames.size();
      clip.gops.push_back(std::move(g));
    }
    if (clip.frames == 0) continue;  // only damaged GOPs: gaps, nothing to write
    // This fragment's audio: up to its last video frame's decode time.
    std::optional<AudioClip> audio;
    if (audio_codec_) {
      std::int64_t last_dts = 0;
      for (const auto& f : clip.gops.back()->frames) {
        const auto dts = f.header.dts != storage::kNoTimestamp ? f.header.dts : f.header.pts;
        if (dts != storage::kNoTimestamp) last_dts = dts;
      }
      co_await read_audio(last_dts);
      if (!writer_) {
        // The file starts at the first audio frame of the range where that comes before the
        // video (build_mp4's rule).
        std::int64_t origin = last_dts;
        for (const auto& f : clip.gops.front()->frames) {
          const auto dts = f.header.dts != storage::kNoTimestamp ? f.header.dts : f.header.pts;
          if (dts != storage::kNoTimestamp) origin = std::min(origin, dts);
        }
        AudioClip held{.codec = *audio_codec_, .clip = {}, .from_us = audio_from_us_, .to_us = audio_to_us_};
        for (const auto& g : audio_gops_) held.clip.gops.push_back(g);
        audio_from_us_ = audio_start_us(origin, held);
      }
      audio.emplace(take_audio(last_dts + 1));
    }
    // Muxing off the network thread; this coroutine (and so the stream's state) waits for it.
    auto out = co_await run_media(pool_, [this, &clip, &audio] {
      if (!writer_) {
        // Media time from the first frame served, as build_mp4's: the first GOP's earliest dts,
        // or the audio's first frame where it comes first.
        std::optional<std::int64_t> origin;
        for (const auto& f : clip.gops.front()->frames) {
          const auto dts = f.header.dts != storage::kNoTimestamp ? f.header.dts : f.header.pts;
          if (dts != storage::kNoTimestamp) origin = origin ? std::min(*origin, dts) : dts;
        }
        last_pts_us_ = audio ? std::min(origin.value_or(0), audio->from_us) : origin.value_or(0);
        writer_.emplace(media::MediaWriter::fragmented(codec_, last_pts_us_, audio ? &*audio_codec_ : nullptr));
      }
      write_clip(*writer_, clip, last_pts_us_, audio ? &*audio : nullptr);
      writer_->flush_fragment();
      return writer_->take_output();  // the init segment too, the first time
    });
    for (const auto& f : clip.gops.back()->frames) {
      if (f.header.pts != storage::kNoTimestamp) last_pts_us_ = f.header.pts;
    }
    frames_ += clip.frames;
    co_return out;
  }
}

}  // namespace vigil::server
