#include "server/api/http_hls.hpp"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/status.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "common/media_writer.hpp"
#include "catalog/camera_rows.hpp"
#include "server/media/clip_source.hpp"
#include "server/media/export_cache.hpp"
#include "server/media/hls_codecs.hpp"
#include "server/media/hls_live.hpp"
#include "server/media/hls_text.hpp"
#include "server/media/media_pool.hpp"
#include "server/media/mp4_export.hpp"
#include "server/api/http_media.hpp"

namespace http = boost::beast::http;

namespace vigil::server {
namespace {

// A recording hole longer than this between two GOPs starts a discontinuity.
constexpr std::int64_t kHoleUs = 1'000'000;
// One HLS segment's video is read and muxed in memory.
constexpr std::uint64_t kMaxSegmentBytes = 64ull << 20;
// How long a live playlist request waits for a channel's first segment (a GOP or two).
constexpr std::chrono::seconds kLiveFirstSegmentWait{10};

// A required integer parameter (microseconds), digits with an optional sign only.
std::int64_t micros(const QueryParams& q, std::string_view key) {
  const auto v = q.get(key);
  if (!v || v->empty()) throw BadRequest("parameter '" + std::string(key) + "' is required (microseconds)");
  std::int64_t out = 0;
  const auto* end = v->data() + v->size();
  const auto r = std::from_chars(v->data(), end, out);
  if (r.ec != std::errc() || r.ptr != end || out < 0) {
    throw BadRequest("parameter '" + std::string(key) + "' must be a non-negative integer (microseconds)");
  }
  return out;
}

struct Cut {
  HlsSegment seg;
  bool discontinuity = false;
};

// HLS segments of SEGMENTS' GOPs in [FROM_US, TO_US): a segment ends at the first keyframe in a
// later TARGET_US cell of wall-clock time (cells counted from the epoch, not from FROM_US), so a
// playlist of a range that grows at its end, or whose start moves (a relative from=), lists the
// same segments under the same names each time it is asked. With OPEN_END (the plan reaches a
// segment still being written) the last segment is left out: it grows until the next keyframe.
// ALIGN_FIRST: the first segment starts at its cell's first keyframe (a start relative to now).
std::vector<Cut> cut(const std::vector<storage::PlaybackSegment>& segments, std::int64_t from_us, std::int64_t to_us,
                     std::int64_t target_us, bool open_end, bool align_first) {
  std::vector<Cut> out;
  std::optional<Cut> current;
  bool hole = false;
  // ALIGN_FIRST: the first segment starts with its cell too, at the cell's first keyframe, so a
  // start that moves within a cell (a relative from=) names the same first segment. Otherwise it
  // starts at the keyframe at or before FROM_US: a player starts where it was asked to.
  const std::int64_t cell_from_us = align_first ? from_us / target_us * target_us : from_us;
  for (const auto& s : segments) {
    const auto g = s.gops.entries();
    for (std::size_t i = 0; i < g.size(); ++i) {
      const std::int64_t start = g[i].pts;
      std::int64_t end = i + 1 < g.size()                     ? g[i + 1].pts
                         : s.end_pts == storage::kNoTimestamp ? start + 1
                                                              : std::max(s.end_pts, start + 1);
      if (start >= to_us) break;
      if (end <= cell_from_us) continue;
      end = std::min(end, to_us);
      if (current && (start - current->seg.to_us > kHoleUs || start / target_us != current->seg.from_us / target_us)) {
        hole = start - current->seg.to_us > kHoleUs;
        out.push_back(*current);
        current.reset();
      }
      if (!current) {
        current = Cut{{start, end}, hole && !out.empty()};
        hole = false;
      } else {
        current->seg.to_us = end;
      }
    }
  }
  if (current && !open_end) out.push_back(*current);
  return out;
}

// What every URI of a playlist carries over from its request: the track (stream=sub; main is
// the default) and, for a player that was given the playlist with ?access_token= (it cannot send
// headers), the token: "&stream=sub&access_token=…", or "" (only a token's own characters pass).
std::string carried_params_of(const QueryParams& q, const Track& track) {
  std::string out = track.role == TrackRole::sub ? "&stream=sub" : "";
  const auto t = q.get("access_token");
  if (t && !t->empty() && t->size() <= 256 &&
      t->find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == std::string::npos) {
    out += "&access_token=" + *t;
  }
  return out;
}

HttpResponse text_response(const HttpRequest& req, std::string body, const char* type) {
  HttpResponse res{http::status::ok, req.version()};
  res.set(http::field::server, "vigild/" VIGIL_VERSION);
  res.set(http::field::content_type, type);
  res.set(http::field::cache_control, "no-cache");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

boost::asio::awaitable<HttpReply> playlist(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                           const Track& track) {
  const auto [from_us, to_us] = media_range(q);
  // The playlist reads nothing from the disk: any size of range may be listed.
  ClipPlan plan = co_await plan_clip(ctx.catalog, ctx.disks, track, from_us, to_us, ~0ull);
  // The camera's audio, where it is AAC, is each segment's second track (docs/media.md, "Audio"):
  // the init segments have its track and every media segment the audio of its own [t0, t1)
  // (audio=1 on both; the URIs stay the same at every reload of a growing playlist).
  auto audio_plan = co_await plan_audio_beside(ctx.catalog, ctx.disks, track, from_us, to_us, ~0ull);
  if (audio_plan && !hls_takes_audio(audio_plan->plan.codec)) audio_plan.reset();
  const auto audio_codec = audio_plan ? std::optional<media::CodecInfo>(audio_plan->codec()) : std::nullopt;
  // A playlist whose init segments the muxer would refuse is not handed to a player: 422 now.
  const auto first_codec = plan.codec();
  co_await run_media(ctx.media, [&] { check_muxable(first_codec, audio_codec ? &*audio_codec : nullptr); });
  // A range that reaches past what is durable of a segment still being written continues live:
  // the playlist grows at each reload (EVENT, or a sliding live window for a relative from=) and
  // ends (ENDLIST) once the range is all recorded.
  bool growing = plan.plan.reaches_open && to_us > plan.plan.to_us;
  const bool relative_from = !fixed_time(q, "from");
  auto cuts = cut(plan.plan.segments, from_us, to_us, kHlsTargetUs, growing, relative_from);
  // The range's later parts (other codec parameters): each after a discontinuity, with its own
  // init segment (EXT-X-MAP); a part's segments are planned within it (t0 at its start at least).
  std::vector<std::size_t> part_starts;
  for (std::int64_t part_from = plan.plan.next_from_us; part_from != 0 && part_from < to_us;) {
    plan = co_await plan_clip(ctx.catalog, ctx.disks, track, part_from, to_us, ~0ull);
    const auto part_codec = plan.codec();
    co_await run_media(ctx.media, [&] { check_muxable(part_codec, audio_codec ? &*audio_codec : nullptr); });
    growing = plan.plan.reaches_open && to_us > plan.plan.to_us;
    auto more = cut(plan.plan.segments, part_from, to_us, kHlsTargetUs, growing, false);
    if (!more.empty()) {
      more.front().seg.from_us = std::max(more.front().seg.from_us, part_from);
      more.front().discontinuity = !cuts.empty();
      part_starts.push_back(cuts.size());
      cuts.insert(cuts.end(), more.begin(), more.end());
    }
    part_from = plan.plan.next_from_us > part_from ? plan.plan.next_from_us : 0;
  }
  if (cuts.empty() && growing) {
    throw ApiError(ApiErrc::unavailable, "the first segment of that range is still being written; retry in a second");
  }
  if (cuts.empty()) throw ApiError(ApiErrc::not_found, "no keyframe of " + track.described() + " in that range");
  // Media time counts from the first segment of a finished range; from the UTC day's start for a
  // growing one, so a reload lists its segments under the same names and times even after a
  // relative from= moved its first segment (until midnight).
  constexpr std::int64_t kDayUs = 86'400'000'000;
  const std::int64_t origin = growing ? cuts.front().seg.from_us / kDayUs * kDayUs : cuts.front().seg.from_us;
  std::int64_t longest = 0;
  for (const auto& c : cuts) longest = std::max(longest, c.seg.to_us - c.seg.from_us);
  const char* type = !growing ? "#EXT-X-PLAYLIST-TYPE:VOD\n" : relative_from ? "" : "#EXT-X-PLAYLIST-TYPE:EVENT\n";
  std::string m3u8 = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:" +
                     std::to_string(static_cast<std::int64_t>(std::ceil(static_cast<double>(longest) / 1e6))) + "\n" +
                     type + "#EXT-X-MEDIA-SEQUENCE:" + std::to_string(cuts.front().seg.from_us / kHlsTargetUs) +
                     "\n#EXT-X-INDEPENDENT-SEGMENTS\n";
  const std::string token_param = carried_params_of(q, track);
  const std::string with_audio = audio_plan ? "&audio=1" : "";
  const std::string bounds =
      "t0=" + std::to_string(cuts.front().seg.from_us) + "&t1=" + std::to_string(cuts.front().seg.to_us);
  m3u8 += "#EXT-X-MAP:URI=\"hls/init.mp4?" + bounds + with_audio + token_param + "\"\n";
  // The audio's configuration (AudioSpecificConfig, rate, channels) is its init's: where it changes
  // (the audio plan's next part), the segments from the first one whose t0 is in the new part on
  // get an init of their own, after a discontinuity. A segment's init and its audio are both the
  // first audio part recorded from its t0 on (init_segment, media_segment), so they always match;
  // a segment across the change holds the audio up to it (the rest would need the new init).
  const auto audio_part_of = [&](std::int64_t t0) -> std::optional<std::size_t> {
    if (!audio_plan) return std::nullopt;
    const auto& parts = audio_plan->plan.parts;
    for (std::size_t k = 0; k < parts.size(); ++k) {
      if (parts[k].to_us > t0) return k;
    }
    return std::nullopt;  // no audio from t0 on: the segment is its video (with the init it had)
  };
  std::optional<std::size_t> audio_part = audio_part_of(cuts.front().seg.from_us);
  for (std::size_t i = 0; i < cuts.size(); ++i) {
    const auto& c = cuts[i];
    const auto part = audio_part_of(c.seg.from_us);
    const bool audio_changes = i > 0 && part && part != audio_part;
    if (part) audio_part = part;
    if (c.discontinuity || audio_changes) m3u8 += "#EXT-X-DISCONTINUITY\n";
    if (i > 0 && (audio_changes || std::find(part_starts.begin(), part_starts.end(), i) != part_starts.end())) {
      m3u8 += "#EXT-X-MAP:URI=\"hls/init.mp4?t0=" + std::to_string(c.seg.from_us) +
              "&t1=" + std::to_string(c.seg.to_us) + with_audio + token_param + "\"\n";
    }
    // Recorded times are wall-clock microseconds: players show the time of day of what they play.
    m3u8 += "#EXT-X-PROGRAM-DATE-TIME:" + hls_date_time(c.seg.from_us) + "\n";
    m3u8 += "#EXTINF:" + hls_seconds(c.seg.to_us - c.seg.from_us) + ",\n";
    m3u8 += "hls/seg.m4s?t0=" + std::to_string(c.seg.from_us) + "&t1=" + std::to_string(c.seg.to_us) +
            "&o=" + std::to_string(origin) + with_audio + token_param + "\n";
  }
  if (!growing) m3u8 += "#EXT-X-ENDLIST\n";
  co_return text_response(req, std::move(m3u8), "application/vnd.apple.mpegurl");
}

// The time parameter KEY as the request gave it, for a URI ("&KEY=…"; "" when absent): only the
// characters of the time forms (digits, letters, @ . : _ -), so a relative range stays relative in
// the playlist it names.
std::string time_param(const QueryParams& q, const std::string& key) {
  const auto v = q.get(key);
  if (!v) return {};
  if (v->empty() || v->size() > 64 ||
      v->find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@.:_-") !=
          std::string::npos) {
    throw BadRequest("parameter '" + key + "' is not a time this playlist can name");
  }
  return "&" + key + "=" + *v;
}

// A master playlist of the range's one rendition (RFC 8216 §4.3.4.2): EXT-X-STREAM-INF with the
// recorded rate as BANDWIDTH, the picture size, and CODECS naming the video's codec and, where
// the segments carry it, the camera's AAC (mp4a.40.2) — what Safari and smart TVs check before
// they fetch a segment. Its one URI is hls.m3u8 of the same range.
boost::asio::awaitable<HttpReply> master_playlist(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                                  const Track& track) {
  const auto [from_us, to_us] = media_range(q);
  const std::string range = time_param(q, "from") + time_param(q, "to");
  const ClipPlan plan = co_await plan_clip(ctx.catalog, ctx.disks, track, from_us, to_us, ~0ull);
  auto audio_plan = co_await plan_audio_beside(ctx.catalog, ctx.disks, track, from_us, to_us, ~0ull);
  if (audio_plan && !hls_takes_audio(audio_plan->plan.codec)) audio_plan.reset();
  std::string codecs = rfc6381_codec(plan.codec());
  if (!codecs.empty() && audio_plan) codecs += "," + rfc6381_codec(audio_plan->codec());
  const std::int64_t bandwidth =
      std::max<std::int64_t>(1, plan.plan.rate_bps + (audio_plan ? audio_plan->plan.rate_bps : 0));
  std::string m3u8 = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-STREAM-INF:BANDWIDTH=" +
                     std::to_string(bandwidth);
  // Parameter sets in band: no codec string to give, and a wrong one is worse than none.
  if (!codecs.empty()) m3u8 += ",CODECS=\"" + codecs + "\"";
  m3u8 += ",RESOLUTION=" + std::to_string(plan.plan.width) + "x" + std::to_string(plan.plan.height) + "\n";
  std::string params = range + carried_params_of(q, track);
  if (!params.empty()) params[0] = '?';
  m3u8 += "../hls.m3u8" + params + "\n";
  co_return text_response(req, std::move(m3u8), "application/vnd.apple.mpegurl");
}

boost::asio::awaitable<HttpReply> init_segment(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                               const Track& track) {
  const std::int64_t t0 = micros(q, "t0"), t1 = micros(q, "t1");
  if (t1 <= t0 || t1 - t0 > kMaxMediaRangeUs) throw BadRequest("t1 must be after t0, at most 24 hours");
  const ClipPlan plan = co_await plan_clip(ctx.catalog, ctx.disks, track, t0, t1, ~0ull);
  const auto codec = plan.codec();
  // audio=1: the playlist's segments carry the camera's audio; its codec is the first recorded from
  // t0 on (the playlist's range, at most 24 hours, starts at t0 at the earliest). Nothing is read.
  std::optional<media::CodecInfo> audio_codec;
  std::string etag = plan.etag("hls-init|" + plan.plan.codec);
  if (q.get("audio") == "1") {
    const auto audio_plan =
        co_await plan_audio_beside(ctx.catalog, ctx.disks, track, t0, t0 + kMaxMediaRangeUs + kHlsTargetUs, ~0ull);
    if (!audio_plan || !hls_takes_audio(audio_plan->plan.codec)) {
      throw ApiError(ApiErrc::not_found, "no AAC audio of camera '" + track.camera + "' at that time");
    }
    audio_codec = audio_plan->codec();
    etag += audio_plan->etag("hls-init-audio");
  }
  auto init = co_await run_media(ctx.media, [&] {
    return std::make_shared<const std::vector<std::byte>>(
        media::MediaWriter::fragmented(codec, t0, audio_codec ? &*audio_codec : nullptr).take_output());
  });
  co_return media_reply(req, std::move(init), etag, "video/mp4");
}

boost::asio::awaitable<HttpReply> media_segment(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                                const Track& track) {
  const std::int64_t t0 = micros(q, "t0"), t1 = micros(q, "t1"), origin = micros(q, "o");
  if (t1 <= t0 || t1 - t0 > 10 * 60 * 1'000'000ll) throw BadRequest("t1 must be after t0, at most 10 minutes");
  if (origin > t0) throw BadRequest("o (the playlist's origin) must not be after t0");
  const ClipPlan plan = co_await plan_clip(ctx.catalog, ctx.disks, track, t0, t1, kMaxSegmentBytes);
  // audio=1: the camera's AAC audio of [t0, t1) beside the video (the init segment has its track);
  // a segment with none recorded there is its video alone.
  std::optional<ClipPlan> audio_plan;
  if (q.get("audio") == "1")
    audio_plan = co_await plan_audio_beside(ctx.catalog, ctx.disks, track, t0, t1, kMaxSegmentBytes);
  if (audio_plan && !hls_takes_audio(audio_plan->plan.codec)) audio_plan.reset();
  const std::string etag =
      plan.etag("hls-seg|" + std::to_string(origin)) + (audio_plan ? audio_plan->etag("hls-audio") : std::string());
  auto data = ctx.exports ? ctx.exports->find(etag) : nullptr;
  if (!data) {
    std::optional<ExportCache::BuildLease> lease;
    if (ctx.exports) {
      lease = ctx.exports->reserve_build(2 * plan.estimated_bytes);
      if (!lease) throw ApiError(ApiErrc::unavailable, "too many segments are being built; retry shortly");
    }
    const auto codec = plan.codec();  // 422 before anything is read, if outside the media limits
    Clip clip = co_await read_clip(ctx.disks, plan, t0, t1, false);
    std::optional<AudioClip> audio;
    if (audio_plan) {
      // Awaited on its own line: see export_route.
      Clip audio_clip = co_await read_clip(ctx.disks, *audio_plan, t0, t1, false);
      audio.emplace(AudioClip{
          .codec = audio_plan->codec(), .clip = std::move(audio_clip), .from_us = t0, .to_us = t1, .exact = true});
    }
    data = co_await run_media(ctx.media, [&] {
      auto writer = media::MediaWriter::fragmented(codec, origin, audio ? &audio->codec : nullptr);
      (void)writer.take_output();  // the init segment: served by init.mp4
      write_clip(writer, clip, t0, audio ? &*audio : nullptr);
      if (writer.frames() == 0) throw ApiError(ApiErrc::not_found, "nothing playable in that segment");
      writer.flush_fragment();
      return std::make_shared<const std::vector<std::byte>>(writer.take_output());
    });
    if (ctx.exports) ctx.exports->put(etag, data);
  }
  co_return media_reply(req, std::move(data), etag, "video/iso.segment");
}

// Live: the camera's channel, after draining its tap; the playlist waits (bounded) for the
// first segment of a channel just opened.
boost::asio::awaitable<std::shared_ptr<HlsLiveChannel>> live_channel(const RouteContext& ctx, const Track& track,
                                                                     bool wait_for_segment) {
  auto ch = ctx.live ? ctx.live->channel(track) : nullptr;
  if (!ch) throw ApiError(ApiErrc::not_found, track.described() + " is not recording now");
  // Draining the tap muxes its frames: media work, on the media pool like every other mux. A
  // named lambda, not a temporary: see MediaPool::run.
  auto pump = [&] { return ch->pump(); };
  if (!wait_for_segment) {
    co_await run_media(ctx.media, pump);
    co_return ch;
  }
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  const auto deadline = std::chrono::steady_clock::now() + kLiveFirstSegmentWait;
  while (!(co_await run_media(ctx.media, pump))) {
    if (std::chrono::steady_clock::now() >= deadline) {
      throw ApiError(ApiErrc::unavailable, "no complete segment yet (no keyframe from the camera); retry");
    }
    timer.expires_after(std::chrono::milliseconds(100));
    co_await timer.async_wait(boost::asio::use_awaitable);
  }
  co_return ch;
}

boost::asio::awaitable<HttpReply> live(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                       const Track& track, const std::string& what) {
  if (what == "live.m3u8") {
    auto ch = co_await live_channel(ctx, track, true);
    co_return text_response(req, ch->playlist(carried_params_of(q, track)), "application/vnd.apple.mpegurl");
  }
  auto ch = co_await live_channel(ctx, track, false);
  // c: the channel the playlist named; another one (a new recording since) has other segments.
  const std::int64_t c = micros(q, "c");
  if (static_cast<std::uint64_t>(c) != ch->epoch()) {
    throw ApiError(ApiErrc::not_found, "that live channel has ended; fetch live.m3u8 again");
  }
  const std::string tag = "\"live-" + std::to_string(c);
  if (what == "live/init.mp4") {
    // g: the init's generation (a later one has audio that started after the channel opened).
    const std::int64_t g = q.get("g") ? micros(q, "g") : 0;
    auto init = ch->init_segment(static_cast<std::uint64_t>(g));
    if (!init) throw ApiError(ApiErrc::not_found, "that live channel has no init segment " + std::to_string(g));
    co_return media_reply(req, std::move(init), tag + (g > 0 ? "-init-" + std::to_string(g) : "-init") + "\"",
                          "video/mp4");
  }
  const std::int64_t n = micros(q, "n");
  auto seg = ch->segment(static_cast<std::uint64_t>(n));
  if (!seg) throw ApiError(ApiErrc::not_found, "segment " + std::to_string(n) + " is not in the live window");
  co_return media_reply(req, std::move(seg), tag + "-" + std::to_string(n) + "\"", "video/iso.segment");
}

}  // namespace

std::vector<HlsSegment> cut_hls_segments(const std::vector<storage::PlaybackSegment>& segments, std::int64_t from_us,
                                         std::int64_t to_us, std::int64_t target_us, bool open_end, bool align_first) {
  std::vector<HlsSegment> out;
  for (const auto& c : cut(segments, from_us, to_us, target_us, open_end, align_first)) out.push_back(c.seg);
  return out;
}

boost::asio::awaitable<HttpReply> hls_route(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                            const std::string& camera, const std::string& path_tail) {
  if (!catalog::is_valid_camera_name(camera)) throw BadRequest("camera name is not valid");
  const Track track = q.video_track(camera);  // stream=main|sub
  if (path_tail == "hls.m3u8") co_return co_await playlist(ctx, req, q, track);
  if (path_tail == "hls/master.m3u8") co_return co_await master_playlist(ctx, req, q, track);
  if (path_tail == "hls/init.mp4") co_return co_await init_segment(ctx, req, q, track);
  if (path_tail == "hls/seg.m4s") co_return co_await media_segment(ctx, req, q, track);
  if (path_tail == "live.m3u8" || path_tail == "live/init.mp4" || path_tail == "live/seg.m4s") {
    co_return co_await live(ctx, req, q, track, path_tail);
  }
  throw ApiError(ApiErrc::not_found, "no such resource");
}

}  // namespace vigil::server
