#include "server/api/http_routes.hpp"

#include "server/disks/disk_set.hpp"

#include <boost/json.hpp>
#include <pqxx/pqxx>

#include "common/log.hpp"
#include "catalog/migrator.hpp"
#include "server/api/http_audit.hpp"
#include "server/api/http_cameras.hpp"
#include "server/api/http_discovery.hpp"
#include "server/api/http_disks.hpp"
#include "server/api/http_events.hpp"
#include "server/api/http_front_door.hpp"
#include "server/api/http_groups.hpp"
#include "server/api/http_health.hpp"
#include "server/core/catalog_health.hpp"
#include "server/core/auth.hpp"
#include "server/api/http_hls.hpp"
#include "server/api/http_locks.hpp"
#include "server/api/http_media.hpp"
#include "server/api/http_metrics.hpp"
#include "server/api/http_nodes.hpp"
#include "server/net/api_error.hpp"
#include "server/net/http_query.hpp"
#include "server/api/http_timeline.hpp"
#include "server/api/http_tokens.hpp"
#include "server/api/web_assets.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

HttpResponse error_response(const HttpRequest& req, http::status status, std::string_view message) {
  return json_response(req, status, json::serialize(json::object{{"error", message}}));
}

}  // namespace

namespace {

// The route proper; exceptions are answered by the caller.
boost::asio::awaitable<HttpReply> route(const RouteContext& ctx, const HttpRequest& req) {
  const QueryParams q(req.target());
  const auto& seg = q.segments();
  const bool get = req.method() == http::verb::get || req.method() == http::verb::head;
  auto only_get = [&] {
    auto res = error_response(req, http::status::method_not_allowed, "use GET");
    res.set(http::field::allow, "GET, HEAD");
    return res;
  };
  if (q.path() == "/healthz") {
    if (!get) co_return only_get();
    co_return co_await healthz(ctx, req);
  }
  if (q.path() == "/metrics" && ctx.metrics) {
    if (!get) co_return only_get();
    co_return metrics_response(*ctx.metrics, req, ctx.grant);
  }
  if (q.path() == "/ui" || q.path().rfind("/ui/", 0) == 0) co_return web_reply(ctx.web, req, q.path());
  if (seg.size() >= 3 && seg[0] == "api" && seg[1] == "v1") {
    if (seg[2] == "events") co_return co_await events_route(ctx, req, q);  // its own methods and 405s
    // Admin and state routes: each answers its own methods and 405s, so Allow is always right.
    if (seg.size() == 3 && seg[2] == "cameras" && req.method() == http::verb::post) {
      co_return co_await create_camera_route(ctx, req, q);
    }
    if (seg[2] == "cameras" && (seg.size() == 4 || (seg.size() == 5 && seg[4] == "streams"))) {
      co_return co_await camera_route(ctx, req, q);
    }
    if (seg[2] == "locks") co_return co_await locks_route(ctx, req, q);
    if (seg[2] == "groups") co_return co_await groups_route(ctx, req, q);
    if (seg[2] == "discovery") co_return co_await discovery_route(ctx, req, q);
    if (seg[2] == "tokens") co_return co_await tokens_route(ctx, req, q);
    if (seg.size() == 3 && seg[2] == "audit") co_return co_await audit_route(ctx, req, q);
    if (seg[2] == "disks") co_return co_await disks_route(ctx, req, q);
    if (seg[2] == "nodes") co_return co_await nodes_route(ctx, req, q);
    if (seg.size() == 4 && seg[2] == "admission" && seg[3] == "decisions") {
      co_return co_await decisions_route(ctx, req, q);
    }
    if (seg.size() == 3 && seg[2] == "cameras") {
      if (!get) {
        auto res = error_response(req, http::status::method_not_allowed, "use GET or POST");
        res.set(http::field::allow, "GET, HEAD, POST");
        co_return res;
      }
      co_return co_await cameras_route(ctx, req);
    }
    if (seg.size() == 3 && seg[2] == "timeline") {
      if (!get) co_return only_get();
      const std::optional<std::string> all;
      co_return co_await timeline_route(ctx, req, q, all);
    }
    if (seg.size() == 5 && seg[2] == "cameras" && seg[4] == "timeline") {
      if (!get) co_return only_get();
      const std::optional<std::string> one = seg[3];
      co_return co_await timeline_route(ctx, req, q, one);
    }
    // Media another node holds: that node's answer (one front door, docs/nodes.md).
    if (get && seg.size() >= 5 && seg.size() <= 6 && seg[2] == "cameras") {
      const std::string tail = seg.size() == 5 ? seg[4] : seg[4] + "/" + seg[5];
      std::optional<HttpReply> there = co_await answer_elsewhere(ctx, req, q, seg[3], tail);
      if (there) co_return std::move(*there);
    }
    if (seg.size() == 5 && seg[2] == "cameras" && seg[4] == "export.mp4") {
      if (!get) co_return only_get();
      co_return co_await export_route(ctx, req, q, seg[3]);
    }
    if (seg.size() == 6 && seg[2] == "cameras" && seg[4] == "export" && seg[5] == "parts") {
      if (!get) co_return only_get();
      co_return co_await export_parts_route(ctx, req, q, seg[3]);
    }
    if (seg.size() == 5 && seg[2] == "cameras" && seg[4] == "thumbnail.jpg") {
      if (!get) co_return only_get();
      co_return co_await thumbnail_route(ctx, req, q, seg[3]);
    }
    if (seg.size() >= 5 && seg.size() <= 6 && seg[2] == "cameras" &&
        (seg[4] == "hls.m3u8" || seg[4] == "hls" || seg[4] == "live.m3u8" || seg[4] == "live")) {
      if (!get) co_return only_get();
      const std::string tail = seg.size() == 5 ? seg[4] : seg[4] + "/" + seg[5];
      co_return co_await hls_route(ctx, req, q, seg[3], tail);
    }
  }
  co_return error_response(req, http::status::not_found, "no such resource");
}

}  // namespace

