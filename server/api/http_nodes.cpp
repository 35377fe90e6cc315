#include "server/api/http_nodes.hpp"

#include <boost/json.hpp>
#include <pqxx/pqxx>

#include "catalog/drain_rows.hpp"
#include "catalog/node_rows.hpp"
#include "server/net/http_json.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

// SELF: this vigild's node name (the playback proxy skips nothing by it; a UI marks it).
json::object node_json(const catalog::NodeRow& n, const std::string& self) {
  return {{"node", n.node},
          {"http", n.addresses.http},
          {"wire", n.addresses.wire},
          {"self", n.node == self},
          {"state", n.state},
          {"live", n.live},
          {"headroom_bps", n.headroom_bps},
          {"cameras", n.cameras},
          {"handovers", n.handovers},
          {"lease_left_ms", n.lease_left_ms}};
}

boost::asio::awaitable<std::vector<catalog::NodeRow>> read_nodes(const RouteContext& ctx) {
  co_return co_await ctx.catalog.run([](pqxx::connection& c) {
    pqxx::work tx(c);
    return catalog::list_nodes(tx);
  });
}

boost::asio::awaitable<HttpResponse> list(const RouteContext& ctx, const HttpRequest& req) {
  const auto nodes = co_await read_nodes(ctx);
  json::array arr;
  for (const auto& n : nodes) arr.push_back(node_json(n, ctx.node));
  co_return json_response(req, http::status::ok, json::serialize(json::object{{"nodes", std::move(arr)}}));
}

boost::asio::awaitable<HttpResponse> one(const RouteContext& ctx, const HttpRequest& req, const std::string& name) {
  const auto nodes = co_await read_nodes(ctx);
  for (const auto& n : nodes) {
    if (n.node == name) co_return json_response(req, http::status::ok, json::serialize(node_json(n, ctx.node)));
  }
  co_return json_error(req, http::status::not_found, "no node named '" + name.substr(0, 64) + "'");
}

boost::asio::awaitable<HttpResponse> drain(const RouteContext& ctx, const HttpRequest& req, const std::string& name) {
  const auto started = co_await ctx.catalog.run([&name](pqxx::connection& c) {
    pqxx::work tx(c);
    auto out = catalog::start_drain(tx, name);
    tx.commit();
    return out;
  });
  co_return json_response(req, http::status::ok,
                          json::serialize(
                              json::object{{"node", name}, {"state", started.state}, {"cameras", started.cameras}}));
}

boost::asio::awaitable<HttpResponse> undrain(const RouteContext& ctx, const HttpRequest& req, const std::string& name) {
  const auto cancelled = co_await ctx.catalog.run([&name](pqxx::connection& c) {
    pqxx::work tx(c);
    const auto out = catalog::undrain(tx, name);
    tx.commit();
    return out;
  });
  co_return json_response(req, http::status::ok,
                          json::serialize(
                              json::object{{"node", name}, {"state", "active"}, {"handovers_cancelled", cancelled}}));
}

}  // namespace

boost::asio::awaitable<HttpResponse> nodes_route(const RouteContext& ctx, const HttpRequest& req,
                                                 const QueryParams& q) {
  const auto& seg = q.segments();
  const auto m = req.method();
  const bool get = m == http::verb::get || m == http::verb::head;
  allow_params(q, {});
  if (seg.size() == 3) {
    if (get) co_return co_await list(ctx, req);
    co_return method_not_allowed(req, "GET, HEAD");
  }
  if (seg.size() == 4) {
    if (get) co_return co_await one(ctx, req, seg[3]);
    co_return method_not_allowed(req, "GET, HEAD");
  }
  if (seg.size() == 5 && (seg[4] == "drain" || seg[4] == "undrain")) {
    if (m != http::verb::post) co_return method_not_allowed(req, "POST");
    if (seg[4] == "drain") co_return co_await drain(ctx, req, seg[3]);
    co_return co_await undrain(ctx, req, seg[3]);
  }
  co_return json_error(req, http::status::not_found, "no such resource");
}

}  // namespace vigil::server
