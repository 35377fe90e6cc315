#include "server/api/http_cameras.hpp"

#include <boost/json.hpp>
#include <pqxx/pqxx>

#include "catalog/camera_admin.hpp"
#include "catalog/camera_rows.hpp"
#include "server/net/http_json.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

constexpr std::size_t kUrlBytes = 2048;
constexpr std::size_t kDetailStreams = 10;

json::value opt_json(const std::optional<std::int64_t>& v) { return v ? json::value(*v) : json::value(nullptr); }

std::string checked_name(const std::string& name) {
  if (!catalog::is_valid_camera_name(name)) {
    throw BadRequest(
        "camera name is not valid: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit");
  }
  return name;
}

std::optional<std::string> checked_url(const json::object& o, std::string_view field) {
  auto url = string_field(o, field, kUrlBytes);
  if (url) {
    try {
      catalog::check_camera_url(*url);
    } catch (const catalog::CatalogError& e) {
      throw BadRequest("field '" + std::string(field) + "': " + e.what());
    }
  }
  return url;
}

json::object stream_json(const catalog::StreamInfo& s) {
  json::object o{{"id", s.id},
                 {"state", s.state},
                 {"role", s.role},
                 {"media_kind", s.media_kind},
                 {"codec", s.codec},
                 {"disk_id", opt_json(s.disk_id)},
                 {"declared_rate_bps", s.declared_rate_bps},
                 {"admitted_rate_bps", opt_json(s.admitted_rate_bps)},
                 {"measured_rate_bps", opt_json(s.measured_rate_bps)},
                 {"started_at_us", s.started_at_us},
                 {"ended_at_us", opt_json(s.ended_at_us)},
                 {"segments", s.segments},
                 {"bytes", s.bytes},
                 {"first_us", opt_json(s.first_us)},
                 {"last_us", opt_json(s.last_us)}};
  if (s.width > 0) {
    o["width"] = s.width;
    o["height"] = s.height;
  }
  if (s.sample_rate_hz > 0) o["sample_rate_hz"] = s.sample_rate_hz;  // audio, as recorded
  if (s.channels > 0) o["channels"] = s.channels;
  return o;
}

json::object camera_json(const catalog::CameraDetails& c, const std::vector<catalog::StreamInfo>& streams) {
  json::array arr;
  for (const auto& s : streams) arr.push_back(stream_json(s));
  return json::object{{"id", c.id},
                      {"name", c.name},
                      {"enabled", c.enabled},
                      {"pulled", c.url.has_value()},
                      // Credentials in the URL are never shown.
                      {"url", c.url ? json::value(redact_url(*c.url)) : json::value(nullptr)},
                      {"substream_url",
                       c.substream_url ? json::value(redact_url(*c.substream_url)) : json::value(nullptr)},
                      {"retention_days", c.retention_days ? json::value(*c.retention_days) : json::value(nullptr)},
                      {"retention_bytes", c.retention_bytes ? json::value(*c.retention_bytes) : json::value(nullptr)},
                      {"recorded_bytes", c.recorded_bytes},
                      {"declared_rate_bps",
                       c.declared_rate_bps ? json::value(*c.declared_rate_bps) : json::value(nullptr)},
                      {"archive_after_s", c.archive_after_s ? json::value(*c.archive_after_s) : json::value(nullptr)},
                      {"archive_retention_days",
                       c.archive_retention_days ? json::value(*c.archive_retention_days) : json::value(nullptr)},
                      {"created_at_us", c.created_at_us},
                      {"state", c.state},
                      {"last_end_us", c.last_end_us},
                      {"stream_count", c.streams},
                      {"streams", std::move(arr)}};
}

boost::asio::awaitable<HttpResponse> get_camera(const RouteContext& ctx, const HttpRequest& req,
                                                const std::string& name) {
  std::optional<catalog::CameraDetails> cam;
  std::vector<catalog::StreamInfo> streams;
  co_await ctx.catalog.run([&name, &cam, &streams](pqxx::connection& c) {
    pqxx::work tx(c);
    cam = catalog::camera_details(tx, name);
    if (cam) streams = catalog::camera_streams(tx, name, kDetailStreams).value_or(streams);
  });
  if (!cam) co_return json_error(req, http::status::not_found, "no camera named '" + name + "'");
  co_return json_response(req, http::status::ok, json::serialize(camera_json(*cam, streams)));
}

