#include "server/api/http_tokens.hpp"

#include <boost/json.hpp>
#include <chrono>
#include <pqxx/pqxx>

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

json::object token_json(const catalog::TokenRow& t) {
  return json::object{{"id", t.id},
                      {"role", t.role},
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
  const auto body = json_object_body(req, {"role", "label", "expires_in_s"});
  const auto role = string_field(body, "role", 16);
  if (!role) throw BadRequest("field 'role' is required: recorder, viewer or admin");
  if (!catalog::is_valid_role(*role)) throw BadRequest("field 'role' must be recorder, viewer or admin");
  const auto label = string_field(body, "label", kLabelBytes).value_or("");
  std::optional<std::int64_t> expires_at_us;
  if (const auto in_s = int_field(body, "expires_in_s", 1, kMaxExpiresInS)) {
    expires_at_us = now_us() + *in_s * 1'000'000;
  }
  auto made = co_await ctx.catalog.run([&role, &label, &expires_at_us](pqxx::connection& c) {
    pqxx::work tx(c);
    auto t = catalog::create_token(tx, *role, label, expires_at_us);
    tx.commit();
    return t;
  });
  json::object out{{"id", made.id},
                   {"role", *role},
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
