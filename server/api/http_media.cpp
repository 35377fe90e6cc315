#include "server/api/http_media.hpp"

#include "server/api/http_audit.hpp"

#include <boost/json.hpp>
#include <algorithm>
#include <chrono>
#include <ctime>

#include "common/log.hpp"
#include "common/thumbnail.hpp"
#include "catalog/camera_rows.hpp"
#include "server/media/clip_source.hpp"
#include "server/media/export_cache.hpp"
#include "server/media/media_pool.hpp"
#include "server/media/mp4_export.hpp"
#include "server/media/mp4_stream.hpp"
#include "server/net/http_range.hpp"

namespace http = boost::beast::http;

namespace vigil::server {
namespace {

constexpr std::int64_t kThumbnailLookbackUs = 600'000'000;

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The audio recorded beside VIDEO's track from ASKED_FROM_US (the request's start: the video's plan
// starts at its first frame, and the audio recorded before it in the range is the clip's too) to the
// video's end (docs/media.md, "Audio"); nullopt when the camera has none there, or more than
// MAX_BYTES (the export is then its video alone).
boost::asio::awaitable<std::optional<ClipPlan>> plan_audio(const RouteContext& ctx, const ClipPlan& video,
                                                           std::int64_t asked_from_us, std::uint64_t max_bytes) {
  co_return co_await plan_audio_beside(ctx.catalog, ctx.disks, video.track, std::min(asked_from_us, video.from_us),
                                       video.to_us, max_bytes);
}

// If-None-Match names ETAG (a list, or *).
bool not_modified(const HttpRequest& req, const std::string& etag) {
  const auto inm = req[http::field::if_none_match];
  if (inm.empty()) return false;
  if (inm == "*") return true;
  return std::string_view(inm).find(etag) != std::string_view::npos;
}

std::string utc_stamp(std::int64_t us) {
  const std::time_t t = static_cast<std::time_t>(us / 1'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// "@SECONDS.MICROS": a time the query parser takes back exactly.
std::string at_time(std::int64_t us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "@%lld.%06lld", static_cast<long long>(us / 1'000'000),
                static_cast<long long>(us % 1'000'000));
  return buf;
}

// The export of CAMERA's [FROM_US, TO_US) with the request's trick-play parameters (numbers
// only: what goes into a Link header or a URL is never the client's text).
std::string export_target(const std::string& camera, std::int64_t from_us, std::int64_t to_us, const QueryParams& q) {
  std::string t = "/api/v1/cameras/" + camera + "/export.mp4?from=" + at_time(from_us) + "&to=" + at_time(to_us);
  for (const char* key : {"keyframes", "rate", "reverse", "download"}) {
    const auto v = q.get(key);
    if (v && !v->empty() && v->size() <= 16 && v->find_first_not_of("0123456789.") == std::string::npos) {
      t += std::string("&") + key + "=" + *v;
    }
  }
  if (q.get("stream") == "sub") t += "&stream=sub";  // the route checked it: main or sub
  return t;
}

// A range of several parts (the codec parameters change in it): the export is the first part,
// and the headers name the rest — X-Vigil-Parts (how many), a Link to the next part's export and
// one to the list of all parts (GET …/export/parts).
template <class Response>
void name_parts(Response& res, const ClipPlan& plan, std::int64_t to_us, const QueryParams& q) {
  const auto& parts = plan.plan.parts;
  res.set("X-Vigil-Parts", std::to_string(std::max<std::size_t>(parts.size(), 1)));
  if (plan.plan.next_from_us == 0) return;
  res.set(http::field::link, "<" + export_target(plan.camera, plan.plan.next_from_us, to_us, q) +
                                 ">; rel=\"next\", </api/v1/cameras/" + plan.camera +
                                 "/export/parts?from=" + at_time(plan.from_us) + "&to=" + at_time(to_us) +
                                 (plan.track.role == TrackRole::sub ? "&stream=sub" : "") + ">; rel=\"parts\"");
}

// What a streamed export reads at a time: an eighth of the in-memory cap, at most 4 MiB; the
// export holds at most three times that plus two GOPs (Mp4Stream), and reserves it.
std::size_t stream_batch_bytes(const RouteContext& ctx) {
  return static_cast<std::size_t>(std::min<std::uint64_t>(Mp4Stream::kBatchBytes, ctx.export_memory_bytes / 8));
}

// A range of more than ctx.export_memory_bytes: fragmented MP4 written while it is read, in
// chunks (no Content-Length, no byte ranges: 200 with the whole file; no ETag, not cached).
StreamedResponse streamed_export(const RouteContext& ctx, const HttpRequest& req, const ClipPlan& plan,
                                 const std::optional<ClipPlan>& audio, std::optional<ExportCache::BuildLease> lease,
                                 const std::string& disposition) {
  StreamedResponse res{http::status::ok, req.version()};
  res.set(http::field::server, "vigild/" VIGIL_VERSION);
  res.set(http::field::content_type, "video/mp4");
  res.set(http::field::accept_ranges, "none");
  res.set(http::field::cache_control, "no-store");
  res.set(http::field::content_disposition, disposition);
  res.set("X-Vigil-Export", "fragmented");
  res.keep_alive(req.keep_alive());
  if (req.method() == http::verb::head) return res;  // no producer: the head alone
  struct State {
    Mp4Stream mp4;
    std::optional<ExportCache::BuildLease> lease;
    std::string camera;
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    std::uint64_t sent_bytes = 0;
  };
  auto state =
      std::make_shared<State>(State{.mp4 = Mp4Stream(ctx.disks, plan, stream_batch_bytes(ctx), ctx.media, audio),
                                    .lease = std::move(lease),
                                    .camera = plan.camera});
  res.next = [state]() -> boost::asio::awaitable<std::optional<std::vector<std::byte>>> {
    auto chunk = co_await state->mp4.next();
    if (chunk) {
      state->sent_bytes += chunk->size();
    } else {
      log::info("export streamed",
                {{"camera", state->camera},
                 {"frames", state->mp4.frames()},
                 {"audio_frames", state->mp4.audio_frames()},
                 {"damaged_gops", state->mp4.damaged_gops()},
                 {"read_bytes", state->mp4.bytes_read()},
                 {"mp4_bytes", state->sent_bytes},
                 {"ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - state->started)
                            .count()}});
    }
    co_return chunk;
  };
  return res;
}

}  // namespace

bool fixed_time(const QueryParams& q, std::string_view key) {
  const auto v = q.get(key);
  return v && !v->empty() && v->front() != '-' && *v != "now";
}

HttpReply media_reply(const HttpRequest& req, std::shared_ptr<const std::vector<std::byte>> data,
                      const std::string& etag, const std::string& content_type, bool fixed) {
  if (not_modified(req, etag)) {
    HttpResponse res{http::status::not_modified, req.version()};
    res.set(http::field::server, "vigild/" VIGIL_VERSION);
    res.set(http::field::etag, etag);
    res.keep_alive(req.keep_alive());
    return res;
  }
  const std::uint64_t total = data->size();
  // If-Range with another version: the whole representation, as if no Range was asked.
  const auto if_range = req[http::field::if_range];
  const bool range_applies = if_range.empty() || if_range == etag;
  const auto range = parse_byte_range(range_applies ? std::string_view(req[http::field::range]) : "", total);
  if (range.kind == ByteRange::Kind::malformed || range.kind == ByteRange::Kind::unsatisfiable) {
    auto res =
        json_response(req, http::status::range_not_satisfiable,
                      boost::json::serialize(boost::json::object{
                          {"error", range.kind == ByteRange::Kind::malformed
                                        ? "malformed Range header (bytes=FIRST-LAST, FIRST- or -SUFFIX)"
                                        : "the range starts beyond the end (" + std::to_string(total) + " bytes)"}}));
    res.set(http::field::content_range, "bytes */" + std::to_string(total));
    return res;
  }
  const bool partial = range.kind == ByteRange::Kind::partial;
  MediaResponse res{partial ? http::status::partial_content : http::status::ok, req.version()};
  res.set(http::field::server, "vigild/" VIGIL_VERSION);
  res.set(http::field::content_type, content_type);
  res.set(http::field::accept_ranges, "bytes");
  res.set(http::field::etag, etag);
  res.set(http::field::cache_control, fixed ? "private, max-age=3600" : "private, no-cache");
  if (partial) {
    res.set(http::field::content_range, "bytes " + std::to_string(range.offset) + "-" +
                                            std::to_string(range.offset + range.length - 1) + "/" +
                                            std::to_string(total));
  }
  res.keep_alive(req.keep_alive());
  res.content_length(range.length);
  const bool head = req.method() == http::verb::head;
  res.body() = SharedBytesBody::value_type{std::move(data), range.offset, head ? 0 : range.length};
  return res;
}

MediaRange media_range(const QueryParams& q, const char* in_parts) {
  const auto now = now_us();
  MediaRange r{.from_us = q.time("from", now), .to_us = q.get("to") ? q.time("to", now) : now};
  if (r.to_us <= r.from_us) throw BadRequest("'to' must be after 'from'");
  if (r.to_us - r.from_us > kMaxMediaRangeUs)
    throw BadRequest(std::string("the range is longer than 24 hours: ") + in_parts);
  return r;
}

boost::asio::awaitable<HttpReply> export_route(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                               const std::string& camera) {
  if (!catalog::is_valid_camera_name(camera)) throw BadRequest("camera name is not valid");
  const auto [from_us, to_us] = media_range(q, "export in parts");
  const auto download = q.number("download", 0, 1);
  // Trick play: keyframes only (fast-forward: a fraction of the disk time), re-timed at RATE.
  const bool keyframes = q.number("keyframes", 0, 1).value_or(0) == 1;
  const double rate = q.number("rate", 1, 64).value_or(1);
  if (rate != 1 && !keyframes) throw BadRequest("rate applies to keyframes=1 (a full-frame export keeps media time)");
  // Rewind: the keyframes from TO back to FROM (the wire protocol's reverse playback walk).
  const bool reverse = q.number("reverse", 0, 1).value_or(0) == 1;
  if (reverse && !keyframes) {
    throw BadRequest("reverse applies to keyframes=1 (inter frames cannot be decoded backwards)");
  }

  const auto started = std::chrono::steady_clock::now();
  // Full-frame exports of any size (a large one streams); trick play, a keyframe of each GOP,
  // is built in memory and keeps the cap.
  ClipPlan plan = co_await plan_clip(ctx.catalog, ctx.disks, q.video_track(camera), from_us, to_us,
                                     keyframes ? ctx.export_memory_bytes : ~0ull);
  // Who exported what: one audit row per export (not per range request of it). The options are a
  // named local: GCC mishandles a conditional's temporary inside a co_await's arguments.
  std::string options =
      keyframes ? "keyframes rate=" + std::to_string(rate) + (reverse ? " reverse" : "") : std::string();
  if (plan.track.role == TrackRole::sub) options += options.empty() ? "stream=sub" : " stream=sub";
  co_await audit_export(ctx, req, camera, plan.from_us, plan.to_us, options);
  const std::string name =
      camera + (plan.track.role == TrackRole::sub ? "-sub-" : "-") + utc_stamp(plan.from_us) + ".mp4";
  const std::string disposition =
      std::string(download && *download == 1 ? "attachment" : "inline") + "; filename=\"" + name + "\"";
  if (!keyframes && plan.estimated_bytes > ctx.export_memory_bytes) {
    // The camera's audio beside it, read as the video is (Mp4Stream), AAC or Opus as in build_mp4.
    auto audio_plan = co_await plan_audio(ctx, plan, from_us, ~0ull);
    if (audio_plan && !media::container_takes_audio("mp4", audio_plan->plan.codec)) audio_plan.reset();
    // Once the head is sent there is no status left to give: what the muxer refuses is found now.
    const auto codec = plan.codec();
    const auto audio_codec = audio_plan ? std::optional<media::CodecInfo>(audio_plan->codec()) : std::nullopt;
    co_await run_media(ctx.media, [&] { check_muxable(codec, audio_codec ? &*audio_codec : nullptr); });
    std::optional<ExportCache::BuildLease> lease;
    if (ctx.exports) {
      lease = ctx.exports->reserve_build((audio_plan ? 4 : 3) * stream_batch_bytes(ctx));  // the audio: a batch more
      if (!lease) throw ApiError(ApiErrc::unavailable, "too many exports are being built; retry shortly");
    }
    auto res = streamed_export(ctx, req, plan, audio_plan, std::move(lease), disposition);
    res.set("X-Vigil-Range-Us", std::to_string(plan.from_us) + "-" + std::to_string(plan.to_us));
    name_parts(res, plan, to_us, q);
    co_return res;
  }
  // The camera's audio over the same range (a full-frame export only: trick play has no sound).
  std::optional<ClipPlan> audio_plan;
  if (!keyframes) audio_plan = co_await plan_audio(ctx, plan, from_us, ctx.export_memory_bytes);
  const std::string etag =
      plan.etag(keyframes ? (reverse ? "mp4-keys-rev|" : "mp4-keys|") + std::to_string(rate) : std::string("mp4")) +
      (audio_plan ? audio_plan->etag("audio") : std::string());
  std::shared_ptr<const std::vector<std::byte>> mp4 = ctx.exports ? ctx.exports->find(etag) : nullptr;
  const bool cached = mp4 != nullptr;
  if (!mp4 && !not_modified(req, etag)) {
    std::optional<ExportCache::BuildLease> lease;
    if (ctx.exports) {
      lease = ctx.exports->reserve_build(2 * plan.estimated_bytes);
      if (!lease) throw ApiError(ApiErrc::unavailable, "too many exports are being built; retry shortly");
    }
    Clip clip = co_await read_clip(ctx.disks, plan, plan.from_us, plan.to_us, keyframes,
                                   reverse ? storage::ReadDirection::reverse : storage::ReadDirection::forward);
    if (clip.frames == 0) {
      throw ApiError(ApiErrc::not_found,
                     "nothing playable in that range (" + std::to_string(clip.damaged_gops) + " damaged GOPs)");
    }
    std::optional<AudioClip> audio;
    if (audio_plan) {
      // Awaited on its own line, not inside AudioClip's braced initializer: built by GCC 12 that way,
      // the clip's GOPs were freed before build_mp4 read them (vigild crashed on an audio export).
      Clip audio_clip = co_await read_clip(ctx.disks, *audio_plan, audio_plan->from_us, audio_plan->to_us, false);
      audio.emplace(AudioClip{.codec = audio_plan->codec(),
                              .clip = std::move(audio_clip),
                              .from_us = audio_plan->from_us,
                              .to_us = audio_plan->to_us});
    }
    mp4 = co_await run_media(ctx.media, [&] {
      return build_mp4(plan, clip, Mp4Rendition{.keyframes_only = keyframes, .rate = rate, .reverse = reverse},
                       audio ? &*audio : nullptr);
    });
    if (ctx.exports) ctx.exports->put(etag, mp4);
    log::info("export built",
              {{"camera", camera},
               {"from_us", plan.from_us},
               {"to_us", plan.to_us},
               {"keyframes", keyframes},
               {"reverse", reverse},
               {"frames", clip.frames},
               {"damaged_gops", clip.damaged_gops},
               {"read_bytes", clip.bytes_read},
               {"mp4_bytes", mp4->size()},
               {"ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count()}});
    if (clip.damaged_gops > 0) {
      log::warn("export skipped damaged GOPs", {{"camera", camera}, {"damaged_gops", clip.damaged_gops}});
    }
  }
  if (!mp4) mp4 = std::make_shared<const std::vector<std::byte>>();  // 304: no body needed
  // A range relative to now, or one that reaches the segment being written, changes under its URL.
  const bool fixed = fixed_time(q, "from") && fixed_time(q, "to") && !plan.plan.reaches_open;
  auto reply = media_reply(req, mp4, etag, "video/mp4", fixed);
  if (auto* m = std::get_if<MediaResponse>(&reply)) {
    m->set(http::field::content_disposition, disposition);
    m->set("X-Vigil-Range-Us", std::to_string(plan.from_us) + "-" + std::to_string(plan.to_us));
    m->set("X-Vigil-Cache", cached ? "hit" : "miss");
    name_parts(*m, plan, to_us, q);
  }
  co_return reply;
}

boost::asio::awaitable<HttpReply> export_parts_route(const RouteContext& ctx, const HttpRequest& req,
                                                     const QueryParams& q, const std::string& camera) {
  if (!catalog::is_valid_camera_name(camera)) throw BadRequest("camera name is not valid");
  const auto [from_us, to_us] = media_range(q);
  const ClipPlan plan = co_await plan_clip(ctx.catalog, ctx.disks, q.video_track(camera), from_us, to_us, ~0ull);
  boost::json::array parts;
  for (const auto& p : plan.plan.parts) {
    const std::int64_t part_from = std::max(from_us, p.from_us), part_to = std::min(to_us, p.to_us);
    parts.push_back(boost::json::object{{"from_us", part_from},
                                        {"to_us", part_to},
                                        {"codec", p.codec},
                                        {"width", p.width},
                                        {"height", p.height},
                                        {"segments", p.segments},
                                        {"export", export_target(camera, part_from, part_to, q)}});
  }
  co_return json_response(req, http::status::ok,
                          boost::json::serialize(boost::json::object{{"camera", camera}, {"parts", std::move(parts)}}));
}

boost::asio::awaitable<HttpReply> thumbnail_route(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                                  const std::string& camera) {
  if (!catalog::is_valid_camera_name(camera)) throw BadRequest("camera name is not valid");
  const std::int64_t at_us = q.time("at", now_us());
  const int width = static_cast<int>(q.number("width", 16, 1920).value_or(320));
  // The keyframe at or before AT, looking back at most kThumbnailLookbackUs (AT may fall in a
  // gap or after the recording's end): planned from the GOP index, and only it is read.
  ClipPlan plan =
      co_await plan_clip(ctx.catalog, ctx.disks, q.video_track(camera), at_us - kThumbnailLookbackUs, at_us + 1, ~0ull);
  // The codec parameters changed in those 10 minutes: the keyframe is in the last part.
  if (plan.plan.next_from_us != 0) {
    plan = co_await plan_clip(ctx.catalog, ctx.disks, plan.track, plan.plan.parts.back().from_us, at_us + 1, ~0ull);
  }
  // Named by the keyframe, not by AT: scrubbing within one GOP hits the cache.
  std::optional<std::int64_t> key_pts;
  for (const auto& seg : plan.plan.segments) {
    if (auto i = seg.gops.at_or_before(at_us)) key_pts = seg.gops.entries()[*i].pts;
  }
  if (!key_pts)
    throw ApiError(ApiErrc::not_found, "no keyframe of '" + camera + "' in the 10 minutes before that time");
  plan.from_us = plan.to_us = *key_pts;
  const std::string etag = plan.etag("jpeg|" + std::to_string(width));
  auto jpeg = ctx.exports ? ctx.exports->find(etag) : nullptr;
  if (!jpeg) {
    // A bounded number decoded at once (--thumbnail-builds): a burst of widths or cameras is
    // answered 503 with Retry-After rather than queued without bound.
    std::optional<MediaPool::Slot> slot;
    if (ctx.media) {
      slot = ctx.media->reserve_thumbnail();
      if (!slot) throw ApiError(ApiErrc::unavailable, "too many thumbnails are being built; retry shortly");
    }
    const auto codec = plan.codec();  // 422 before anything is read, if outside the media limits
    Clip clip = co_await read_clip(ctx.disks, plan, *key_pts, *key_pts + 1, true);
    const storage::PlaybackGop* key = nullptr;
    for (const auto& g : clip.gops) {
      if (!g->damaged && !g->frames.empty()) {
        key = g.get();
        break;
      }
    }
    if (!key) throw ApiError(ApiErrc::not_found, "no readable keyframe at that time");
    jpeg = co_await run_media(ctx.media, [&] {
      return std::make_shared<const std::vector<std::byte>>(
          media::jpeg_of_keyframe(codec, key->frames.front().payload, width));
    });
    if (ctx.exports) ctx.exports->put(etag, jpeg);
  }
  co_return media_reply(req, std::move(jpeg), etag, "image/jpeg", fixed_time(q, "at"));
}

}  // namespace vigil::server