boost::asio::awaitable<HttpResponse> patch_camera(const RouteContext& ctx, const HttpRequest& req,
                                                  const std::string& name) {
  const auto body = json_object_body(req, {"enabled", "url", "substream_url", "retention_days", "retention_bytes",
                                           "declared_rate_bps", "archive_after_s", "archive_retention_days"});
  if (body.empty()) {
    throw BadRequest(
        "nothing to change: give enabled, url, substream_url, retention_days, retention_bytes, declared_rate_bps, "
        "archive_after_s or archive_retention_days");
  }
  catalog::CameraChange change;
  change.enabled = bool_field(body, "enabled");
  if (is_null_field(body, "declared_rate_bps")) {
    change.declared_rate_bps = std::optional<std::int64_t>();
  } else if (auto r =
                 int_field(body, "declared_rate_bps", catalog::kMinDeclaredRateBps, catalog::kMaxDeclaredRateBps)) {
    change.declared_rate_bps = *r;
  }
  if (is_null_field(body, "url")) {
    change.url = std::optional<std::string>();
  } else if (auto u = checked_url(body, "url")) {
    change.url = u;
  }
  if (is_null_field(body, "substream_url")) {
    change.substream_url = std::optional<std::string>();
  } else if (auto u = checked_url(body, "substream_url")) {
    change.substream_url = u;
  }
  if (is_null_field(body, "retention_days")) {
    change.retention_days = std::optional<int>();
  } else if (auto d = int_field(body, "retention_days", 1, catalog::kMaxRetentionDays)) {
    change.retention_days = static_cast<int>(*d);
  }
  if (is_null_field(body, "retention_bytes")) {
    change.retention_bytes = std::optional<std::int64_t>();
  } else if (auto b = int_field(body, "retention_bytes", catalog::kMinRetentionBytes, catalog::kMaxRetentionBytes)) {
    change.retention_bytes = *b;
  }
  if (is_null_field(body, "archive_after_s")) {
    change.archive_after_s = std::optional<int>();
  } else if (auto a = int_field(body, "archive_after_s", 0, catalog::kMaxArchiveAfterS)) {
    change.archive_after_s = static_cast<int>(*a);
  }
  if (is_null_field(body, "archive_retention_days")) {
    change.archive_retention_days = std::optional<int>();
  } else if (auto d = int_field(body, "archive_retention_days", 1, catalog::kMaxRetentionDays)) {
    change.archive_retention_days = static_cast<int>(*d);
  }
  bool found = false;
  std::optional<catalog::CameraDetails> cam;
  std::vector<catalog::StreamInfo> streams;
  co_await ctx.catalog.run([&name, &change, &found, &cam, &streams](pqxx::connection& c) {
    pqxx::work tx(c);
    found = catalog::update_camera(tx, name, change);
    if (!found) return;
    cam = catalog::camera_details(tx, name);
    streams = catalog::camera_streams(tx, name, kDetailStreams).value_or(streams);
    tx.commit();
  });
  if (!found || !cam) co_return json_error(req, http::status::not_found, "no camera named '" + name + "'");
  if (ctx.cameras_changed) ctx.cameras_changed();
  co_return json_response(req, http::status::ok, json::serialize(camera_json(*cam, streams)));
}

boost::asio::awaitable<HttpResponse> delete_camera(const RouteContext& ctx, const HttpRequest& req,
                                                   const std::string& name) {
  auto outcome = co_await ctx.catalog.run([&name](pqxx::connection& c) {
    pqxx::work tx(c);
    const auto out = catalog::remove_or_disable_camera(tx, name);
    tx.commit();
    return out;
  });
  if (outcome == catalog::Removal::none) {
    co_return json_error(req, http::status::not_found, "no camera named '" + name + "'");
  }
  if (ctx.cameras_changed) ctx.cameras_changed();
  const bool deleted = outcome == catalog::Removal::deleted;
  json::object body{{"name", name},
                    {"result", deleted ? "deleted" : "disabled"},
                    {"detail", deleted ? "the camera had no recordings and was deleted"
                                       : "the camera has recordings (or events): it was disabled and keeps them"}};
  co_return json_response(req, http::status::ok, json::serialize(body));
}

