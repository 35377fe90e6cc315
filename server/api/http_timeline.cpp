#include "server/api/http_timeline.hpp"

#include <boost/json.hpp>
#include <chrono>
#include <ctime>
#include <pqxx/pqxx>

#include "catalog/camera_rows.hpp"
#include "catalog/timeline_rows.hpp"
#include "server/disks/disk_set.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

constexpr std::int64_t kMaxRangeUs = 400LL * 86'400'000'000;  // a bit over a year per query

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string utc_date(std::int64_t day_start_us) {
  std::time_t t = static_cast<std::time_t>(day_start_us / 1'000'000);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// The runs, gaps and days of one track of a camera.
json::object track_json(const catalog::CameraTimeline& t) {
  json::array runs, gaps, days;
  for (const auto& r : t.runs) {
    json::object o{{"start_us", r.start_us}, {"end_us", r.end_us}, {"segments", r.segments}, {"bytes", r.bytes}};
    // Still being written: it ends at the last durable cycle and grows.
    if (r.open) o["open"] = true;
    runs.push_back(std::move(o));
  }
  for (const auto& g : t.gaps) {
    json::object o{{"start_us", g.start_us}, {"end_us", g.end_us}, {"reason", g.reason}};
    if (!g.detail.empty()) o["detail"] = g.detail;
    gaps.push_back(std::move(o));
  }
  for (const auto& d : t.days) {
    days.push_back(json::object{{"day", utc_date(d.day_start_us)},
                                {"day_start_us", d.day_start_us},
                                {"recorded_s", static_cast<double>(d.recorded_us) / 1e6},
                                {"gaps", d.gaps}});
  }
  return json::object{{"recording", t.recording},
                      {"truncated", t.truncated},
                      {"runs", std::move(runs)},
                      {"gaps", std::move(gaps)},
                      {"days", std::move(days)}};
}

// A camera's timeline: its main video's runs and gaps, and its sub stream's as `substream` when
// it has one (SUB: the camera's sub-stream timeline, if asked and found).
json::object to_json(const catalog::CameraTimeline& t, const catalog::CameraTimeline* sub) {
  json::object o{{"camera", t.camera}};
  for (auto& [k, v] : track_json(t)) o[k] = v;
  if (sub && sub->has_track) o["substream"] = track_json(*sub);
  return o;
}

}  // namespace

boost::asio::awaitable<HttpResponse> cameras_route(const RouteContext& ctx, const HttpRequest& req) {
  auto rows = co_await ctx.catalog.run([](pqxx::connection& c) {
    pqxx::work tx(c);
    return catalog::list_cameras(tx);
  });
  json::array cams;
  for (const auto& r : rows) {
    if (!sees(ctx, r.name)) continue;  // a token for some cameras lists only them
    // The camera URL may carry credentials: it is not shown, only whether vigild pulls it.
    cams.push_back(json::object{{"name", r.name},
                                {"enabled", r.enabled},
                                {"pulled", r.url.has_value()},
                                {"state", r.last_stream_state.empty() ? "never recorded" : r.last_stream_state},
                                {"last_end_us", r.last_end_us}});
  }
  co_return json_response(req, http::status::ok, json::serialize(json::object{{"cameras", std::move(cams)}}));
}

boost::asio::awaitable<HttpResponse> timeline_route(const RouteContext& ctx, const HttpRequest& req,
                                                    const QueryParams& q, const std::optional<std::string>& camera) {
  const auto now = now_us();
  catalog::TimelineQuery query;
  query.from_us = q.time("from", now);
  query.to_us = q.get("to") ? q.time("to", now) : now;
  if (query.to_us <= query.from_us) throw BadRequest("'to' must be after 'from'");
  if (query.to_us - query.from_us > kMaxRangeUs) throw BadRequest("the range is longer than 400 days: ask in pieces");
  if (auto m = q.number("merge", 0, 3600)) query.merge_us = static_cast<std::int64_t>(*m * 1e6);
  if (auto l = q.number("limit", 1, 10'000)) query.max_items = static_cast<std::size_t>(*l);
  if (camera) {
    if (!catalog::is_valid_camera_name(*camera)) throw BadRequest("camera name is not valid");
    query.cameras = {*camera};
  } else {
    query.cameras = q.cameras();
  }
  // What this node recorded up to its last durable cycle, fresher than the catalog's rows.
  if (ctx.disks) query.fresher = ctx.disks->recent().timeline_segments(query.cameras, query.from_us, query.to_us);
  // The main video's timeline, then the sub streams' (one snapshot: both see the same rows).
  // Named, not a structured binding: clang 14 (the asan lane) cannot capture bindings in a lambda.
  auto timelines = co_await ctx.catalog.run([&query](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    auto main = catalog::timeline(tx, query);
    auto sub_query = query;
    sub_query.role = TrackRole::sub;
    auto sub = catalog::timeline(tx, sub_query);
    return std::pair{std::move(main), std::move(sub)};
  });
  auto& result = timelines.first;
  const auto& subs = timelines.second;
  const auto sub_of = [&subs](const std::string& camera) -> const catalog::CameraTimeline* {
    for (const auto& s : subs) {
      if (s.camera == camera) return &s;
    }
    return nullptr;
  };
  if (camera && result.empty()) {
    co_return json_response(req, http::status::not_found,
                            json::serialize(json::object{{"error", "no camera named '" + *camera + "'"}}));
  }
  json::object body{{"from_us", query.from_us},
                    {"to_us", query.to_us},
                    {"merge_s", static_cast<double>(query.merge_us) / 1e6}};
  if (camera) {
    auto one = to_json(result.front(), sub_of(result.front().camera));
    for (auto& [k, v] : one) body[k] = v;
  } else {
    json::array cams;
    for (const auto& t : result) {
      if (sees(ctx, t.camera)) cams.push_back(to_json(t, sub_of(t.camera)));  // a token for some cameras: only them
    }
    body["cameras"] = std::move(cams);
  }
  co_return json_response(req, http::status::ok, json::serialize(body));
}

}  // namespace vigil::server
