#include "server/media/mp4_export.hpp"

#include <algorithm>
#include <optional>

#include "common/media_writer.hpp"

namespace vigil::server {

namespace {

// The audio frames of CLIP in order, with a pts (every audio packet has one).
std::vector<const storage::ScannedRecord*> audio_frames(const Clip& clip) {
  std::vector<const storage::ScannedRecord*> out;
  for (const auto& g : clip.gops) {
    if (g->damaged) continue;
    for (const auto& f : g->frames) {
      if (f.header.pts != storage::kNoTimestamp) out.push_back(&f);
    }
  }
  return out;
}

}  // namespace

void write_clip(media::MediaWriter& writer, const Clip& clip, std::int64_t first_pts_us, const AudioClip* audio) {
  const auto sound = audio ? audio_frames(audio->clip) : std::vector<const storage::ScannedRecord*>{};
  std::size_t next_sound = 0;
  const bool exact = audio && audio->exact;
  const std::int64_t sound_from_us = exact ? audio->from_us : first_pts_us;
  // Audio up to UNTIL_US, from the file's start on (EXACT: within [from, to) alone).
  const auto write_sound = [&](std::int64_t until_us) {
    if (exact) until_us = std::min(until_us, audio->to_us - 1);
    for (; next_sound < sound.size() && sound[next_sound]->header.pts <= until_us; ++next_sound) {
      const auto& a = *sound[next_sound];
      if (a.header.pts < sound_from_us) continue;
      writer.write({.pts_us = a.header.pts,
                    .dts_us = a.header.pts,
                    .duration_us = a.header.duration,
                    .keyframe = true,
                    .payload = a.payload,
                    .audio = true});
    }
  };
  std::int64_t last = first_pts_us, end = first_pts_us;
  for (const auto& g : clip.gops) {
    for (const auto& f : g->frames) {
      const auto pts = f.header.pts != storage::kNoTimestamp ? f.header.pts : last;
      const auto dts = f.header.dts != storage::kNoTimestamp ? f.header.dts : pts;
      last = pts;
      end = std::max(end, pts + f.header.duration);
      if (audio) write_sound(dts);
      writer.write({.pts_us = pts,
                    .dts_us = dts,
                    .duration_us = f.header.duration,
                    .keyframe = f.header.keyframe(),
                    .payload = f.payload});
    }
  }
  if (audio) write_sound(std::max(end, audio->to_us) - 1);  // [from, to): to itself is not in it
}

bool hls_takes_audio(const std::string& codec) { return codec == "aac"; }

std::int64_t audio_start_us(std::int64_t video_origin_us, const AudioClip& audio) {
  const std::int64_t range_start_us = std::min(video_origin_us, audio.from_us);
  for (const auto* f : audio_frames(audio.clip)) {
    if (f->header.pts >= range_start_us) return std::min(video_origin_us, f->header.pts);
  }
  return video_origin_us;
}

void check_muxable(const media::CodecInfo& codec, const media::CodecInfo* audio) {
  (void)media::MediaWriter::fragmented(codec, 0, audio).take_output();
}

std::shared_ptr<const std::vector<std::byte>> build_mp4(const ClipPlan& plan, const Clip& clip,
                                                        const Mp4Rendition& rendition, const AudioClip* audio) {
  const double rate = rendition.rate;
  const bool reverse = rendition.reverse;
  if (rendition.keyframes_only) {
    std::vector<const storage::ScannedRecord*> keys;
    for (const auto& g : clip.gops) {
      if (!g->damaged && !g->frames.empty()) keys.push_back(&g->frames.front());
    }
    auto writer = media::MediaWriter::mp4_in_memory(plan.codec(), keys.size(), 0);
    const std::int64_t base = keys.empty() ? 0 : keys.front()->header.pts;
    const auto media_time = [&](const storage::ScannedRecord* k) {
      const std::int64_t distance = reverse ? base - k->header.pts : k->header.pts - base;
      return static_cast<std::int64_t>(static_cast<double>(distance) / rate);
    };
    std::int64_t prev = -1;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      // Strictly increasing even if the recording's clock stepped back (the muxer needs it).
      const auto t = std::max(media_time(keys[i]), prev + 1);
      const auto next = i + 1 < keys.size() ? media_time(keys[i + 1]) : t + 40'000;
      writer.write({.pts_us = t,
                    .dts_us = t,
                    .duration_us = std::max<std::int64_t>(next - t, 1),
                    .keyframe = true,
                    .payload = keys[i]->payload});
      prev = t;
    }
    writer.finish();
    return std::make_shared<const std::vector<std::byte>>(writer.take_output());
  }
  std::optional<std::int64_t> origin;
  for (const auto& g : clip.gops) {
    for (const auto& f : g->frames) {
      const auto dts = f.header.dts != storage::kNoTimestamp ? f.header.dts : f.header.pts;
      if (dts != storage::kNoTimestamp) origin = origin ? std::min(*origin, dts) : dts;
    }
    if (origin) break;  // the first GOP with timestamps holds the earliest (frames are in decode order)
  }
  // MP4 takes AAC and Opus as they are; G.711 stays out of it (docs/media.md, "Audio").
  if (audio && !media::container_takes_audio("mp4", audio->codec.codec_name)) audio = nullptr;
  const std::int64_t start_us = audio ? audio_start_us(origin.value_or(0), *audio) : origin.value_or(0);
  auto writer = media::MediaWriter::mp4_in_memory(plan.codec(), clip.frames + (audio ? audio->clip.frames : 0),
                                                  start_us, audio ? &audio->codec : nullptr);
  write_clip(writer, clip, start_us, audio);
  writer.finish();
  return std::make_shared<const std::vector<std::byte>>(writer.take_output());
}

}  // namespace vigil::server
