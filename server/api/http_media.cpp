#include "server/api/http_media.hpp"

#include <boost/json.hpp>
#include <chrono>
#include <ctime>

#include "common/log.hpp"
#include "common/thumbnail.hpp"
#include "catalog/camera_rows.hpp"
#include "server/media/clip_source.hpp"
#include "server/media/export_cache.hpp"
#include "server/media/mp4_export.hpp"
#include "server/net/http_range.hpp"

namespace http = boost::beast::http;

namespace vigil::server {
namespace {

constexpr std::int64_t kThumbnailLookbackUs = 600'000'000;

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
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

boost::asio::awaitable<HttpReply> export_route(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                               const std::string& camera) {
  if (!catalog::is_valid_camera_name(camera)) throw BadRequest("camera name is not valid");
  const auto now = now_us();
  const std::int64_t from_us = q.time("from", now);
  const std::int64_t to_us = q.get("to") ? q.time("to", now) : now;
  if (to_us <= from_us) throw BadRequest("'to' must be after 'from'");
  if (to_us - from_us > kMaxMediaRangeUs) throw BadRequest("the range is longer than 24 hours: export in parts");
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
  ClipPlan plan = co_await plan_clip(ctx.catalog, ctx.disks, camera, from_us, to_us, kMaxExportBytes);
  const std::string etag =
      plan.etag(keyframes ? (reverse ? "mp4-keys-rev|" : "mp4-keys|") + std::to_string(rate) : std::string("mp4"));
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
    mp4 = build_mp4(plan, clip, Mp4Rendition{.keyframes_only = keyframes, .rate = rate, .reverse = reverse});
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
    const std::string name = camera + "-" + utc_stamp(plan.from_us) + ".mp4";
    m->set(http::field::content_disposition,
           std::string(download && *download == 1 ? "attachment" : "inline") + "; filename=\"" + name + "\"");
    m->set("X-Vigil-Range-Us", std::to_string(plan.from_us) + "-" + std::to_string(plan.to_us));
    m->set("X-Vigil-Cache", cached ? "hit" : "miss");
  }
  co_return reply;
}

boost::asio::awaitable<HttpReply> thumbnail_route(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                                  const std::string& camera) {
  if (!catalog::is_valid_camera_name(camera)) throw BadRequest("camera name is not valid");
  const std::int64_t at_us = q.time("at", now_us());
  const int width = static_cast<int>(q.number("width", 16, 1920).value_or(320));
  // The keyframe at or before AT, looking back at most kThumbnailLookbackUs (AT may fall in a
  // gap or after the recording's end): planned from the GOP index, and only it is read.
  ClipPlan plan = co_await plan_clip(ctx.catalog, ctx.disks, camera, at_us - kThumbnailLookbackUs, at_us + 1, ~0ull);
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
    Clip clip = co_await read_clip(ctx.disks, plan, *key_pts, *key_pts + 1, true);
    const storage::PlaybackGop* key = nullptr;
    for (const auto& g : clip.gops) {
      if (!g->damaged && !g->frames.empty()) {
        key = g.get();
        break;
      }
    }
    if (!key) throw ApiError(ApiErrc::not_found, "no readable keyframe at that time");
    jpeg = std::make_shared<const std::vector<std::byte>>(
        media::jpeg_of_keyframe(plan.codec(), key->frames.front().payload, width));
    if (ctx.exports) ctx.exports->put(etag, jpeg);
  }
  co_return media_reply(req, std::move(jpeg), etag, "image/jpeg", fixed_time(q, "at"));
}

}  // namespace vigil::server
