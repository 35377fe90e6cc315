#include "server/api/http_tokens.hpp"

#include <boost/json.hpp>
#include <algorithm>
#include <chrono>
#include <pqxx/pqxx>

#include "catalog/camera_rows.hpp"
#include "catalog/token_rows.hpp"
#include "server/net/http_json.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

constexpr std::size_t kLabelBytes = 200;
constexpr std::int64_t kMaxExpiresInS = 36500LL * 86400;  // a hundred years: "never", written out

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json::value opt_json(const std::optional<std::int64_t>& v) { return v ? json::value(*v) : json::value(nullptr); }

// A camera set as JSON: the names, or null for every camera.
json::value cameras_json(const std::optional<std::vector<std::string>>& cameras) {
  if (!cameras) return nullptr;
  json::array arr;
  for (const auto& c : *cameras) arr.push_back(json::string(c));
  return arr;
}

// The body's "cameras": absent or null, every camera; else 1-1000 valid camera names.
std::optional<std::vector<std::string>> cameras_field(const json::object& body) {
  const auto* v = body.if_contains("cameras");
  if (!v || v->is_null()) return std::nullopt;
  const auto bad = [] {
    return BadRequest("field 'cameras' must be null (every camera) or an array of 1-1000 camera names");
  };
  if (!v->is_array()) throw bad();
  const auto& arr = v->get_array();
  if (arr.empty() || arr.size() > 1000) throw bad();
  std::vector<std::string> out;
  for (const auto& e : arr) {
    if (!e.is_string()) throw bad();
    std::string name(e.get_string());
    if (!catalog::is_valid_camera_name(name)) {
      throw BadRequest("field 'cameras': '" + name.substr(0, 64) + "' is not a valid camera name");
    }
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  return out;
}

json::object token_json(const catalog::TokenRow& t) {
  return json::object{{"id", t.id},
                      {"role", t.role},
                      {"cameras", cameras_json(t.cameras)},
                      {"label", t.label},
                      {"created_at_us", t.created_at_us},
                      {"expires_at_us", opt_json(t.expires_at_us)},
                      {"revoked_at_us", opt_json(t.revoked_at_us)}};
}

boost::asio::awaitable<HttpResponse> list_tokens(const RouteContext& ctx, const HttpRequest& req,
                                                 const QueryParams& q) {
  allow_params(q, {});
  auto rows = co_await ctx.catalog.run([](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    return catalog::list_tokens(tx);
  });
  json::array arr;
  for (const auto& t : rows) arr.push_back(token_json(t));
  co_return json_response(req, http::status::ok, json::serialize(json::object{{"tokens", std::move(arr)}}));
}

boost::asio::awaitable<HttpResponse> create_token(const RouteContext& ctx, const HttpRequest& req,
                                                  const QueryParams& q) {
  allow_params(q, {});
  const auto body = json_object_body(req, {"role", "label", "expires_in_s", "cameras"});
  const auto role = string_field(body, "role", 16);
  if (!role) throw BadRequest("field 'role' is required: recorder, viewer, events or admin");
  if (!catalog::is_valid_role(*role)) throw BadRequest("field 'role' must be recorder, viewer, events or admin");
  const auto cameras = cameras_field(body);
  const auto label = string_field(body, "label", kLabelBytes).value_or("");
  std::optional<std::int64_t> expires_at_us;
  if (const auto in_s = int_field(body, "expires_in_s", 1, kMaxExpiresInS)) {
    expires_at_us = now_us() + *in_s * 1'000'000;
  }
  auto made = co_await ctx.catalog.run([&role, &label, &expires_at_us, &cameras](pqxx::connection& c) {
    pqxx::work tx(c);
    auto t = catalog::create_token(tx, *role, label, expires_at_us, cameras);
    tx.commit();
    return t;
  });
  json::object out{{"id", made.id},
                   {"role", *role},
                   {"cameras", cameras_json(cameras)},
                   {"label", label},
                   {"expires_at_us", opt_json(expires_at_us)},
                   {"token", made.token}};
  auto res = json_response(req, http::status::created, json::serialize(out));
  res.set(http::field::cache_control, "no-store");  // the secret must not linger in a cache
  co_return res;
}

boost::asio::awaitable<HttpResponse> revoke_token(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                                  std::int64_t id) {
  allow_params(q, {});
  const bool revoked = co_await ctx.catalog.run([id](pqxx::connection& c) {
    pqxx::work tx(c);
    const bool done = catalog::revoke_token(tx, id);
    tx.commit();
    return done;
  });
  if (!revoked) co_return json_error(req, http::status::not_found, "no live token with id " + std::to_string(id));
  co_return json_response(req, http::status::ok, json::serialize(json::object{{"id", id}, {"result", "revoked"}}));
}

}  // namespace

boost::asio::awaitable<HttpResponse> tokens_route(const RouteContext& ctx, const HttpRequest& req,
                                                  const QueryParams& q) {
  const auto& seg = q.segments();
  const auto m = req.method();
  if (seg.size() == 3) {
    if (m == http::verb::get || m == http::verb::head) co_return co_await list_tokens(ctx, req, q);
    if (m == http::verb::post) co_return co_await create_token(ctx, req, q);
    co_return method_not_allowed(req, "GET, HEAD, POST");
  }
  if (seg.size() == 4) {
    if (m != http::verb::delete_) co_return method_not_allowed(req, "DELETE");
    co_return co_await revoke_token(ctx, req, q, positive_id(seg[3], "token id"));
  }
  co_return json_error(req, http::status::not_found, "no such resource");
}

}  // namespace vigil::server
