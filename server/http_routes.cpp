#include "server/http_routes.hpp"

#include <boost/json.hpp>
#include <pqxx/pqxx>

#include "server/catalog/migrator.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

boost::asio::awaitable<HttpResponse> healthz(const RouteContext& ctx, const HttpRequest& req) {
  json::object db{{"mode", ctx.database_mode}};
  bool ok = true;
  try {
    int version = co_await ctx.catalog.run([](pqxx::connection& conn) { return catalog::current_version(conn); });
    db["status"] = "ok";
    db["schema_version"] = version;
  } catch (const std::exception& e) {
    ok = false;
    db["status"] = "error";
    std::string what = e.what();
    db["error"] = what.substr(0, what.find('\n'));
  }
  json::object body{{"status", ok ? "ok" : "degraded"}, {"version", VIGIL_VERSION}, {"database", std::move(db)}};
  co_return json_response(req, ok ? http::status::ok : http::status::service_unavailable, json::serialize(body));
}

HttpResponse error_response(const HttpRequest& req, http::status status, std::string_view message) {
  return json_response(req, status, json::serialize(json::object{{"error", message}}));
}

}  // namespace

HttpHandler make_http_routes(RouteContext ctx) {
  return [ctx](const HttpRequest& req) -> boost::asio::awaitable<HttpResponse> {
    std::string_view target = req.target();
    std::string_view path = target.substr(0, target.find('?'));
    if (path == "/healthz") {
      if (req.method() != http::verb::get && req.method() != http::verb::head) {
        auto res = error_response(req, http::status::method_not_allowed, "use GET");
        res.set(http::field::allow, "GET, HEAD");
        co_return res;
      }
      co_return co_await healthz(ctx, req);
    }
    co_return error_response(req, http::status::not_found, "no such resource");
  };
}

}  // namespace vigil::server
