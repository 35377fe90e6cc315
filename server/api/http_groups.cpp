#include "server/api/http_groups.hpp"

#include <boost/json.hpp>
#include <pqxx/pqxx>

#include "catalog/camera_groups.hpp"
#include "server/net/http_json.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

// The group as the token may see it: null when it holds none of the token's cameras (a token
// for every camera sees every group, empty ones too).
std::optional<json::object> group_json(const RouteContext& ctx, const catalog::CameraGroup& g) {
  json::array cams;
  for (const auto& c : g.cameras) {
    if (sees(ctx, c)) cams.emplace_back(c);
  }
  if (ctx.grant && ctx.grant->scoped() && cams.empty()) return std::nullopt;
  return json::object{{"id", g.id}, {"name", g.name}, {"cameras", std::move(cams)}, {"created_at_us", g.created_at_us}};
}

// The body's "cameras": an array of names; absent: nullopt.
std::optional<std::vector<std::string>> cameras_field(const json::object& body) {
  const auto* v = body.if_contains("cameras");
  if (!v) return std::nullopt;
  if (!v->is_array()) throw BadRequest("field 'cameras' must be an array of camera names");
  std::vector<std::string> out;
  for (const auto& c : v->as_array()) {
    if (!c.is_string()) throw BadRequest("field 'cameras' must be an array of camera names");
    out.emplace_back(c.as_string());
  }
  return out;
}

std::optional<std::string> name_field(const json::object& body) {
  return string_field(body, "name", catalog::kMaxGroupNameBytes);
}

boost::asio::awaitable<HttpResponse> one_group(const RouteContext& ctx, const HttpRequest& req, std::int64_t id,
                                               http::status status) {
  auto g = co_await ctx.catalog.run([&id](pqxx::connection& c) {
    pqxx::work tx(c);
    return catalog::camera_group(tx, id);
  });
  auto shown = g ? group_json(ctx, *g) : std::nullopt;
  if (!shown) co_return json_error(req, http::status::not_found, "no group " + std::to_string(id));
  auto res = json_response(req, status, json::serialize(*shown));
  if (status == http::status::created) res.set(http::field::location, "/api/v1/groups/" + std::to_string(id));
  co_return res;
}

boost::asio::awaitable<HttpResponse> list_groups(const RouteContext& ctx, const HttpRequest& req) {
  auto groups = co_await ctx.catalog.run([](pqxx::connection& c) {
    pqxx::work tx(c);
    return catalog::list_camera_groups(tx);
  });
  json::array arr;
  for (const auto& g : groups) {
    if (auto o = group_json(ctx, g)) arr.push_back(std::move(*o));
  }
  co_return json_response(req, http::status::ok, json::serialize(json::object{{"groups", std::move(arr)}}));
}

boost::asio::awaitable<HttpResponse> post_group(const RouteContext& ctx, const HttpRequest& req) {
  const auto body = json_object_body(req, {"name", "cameras"});
  const auto name = name_field(body);
  if (!name) throw BadRequest("field 'name' is required");
  const auto cameras = cameras_field(body).value_or(std::vector<std::string>{});
  const auto id = co_await ctx.catalog.run([&name, &cameras](pqxx::connection& c) {
    pqxx::work tx(c);
    const auto made = catalog::create_camera_group(tx, *name, cameras);
    tx.commit();
    return made;
  });
  co_return co_await one_group(ctx, req, id, http::status::created);
}

boost::asio::awaitable<HttpResponse> patch_group(const RouteContext& ctx, const HttpRequest& req, std::int64_t id) {
  const auto body = json_object_body(req, {"name", "cameras"});
  const auto name = name_field(body);
  const auto cameras = cameras_field(body);
  if (!name && !cameras) throw BadRequest("nothing to change: give name or cameras");
  const bool found = co_await ctx.catalog.run([&id, &name, &cameras](pqxx::connection& c) {
    pqxx::work tx(c);
    if (name && !catalog::rename_camera_group(tx, id, *name)) return false;
    if (cameras && !catalog::set_camera_group_members(tx, id, *cameras)) return false;
    tx.commit();
    return true;
  });
  if (!found) co_return json_error(req, http::status::not_found, "no group " + std::to_string(id));
  co_return co_await one_group(ctx, req, id, http::status::ok);
}

boost::asio::awaitable<HttpResponse> delete_group(const RouteContext& ctx, const HttpRequest& req, std::int64_t id) {
  const bool deleted = co_await ctx.catalog.run([&id](pqxx::connection& c) {
    pqxx::work tx(c);
    const bool out = catalog::delete_camera_group(tx, id);
    tx.commit();
    return out;
  });
  if (!deleted) co_return json_error(req, http::status::not_found, "no group " + std::to_string(id));
  co_return json_response(req, http::status::ok, json::serialize(json::object{{"deleted", id}}));
}

}  // namespace

boost::asio::awaitable<HttpResponse> groups_route(const RouteContext& ctx, const HttpRequest& req,
                                                  const QueryParams& q) {
  const auto& seg = q.segments();
  const auto m = req.method();
  const bool get = m == http::verb::get || m == http::verb::head;
  allow_params(q, {});
  if (seg.size() == 3) {
    if (get) co_return co_await list_groups(ctx, req);
    if (m == http::verb::post) co_return co_await post_group(ctx, req);
    co_return method_not_allowed(req, "GET, HEAD, POST");
  }
  if (seg.size() == 4) {
    const auto id = positive_id(seg[3], "group id");
    if (get) co_return co_await one_group(ctx, req, id, http::status::ok);
    if (m == http::verb::patch) co_return co_await patch_group(ctx, req, id);
    if (m == http::verb::delete_) co_return co_await delete_group(ctx, req, id);
    co_return method_not_allowed(req, "GET, HEAD, PATCH, DELETE");
  }
  co_return json_error(req, http::status::not_found, "no such resource");
}

}  // namespace vigil::server
