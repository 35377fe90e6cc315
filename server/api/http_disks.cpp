#include "server/api/http_disks.hpp"

#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <pqxx/pqxx>

#include "catalog/admission_rows.hpp"
#include "catalog/camera_rows.hpp"
#include "server/net/http_json.hpp"
#include "server/disks/disk_set.hpp"
#include "storage/memory_lock.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

constexpr std::int64_t kMaxRangeUs = 400LL * 86'400'000'000;
constexpr std::int64_t kMaxTimeUs = 100'000'000'000LL * 1'000'000;

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json::value opt_json(const std::optional<std::int64_t>& v) { return v ? json::value(*v) : json::value(nullptr); }

// The API's rates are whole bits/s.
std::int64_t bps(Rate r) { return std::llround(r.bps()); }

// What the network thread can see of one disk without waiting on its IO thread.
struct DiskSnapshot {
  std::int64_t disk_id = 0, volume_id = 0;
  std::string volume_path;
  json::object live;
};

DiskSnapshot snapshot(Disk& d) {
  DiskSnapshot s;
  s.disk_id = d.disk_id;
  if (d.volume) {
    s.volume_id = d.volume->volume_id;
    s.volume_path = d.volume->path.string();
  }
  std::vector<admission::StreamDemand> admitted;
  {
    std::lock_guard lock(d.mu);  // only for the copy
    if (d.io) DiskSet::refresh_measured(d);
    admitted = d.admitted;
  }
  json::array streams;
  for (const auto& a : admitted) {
    json::object o{{"id", a.id},
                   {"kind", a.write ? "recording" : "playback"},
                   {"peak_rate_bps", bps(a.peak_rate)},
                   {"average_rate_bps", bps(a.average_rate > Rate{} ? a.average_rate : a.peak_rate)}};
    if (a.measured_mean > Rate{}) {
      o["measured_mean_bps"] = bps(a.measured_mean);
      o["measured_stddev_bps"] = bps(a.measured_stddev);
      o["measured_io_ms"] = a.measured_io_s * 1e3;
    }
    streams.push_back(std::move(o));
  }
  std::size_t recordings = 0;
  for (const auto& a : admitted) recordings += a.write ? 1 : 0;
  auto& live = s.live;
  live["admitted"] = json::object{{"count", admitted.size()},
                                  {"recording", recordings},
                                  {"playback", admitted.size() - recordings},
                                  {"streams", std::move(streams)}};
  live["cycles"] = d.io ? d.io->cycles() : 0;
  live["misses"] = d.io ? d.io->misses() : 0;
  live["model_optimistic"] = d.io ? d.io->model_optimistic() : false;
  live["model_calibration"] = d.io ? d.io->model_calibration() : 1.0;
  live["model_scale"] = d.io ? d.io->model_scale() : 1.0;  // 1: as profiled; >1: recalibrated by the online check
  live["model_recalibrations"] = d.io ? d.io->model_recalibrations() : 0;
  live["io_priority"] = d.io && d.io->io_realtime() ? "realtime" : "normal";
  live["io_priority_detail"] = d.io ? d.io->io_priority_detail() : std::string();
  live["io_buffers_locked"] = storage::memory_lock::describe(storage::memory_lock::stats());
  live["free_bytes"] =
      d.io && d.volume ? static_cast<std::int64_t>(d.io->free_extents() * d.volume->volume->extent_bytes()) : 0;
  live["no_room"] = d.no_room.load(std::memory_order_relaxed);
  // Taken out of service at runtime after repeated write or flush failures (null while healthy).
  if (d.io && d.io->volume_failed()) live["failed"] = d.io->failure_reason();
  else live["failed"] = nullptr;
  const auto* adm = d.io ? d.io->admission() : nullptr;
  if (!adm) {
    live["policy"] = nullptr;
    live["admission"] = "not profiled: no stream can be admitted (run `vigil profile`)";
    return s;
  }
  const auto& cfg = adm->config();
  const double busy = adm->predicted_busy(admitted);
  const double budget = adm->budget_s();
  live["policy"] = admission::policy_catalog_name(cfg.policy);
  live["policy_variant"] = admission::policy_name(cfg.policy);
  live["cycle_s"] = cfg.cycle_s;
  live["r_rt"] = cfg.r_rt;
  live["predicted_busy_s"] = busy;
  live["predicted_busy_share"] = cfg.cycle_s > 0 ? busy / cfg.cycle_s : 0.0;
  live["real_time_budget_s"] = budget;
  live["slack_s"] = budget - busy;
  // The largest rate a new stream of each kind could be admitted at now (0 while the model is optimistic).
  const Rate probe = Rate::from_Bps(1);
  const admission::StreamDemand rec{.write = true, .peak_rate = probe, .average_rate = probe},
      play{.write = false, .peak_rate = probe, .average_rate = probe};
  live["max_new_rate_bps"] = json::object{{"recording", bps(adm->decide(admitted, rec).max_rate)},
                                          {"playback", bps(adm->decide(admitted, play).max_rate)}};
  return s;
}