boost::asio::awaitable<HttpResponse> list_streams(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                                  const std::string& name) {
  allow_params(q, {"limit"});
  std::size_t limit = 100;
  if (const auto l = q.number("limit", 1, 1000)) {
    if (*l != static_cast<double>(static_cast<std::size_t>(*l))) {
      throw BadRequest("parameter 'limit' must be an integer from 1 to 1000");
    }
    limit = static_cast<std::size_t>(*l);
  }
  auto streams = co_await ctx.catalog.run([&name, &limit](pqxx::connection& c) {
    pqxx::work tx(c);
    return catalog::camera_streams(tx, name, limit);
  });
  if (!streams) co_return json_error(req, http::status::not_found, "no camera named '" + name + "'");
  json::array arr;
  for (const auto& s : *streams) arr.push_back(stream_json(s));
  co_return json_response(req, http::status::ok,
                          json::serialize(json::object{{"camera", name}, {"streams", std::move(arr)}}));
}

}  // namespace

boost::asio::awaitable<HttpResponse> create_camera_route(const RouteContext& ctx, const HttpRequest& req,
                                                         const QueryParams& q) {
  allow_params(q, {});
  const auto body = json_object_body(req, {"name", "url", "substream_url", "enabled", "retention_days",
                                           "retention_bytes", "declared_rate_bps"});
  catalog::NewCamera cam;
  const auto name = string_field(body, "name", 64);
  if (!name) throw BadRequest("field 'name' is required");
  cam.name = checked_name(*name);
  if (!is_null_field(body, "url")) cam.url = checked_url(body, "url");
  if (!is_null_field(body, "substream_url")) cam.substream_url = checked_url(body, "substream_url");
  if (cam.substream_url && !cam.url) throw BadRequest("field 'substream_url' needs a 'url'");
  cam.enabled = bool_field(body, "enabled").value_or(true);
  if (!is_null_field(body, "declared_rate_bps")) {
    cam.declared_rate_bps =
        int_field(body, "declared_rate_bps", catalog::kMinDeclaredRateBps, catalog::kMaxDeclaredRateBps);
  }
  if (!is_null_field(body, "retention_bytes")) {
    cam.retention_bytes = int_field(body, "retention_bytes", catalog::kMinRetentionBytes, catalog::kMaxRetentionBytes);
  }
  if (!is_null_field(body, "retention_days")) {
    if (auto d = int_field(body, "retention_days", 1, catalog::kMaxRetentionDays))
      cam.retention_days = static_cast<int>(*d);
  }
  // A taken name is a CatalogError (conflict), answered 409 by the routes' table.
  std::optional<catalog::CameraDetails> made;
  co_await ctx.catalog.run([&cam, &made](pqxx::connection& c) {
    pqxx::work tx(c);
    catalog::create_camera(tx, cam);
    made = catalog::camera_details(tx, cam.name);
    tx.commit();
  });
  if (!made) throw std::logic_error("camera '" + cam.name + "' was created but cannot be read back");
  if (ctx.cameras_changed) ctx.cameras_changed();
  auto res = json_response(req, http::status::created, json::serialize(camera_json(*made, {})));
  res.set(http::field::location, "/api/v1/cameras/" + cam.name);
  co_return res;
}

boost::asio::awaitable<HttpResponse> camera_route(const RouteContext& ctx, const HttpRequest& req,
                                                  const QueryParams& q) {
  const auto& seg = q.segments();
  const auto m = req.method();
  const bool get = m == http::verb::get || m == http::verb::head;
  if (seg.size() == 4) {
    if (!get && m != http::verb::patch && m != http::verb::delete_) {
      co_return method_not_allowed(req, "GET, HEAD, PATCH, DELETE");
    }
    const auto name = checked_name(seg[3]);
    if (get) {
      allow_params(q, {});
      co_return co_await get_camera(ctx, req, name);
    }
    allow_params(q, {});
    if (m == http::verb::patch) co_return co_await patch_camera(ctx, req, name);
    co_return co_await delete_camera(ctx, req, name);
  }
  if (seg.size() == 5 && seg[4] == "streams") {
    if (!get) co_return method_not_allowed(req, "GET, HEAD");
    const auto name = checked_name(seg[3]);
    co_return co_await list_streams(ctx, req, q, name);
  }
  co_return json_error(req, http::status::not_found, "no such resource");
}

}  // namespace vigil::server
