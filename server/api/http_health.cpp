#include "server/api/http_health.hpp"

#include <boost/json.hpp>
#include <pqxx/pqxx>

#include "catalog/migrator.hpp"
#include "server/core/catalog_health.hpp"
#include "server/core/vigild_metrics.hpp"
#include "server/disks/disk_health.hpp"
#include "server/disks/disk_set.hpp"
#include "server/recording/camera_status.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

enum class Level { ok, degraded, down };
const char* name(Level l) { return l == Level::ok ? "ok" : l == Level::degraded ? "degraded" : "down"; }

// A probe answer older than this means the probe thread itself is behind (its deadline is 2 s,
// its interval 1 s): the catalog's answer is stale.
constexpr double kStaleProbeS = 5;
// Down cameras named in the answer, at most: the counts say how many in all.
constexpr std::size_t kDownListed = 20;

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// The catalog: the probe's last answer (ok; degraded when that answer is stale; down), and the
// "database" object /healthz has always had.
boost::asio::awaitable<Level> catalog_part(const RouteContext& ctx, json::object& db, json::object& part) {
  bool ok = false;
  double age_s = 0;
  if (ctx.health) {
    const auto h = ctx.health->status();
    ok = h.ok;
    age_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - h.checked_at).count();
    if (ok) db["schema_version"] = h.schema_version;
    else db["error"] = h.error;
    part["checked_age_s"] = age_s;
  } else {
    try {
      const int version =
          co_await ctx.catalog.run([](pqxx::connection& conn) { return catalog::current_version(conn); });
      ok = true;
      db["schema_version"] = version;
    } catch (const std::exception& e) {
      db["error"] = first_line(e.what());
    }
  }
  db["status"] = ok ? "ok" : "error";
  const Level level = !ok ? Level::down : age_s > kStaleProbeS ? Level::degraded : Level::ok;
  part["status"] = name(level);
  if (!ok) part["error"] = db["error"];
  if (level == Level::degraded) part["error"] = "the probe's last answer is stale";
  co_return level;
}

// The disks: each volume's state and IO thread; unavailable volumes; down when none can record.
Level disks_part(const RouteContext& ctx, json::array& unavailable, json::object& part) {
  json::array list;
  int configured = 0, recordable = 0;
  bool degraded = false;
  if (ctx.unavailable_volumes) {
    for (const auto& v : *ctx.unavailable_volumes) {
      ++configured;
      degraded = true;
      const auto why = first_line(v.reason);
      unavailable.push_back(json::object{{"path", v.path.string()}, {"error", why}});
      list.push_back(
          json::object{{"volume", json::object{{"path", v.path.string()}}}, {"state", "unavailable"}, {"detail", why}});
    }
  }
  if (ctx.disks) {
    const auto now = std::chrono::steady_clock::now();
    for (const auto& d : ctx.disks->disks()) {
      ++configured;
      const auto h = disk_health(*d, now);
      if (h.can_record()) ++recordable;
      else degraded = true;
      // Volumes taken out of service at runtime, after repeated write or flush failures.
      if (h.state == DiskState::failed) {
        unavailable.push_back(json::object{{"path", d->volume->path.string()}, {"error", h.detail}});
      }
      json::object o{{"disk_id", d->disk_id},
                     {"volume", json::object{{"id", d->volume->volume_id}, {"path", d->volume->path.string()}}},
                     {"state", kDiskStates[static_cast<std::size_t>(h.state)]},
                     {"io_thread", json::object{{"cycles", h.cycles},
                                                {"last_cycle_age_s", h.last_cycle_age_s},
                                                {"alive", h.io_alive}}}};
      if (!h.detail.empty()) o["detail"] = h.detail;
      list.push_back(std::move(o));
    }
  }
  // No volume configured: a catalog-only node has nothing to be unhealthy about.
  const Level level = configured > 0 && recordable == 0 ? Level::down : degraded ? Level::degraded : Level::ok;
  part = json::object{{"status", name(level)},
                      {"configured", configured},
                      {"recording_possible", recordable},
                      {"volumes", std::move(list)}};
  return level;
}

// The pulled cameras: degraded when some are down (reconnecting), down when every enabled one is.
Level cameras_part(const RouteContext& ctx, json::object& part) {
  const auto h = ctx.cameras ? ctx.cameras->health(kDownListed) : CamerasHealth{};
  const Level level = h.down == 0 ? Level::ok : h.down == h.enabled ? Level::down : Level::degraded;
  json::array down;
  for (const auto& c : h.down_cameras) down.push_back(json::object{{"name", c.name}, {"reason", c.reason}});
  part = json::object{{"status", name(level)},          {"pulling", h.pulling},   {"enabled", h.enabled},
                      {"recording", h.recording},       {"starting", h.starting}, {"down", h.down},
                      {"down_cameras", std::move(down)}};
  return level;
}

}  // namespace

boost::asio::awaitable<HttpResponse> healthz(const RouteContext& ctx, const HttpRequest& req) {
  json::object db{{"mode", ctx.database_mode}}, catalog, disks, cameras;
  const Level c = co_await catalog_part(ctx, db, catalog);
  json::array unavailable;
  const Level d = disks_part(ctx, unavailable, disks);
  const Level k = cameras_part(ctx, cameras);
  // Down cameras leave the node degraded, not down: what it can do, it does.
  const Level node = c == Level::down || d == Level::down                 ? Level::down
                     : c != Level::ok || d != Level::ok || k != Level::ok ? Level::degraded
                                                                          : Level::ok;
  json::object body{{"status", name(node)},
                    {"version", VIGIL_VERSION},
                    {"catalog", std::move(catalog)},
                    {"disks", std::move(disks)},
                    {"cameras", std::move(cameras)},
                    {"database", std::move(db)},
                    {"volumes", json::object{{"unavailable", std::move(unavailable)}}}};
  co_return json_response(req, node == Level::down ? http::status::service_unavailable : http::status::ok,
                          json::serialize(body));
}

}  // namespace vigil::server