boost::asio::awaitable<HttpResponse> list_disks(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q) {
  allow_params(q, {});
  std::vector<DiskSnapshot> snaps;
  if (ctx.disks) {
    for (const auto& d : ctx.disks->disks()) snaps.push_back(snapshot(*d));
  }
  std::vector<std::optional<catalog::DiskRow>> rows;
  co_await ctx.catalog.run([&snaps, &rows](pqxx::connection& c) {
    pqxx::work tx(c);
    for (const auto& s : snaps) rows.push_back(catalog::disk_row(tx, s.disk_id));
  });
  json::array disks;
  for (std::size_t i = 0; i < snaps.size(); ++i) {
    auto& s = snaps[i];
    json::object o{{"id", s.disk_id}, {"volume", json::object{{"id", s.volume_id}, {"path", s.volume_path}}}};
    if (const auto& r = rows[i]) {
      o["node"] = r->node;
      o["device_path"] = r->device_path;
      o["state"] = r->state;
      o["capacity_bytes"] = r->capacity_bytes;
      if (r->profile_id) {
        o["profile"] = json::object{{"id", *r->profile_id},
                                    {"measured_at_us", opt_json(r->profile_measured_at_us)},
                                    {"url", "/api/v1/disks/" + std::to_string(s.disk_id) + "/profile"}};
      } else {
        o["profile"] = "not profiled";
      }
    }
    for (auto& [k, v] : s.live) o[k] = std::move(v);
    disks.push_back(std::move(o));
  }
  co_return json_response(req, http::status::ok, json::serialize(json::object{{"disks", std::move(disks)}}));
}

boost::asio::awaitable<HttpResponse> disk_profile(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                                  std::int64_t disk_id) {
  allow_params(q, {});
  auto p = co_await ctx.catalog.run([&disk_id](pqxx::connection& c) {
    pqxx::work tx(c);
    return catalog::stored_profile(tx, disk_id);
  });
  if (!p) co_return json_error(req, http::status::not_found, "no profile stored for disk " + std::to_string(disk_id));
  json::object body{{"id", p->id},
                    {"disk_id", p->disk_id},
                    {"measured_at_us", p->measured_at_us},
                    {"profile", json::parse(p->json)}};
  co_return json_response(req, http::status::ok, json::serialize(body));
}

json::object decision_json(const catalog::DecisionRow& d) {
  return json::object{{"id", d.id},
                      {"decided_at_us", d.decided_at_us},
                      {"disk_id", opt_json(d.disk_id)},
                      {"stream_id", opt_json(d.stream_id)},
                      {"camera", d.camera ? json::value(*d.camera) : json::value(nullptr)},
                      {"policy", d.policy},
                      {"outcome", d.outcome},
                      {"requested_rate_bps", d.requested_rate_bps},
                      {"admitted_rate_bps", opt_json(d.admitted_rate_bps)},
                      {"max_admissible_rate_bps", opt_json(d.max_admissible_rate_bps)},
                      {"cycle_us", d.cycle_us},
                      {"predicted_busy_us", opt_json(d.predicted_busy_us)},
                      {"reason", d.reason ? json::value(*d.reason) : json::value(nullptr)},
                      {"details", json::parse(d.details_json)}};
}

}  // namespace

boost::asio::awaitable<HttpResponse> disks_route(const RouteContext& ctx, const HttpRequest& req,
                                                 const QueryParams& q) {
  const auto& seg = q.segments();
  const bool get = req.method() == http::verb::get || req.method() == http::verb::head;
  if (seg.size() == 3) {
    if (!get) co_return method_not_allowed(req, "GET, HEAD");
    co_return co_await list_disks(ctx, req, q);
  }
  if (seg.size() == 5 && seg[4] == "profile") {
    if (!get) co_return method_not_allowed(req, "GET, HEAD");
    co_return co_await disk_profile(ctx, req, q, positive_id(seg[3], "disk id"));
  }
  co_return json_error(req, http::status::not_found, "no such resource");
}

boost::asio::awaitable<HttpResponse> decisions_route(const RouteContext& ctx, const HttpRequest& req,
                                                     const QueryParams& q) {
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    co_return method_not_allowed(req, "GET, HEAD");
  }
  allow_params(q, {"from", "to", "disk", "camera", "outcome", "limit", "cursor"});
  const auto now = now_us();
  catalog::DecisionQuery query;
  query.from_us = q.time("from", now);
  query.to_us = q.get("to") ? q.time("to", now) : now;
  if (query.from_us < -kMaxTimeUs || query.to_us > kMaxTimeUs) throw BadRequest("the range is out of bounds");
  if (query.to_us < query.from_us) throw BadRequest("'to' must not be before 'from'");
  if (query.to_us - query.from_us > kMaxRangeUs) throw BadRequest("the range is longer than 400 days: ask in pieces");
  if (const auto d = q.get("disk")) query.disk_id = positive_id(*d, "parameter 'disk'");
  if (const auto c = q.get("camera")) {
    if (!catalog::is_valid_camera_name(*c)) throw BadRequest("parameter 'camera' is not a valid camera name");
    query.camera = *c;
  }
  if (const auto o = q.get("outcome")) {
    if (*o != "admitted" && *o != "refused") throw BadRequest("parameter 'outcome' must be admitted or refused");
    query.outcome = *o;
  }
  if (const auto l = q.number("limit", 1, 1000)) {
    if (std::floor(*l) != *l) throw BadRequest("parameter 'limit' must be an integer from 1 to 1000");
    query.limit = static_cast<std::size_t>(*l);
  }
  if (const auto c = q.get("cursor")) {
    const auto [t, id] = parse_cursor_pair(*c);
    query.after = catalog::DecisionCursor{t, id};
  }
  auto page = co_await ctx.catalog.run([&query](pqxx::connection& c) {
    pqxx::work tx(c);
    return catalog::find_decisions(tx, query);
  });
  json::array rows;
  for (const auto& d : page.rows) rows.push_back(decision_json(d));
  json::object body{{"from_us", query.from_us}, {"to_us", query.to_us}, {"decisions", std::move(rows)}};
  body["next"] = page.next ? json::value(std::to_string(page.next->decided_at_us) + ":" + std::to_string(page.next->id))
                           : json::value(nullptr);
  co_return json_response(req, http::status::ok, json::serialize(body));
}

}  // namespace vigil::server
