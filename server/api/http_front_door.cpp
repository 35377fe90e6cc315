#include "server/api/http_front_door.hpp"

#include <boost/json.hpp>
#include <charconv>
#include <chrono>
#include <pqxx/pqxx>

#include "catalog/camera_rows.hpp"
#include "catalog/front_door_rows.hpp"
#include "common/log.hpp"
#include "server/api/http_media.hpp"
#include "server/disks/disk_set.hpp"
#include "server/net/api_error.hpp"
#include "server/net/http_forward.hpp"

namespace vigil::server {
namespace {

// A thumbnail is the keyframe at or before its instant, looked for this far back (http_media.cpp).
constexpr std::int64_t kThumbnailLookbackUs = 600'000'000;

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// An integer parameter in microseconds; nullopt when absent or not one (the route says why).
std::optional<std::int64_t> micros(const QueryParams& q, std::string_view key) {
  const auto v = q.get(key);
  if (!v || v->empty()) return std::nullopt;
  std::int64_t out = 0;
  const auto* end = v->data() + v->size();
  const auto r = std::from_chars(v->data(), end, out);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return out;
}

struct Lookup {
  enum class By { footage, owner } by = By::footage;
  std::int64_t from_us = 0, to_us = 0;
  catalog::HolderEnd end = catalog::HolderEnd::first;
};

// What decides who answers PATH_TAIL; nullopt: the catalog's route, answered here.
std::optional<Lookup> lookup_for(const QueryParams& q, const std::string& path_tail) {
  if (path_tail == "export.mp4") {
    const auto r = media_range(q);  // a bad range is the local route's 400
    return Lookup{.from_us = r.from_us, .to_us = r.to_us};
  }
  if (path_tail == "hls/seg.m4s") {
    const auto t0 = micros(q, "t0"), t1 = micros(q, "t1");
    if (!t0 || !t1 || *t1 <= *t0) return std::nullopt;
    return Lookup{.from_us = *t0, .to_us = *t1};
  }
  if (path_tail == "thumbnail.jpg") {
    const std::int64_t at = q.time("at", now_us());
    return Lookup{.from_us = at - kThumbnailLookbackUs, .to_us = at + 1, .end = catalog::HolderEnd::last};
  }
  if (path_tail == "live.m3u8" || path_tail == "live/init.mp4" || path_tail == "live/seg.m4s") {
    return Lookup{.by = Lookup::By::owner};
  }
  return std::nullopt;
}

// "; the archive holds no copy of its footage from_us=… to_us=… (…)": what of LOOKUP's range only
// NODE's volumes hold, for the 503 of a down node, so a viewer knows what to ask for instead.
boost::asio::awaitable<std::string> missing_from_archive(const RouteContext& ctx, const Track& track,
                                                         const Lookup& lookup, const std::string& node,
                                                         const std::string& reader) {
  const auto spans = co_await ctx.catalog.run([&](pqxx::connection& c) {
    pqxx::work tx(c);
    return catalog::volume_only_spans(tx, track, lookup.from_us, lookup.to_us, node, reader);
  });
  std::string out;
  for (const auto& s : spans) {
    out += (out.empty() ? "; the archive holds no copy of its footage " : ", ") + std::string("from_us=") +
           std::to_string(s.from_us) + " to_us=" + std::to_string(s.to_us) +
           (s.open ? " (the segment it was still writing: never copied)" : " (not copied yet)");
  }
  co_return out;
}

}  // namespace

boost::asio::awaitable<std::optional<HttpReply>> answer_elsewhere(const RouteContext& ctx, const HttpRequest& req,
                                                                  const QueryParams& q, const std::string& camera,
                                                                  const std::string& path_tail) {
  if (ctx.node.empty() || !req[kForwardedByField].empty() || !catalog::is_valid_camera_name(camera)) {
    co_return std::nullopt;
  }
  const auto lookup = lookup_for(q, path_tail);
  if (!lookup) co_return std::nullopt;
  const Track track = q.video_track(camera);
  const bool whole_range = path_tail == "export.mp4";  // one MP4 of every segment in the range
  // With an archive tier this node reads a down node's copied segments itself: they are no
  // node's to serve (catalog/copy_stand_in.hpp), and a range only they cover is answered here.
  const std::string reader = ctx.disks ? ctx.disks->archive_reader_node() : std::string();
  std::vector<catalog::HolderRun> runs;
  const auto holder = co_await ctx.catalog.run([&](pqxx::connection& c) {
    pqxx::work tx(c);
    if (whole_range) runs = catalog::media_holder_runs(tx, track, lookup->from_us, lookup->to_us, reader);
    return lookup->by == Lookup::By::owner
               ? catalog::camera_owner(tx, camera)
               : catalog::media_holder(tx, track, lookup->from_us, lookup->to_us, lookup->end, reader);
  });
  if (runs.size() > 1) {
    // No node reads another's volume: an export across a failover is asked in its parts.
    std::string parts;
    for (const auto& r : runs) {
      parts += (parts.empty() ? "" : ", ") + std::string("node '") + r.node +
               "' from_us=" + std::to_string(std::max(r.from_us, lookup->from_us)) +
               " to_us=" + std::to_string(std::min(r.to_us, lookup->to_us));
    }
    throw ApiError(ApiErrc::conflict,
                   "the range's footage is on the volumes of several nodes (a failover): export each node's part "
                   "on its own: " +
                       parts);
  }
  if (!holder || holder->node == ctx.node) co_return std::nullopt;
  std::string what = "that footage is on a volume of node '" + holder->node + "'";
  if (lookup->by == Lookup::By::owner) what = "camera '" + camera + "' records on node '" + holder->node + "'";
  if (!holder->live) {
    std::string missing;
    if (lookup->by == Lookup::By::footage && !reader.empty()) {
      missing = co_await missing_from_archive(ctx, track, *lookup, holder->node, reader);
    }
    throw ApiError(ApiErrc::unavailable, what + ", and node '" + holder->node + "' is down (its lease expired)" +
                                             missing + ": it is served again once that node is back");
  }
  if (holder->http_address.empty()) {
    throw ApiError(ApiErrc::unavailable,
                   what + ", which does not advertise its HTTP address (vigild --advertise): ask that node");
  }
  std::string failed;
  const ForwardOptions options{.from_node = ctx.node};
  try {
    HttpReply reply = co_await forward_http(holder->http_address, req, options);
    co_return reply;
  } catch (const ForwardFailed& e) {
    failed = e.what();
  }
  log::warn("front door: the node holding a request could not answer",
            {{"node", holder->node}, {"target", loggable_target(req)}, {"error", failed}});
  throw ApiError(ApiErrc::unavailable, what + ", which did not answer: " + failed);
}

}  // namespace vigil::server