namespace {

// What a request needs: the access its role must allow, and which cameras. /healthz, /metrics
// and the web UI's static files (/ui/: the page holds no data; it asks for a token and sends it
// with its API requests) are open; reading is for viewers; posting events is for the events role
// (and recorders); every other change, reading the token list (who may do what) and the audit
// trail and ONVIF discovery (it sends packets on vigild's network) are for admins.
// Cameras: a route under /cameras/NAME needs NAME in the token's set; the node-wide routes that
// name every camera (disks, admission decisions) need a token for all cameras; the lists
// (cameras, groups, timeline, events, locks, /metrics) filter by the token's set in the route.
struct Need {
  Access access = Access::admin;
  std::optional<std::string> camera{};  // the route is about this camera
  bool all_cameras = false;             // the route shows every camera's data: unscoped tokens only
};

Need need_for(const HttpRequest& req, const QueryParams& q, bool metrics_protected) {
  const auto& path = q.path();
  const auto& seg = q.segments();
  if (path == "/healthz" || (path == "/metrics" && !metrics_protected)) return {Access::open};
  if (path == "/ui" || path.rfind("/ui/", 0) == 0) return {Access::open};
  // By the decoded segments, as route() dispatches (the raw path may spell them %-encoded).
  const bool api = seg.size() >= 3 && seg[0] == "api" && seg[1] == "v1";
  if (api && (seg[2] == "tokens" || seg[2] == "audit" || seg[2] == "discovery")) return {Access::admin};
  const bool get = req.method() == http::verb::get || req.method() == http::verb::head;
  if (!get) {
    if (req.method() == http::verb::post && api && seg.size() == 3 && seg[2] == "events") return {Access::post_events};
    return {Access::admin};
  }
  if (api && seg.size() >= 4 && seg[2] == "cameras") return {Access::view, seg[3]};
  if (api && (seg[2] == "disks" || seg[2] == "admission")) return {Access::view, std::nullopt, true};
  return {Access::view};
}

// The bearer token of REQ: the Authorization header, else ?access_token= (what a <video>
// element or an HLS player, which cannot set headers, can carry).
std::string token_of(const HttpRequest& req, const QueryParams& q) {
  const std::string_view auth = req[http::field::authorization];
  constexpr std::string_view bearer = "Bearer ";
  if (auth.size() > bearer.size() && auth.substr(0, bearer.size()) == bearer) {
    return std::string(auth.substr(bearer.size()));
  }
  return q.get("access_token").value_or("");
}

// The one place an HTTP request's token is checked: GRANT is set to what it grants if REQ may go
// on; else the 401/403 to answer.
boost::asio::awaitable<std::optional<HttpResponse>> check_access(const RouteContext& ctx, const HttpRequest& req,
                                                                 std::optional<Grant>& grant) {
  if (!ctx.auth || !ctx.auth->required()) co_return std::nullopt;
  const QueryParams q(req.target());
  const Need need = need_for(req, q, ctx.auth->metrics_protected());
  if (need.access == Access::open) co_return std::nullopt;
  const std::string token = token_of(req, q);
  if (!token.empty()) grant = co_await ctx.auth->grant_of(token);
  if (!grant) {
    auto res = error_response(req, http::status::unauthorized,
                              token.empty() ? "a token is required: Authorization: Bearer TOKEN (vigild wrote an admin "
                                              "token to DATA/admin.token; vigil token create makes more)"
                                            : "the token is not valid (unknown, revoked or expired)");
    res.set(http::field::www_authenticate, "Bearer realm=\"vigil\"");
    co_return res;
  }
  if (!grant->may(need.access)) {
    co_return error_response(req, http::status::forbidden,
                             std::string("this needs a token with the ") + roles_for(need.access) + " role");
  }
  if (need.camera && !grant->sees(*need.camera)) {
    co_return error_response(req, http::status::forbidden,
                             "this token is not for camera '" + need.camera->substr(0, 64) + "'");
  }
  if (need.all_cameras && grant->scoped()) {
    co_return error_response(req, http::status::forbidden,
                             "this shows every camera: it needs a token that is not limited to some cameras");
  }
  co_return std::nullopt;
}

}  // namespace

HttpHandler make_http_routes(RouteContext ctx) {
  return [ctx](const HttpRequest& req) -> boost::asio::awaitable<HttpReply> {
    // Every failure is a status and a JSON reason (api_error.hpp's table); nothing escapes to
    // the session. What is not the client's fault is logged here with its detail.
    std::exception_ptr error;
    try {
      std::optional<Grant> grant;
      auto denied = co_await check_access(ctx, req, grant);
      if (denied) co_return std::move(*denied);
      if (!grant) co_return co_await route(ctx, req);
      // The routes filter their lists by the grant: a copy of the context carries it.
      RouteContext scoped = ctx;
      scoped.grant = &*grant;
      co_return co_await route(scoped, req);
    } catch (...) {
      error = std::current_exception();
    }
    const ErrorAnswer answer = answer_for(error);
    if (answer.server_fault) {
      log::error("HTTP request failed", {{"target", loggable_target(req)},
                                         {"status", static_cast<int>(answer.status)},
                                         {"error", answer.detail}});
    }
    auto res = error_response(req, answer.status, answer.message);
    // Busy (a build budget spent, the catalog slow): when to ask again.
    if (answer.status == http::status::service_unavailable) res.set(http::field::retry_after, "1");
    co_return res;
  };
}

}  // namespace vigil::server
