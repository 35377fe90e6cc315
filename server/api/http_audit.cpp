#include "server/api/http_audit.hpp"

#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <pqxx/pqxx>

#include "catalog/audit_rows.hpp"
#include "catalog/camera_rows.hpp"
#include "common/log.hpp"
#include "server/net/http_json.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

constexpr std::int64_t kDefaultRangeUs = 30LL * 86'400'000'000;

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json::value opt_json(const std::optional<std::int64_t>& v) { return v ? json::value(*v) : json::value(nullptr); }

json::object audit_json(const catalog::AuditRow& r) {
  return json::object{{"id", r.id},
                      {"at_us", r.at_us},
                      {"action", r.action},
                      {"token_id", opt_json(r.token_id)},
                      {"who", r.who},
                      {"camera", r.camera},
                      {"from_us", opt_json(r.from_us)},
                      {"to_us", opt_json(r.to_us)},
                      {"lock_id", opt_json(r.lock_id)},
                      {"reason", r.reason}};
}

// A request for the start of the file: no Range, or one from byte 0.
bool first_request(const HttpRequest& req) {
  const std::string_view range = req[http::field::range];
  return range.empty() || range.starts_with("bytes=0-");
}

}  // namespace

boost::asio::awaitable<HttpResponse> audit_route(const RouteContext& ctx, const HttpRequest& req,
                                                 const QueryParams& q) {
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    co_return method_not_allowed(req, "GET, HEAD");
  }
  allow_params(q, {"from", "to", "action", "camera", "limit"});
  const auto now = now_us();
  catalog::AuditQuery query;
  query.to_us = q.get("to") ? q.time("to", now) : now + 1;
  query.from_us = q.get("from") ? q.time("from", now) : query.to_us - kDefaultRangeUs;
  if (query.to_us <= query.from_us) throw BadRequest("'to' must be after 'from'");
  if (const auto a = q.get("action")) {
    if (*a != "export" && *a != "lock_create" && *a != "lock_release") {
      throw BadRequest("parameter 'action' must be export, lock_create or lock_release");
    }
    query.action = *a;
  }
  if (const auto c = q.get("camera")) {
    if (!catalog::is_valid_camera_name(*c)) throw BadRequest("parameter 'camera' is not a valid camera name");
    query.camera = *c;
  }
  if (const auto l = q.number("limit", 1, 1000)) {
    if (std::floor(*l) != *l) throw BadRequest("parameter 'limit' must be an integer from 1 to 1000");
    query.limit = static_cast<std::size_t>(*l);
  }
  auto rows = co_await ctx.catalog.run([&query](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    return catalog::list_audit(tx, query);
  });
  json::array arr;
  for (const auto& r : rows) arr.push_back(audit_json(r));
  co_return json_response(req, http::status::ok, json::serialize(json::object{{"audit", std::move(arr)}}));
}

boost::asio::awaitable<void> audit_export(const RouteContext& ctx, const HttpRequest& req, const std::string& camera,
                                          std::int64_t from_us, std::int64_t to_us, const std::string& options) {
  if (!first_request(req) || req.method() == http::verb::head) co_return;
  catalog::AuditRow row;
  row.action = "export";
  if (ctx.grant) row.token_id = ctx.grant->token_id;
  row.who = ctx.grant ? ctx.grant->who() : "no-auth";
  row.camera = camera;
  row.from_us = from_us;
  row.to_us = to_us;
  row.reason = options;
  try {
    co_await ctx.catalog.run([&row](pqxx::connection& c) {
      pqxx::work tx(c);
      catalog::insert_audit(tx, row);
      tx.commit();
    });
  } catch (const std::exception& e) {
    // Best effort: an export is not refused because its audit row could not be written.
    log::warn("export audit row not written (catalog unavailable)",
              {{"camera", camera}, {"who", row.who}, {"from_us", from_us}, {"to_us", to_us}, {"error", e.what()}});
  }
}

}  // namespace vigil::server
