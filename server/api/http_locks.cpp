#include "server/api/http_locks.hpp"

#include <boost/json.hpp>
#include <chrono>
#include <pqxx/pqxx>

#include "common/time_arg.hpp"
#include "catalog/audit_rows.hpp"
#include "catalog/camera_rows.hpp"
#include "catalog/evidence_locks.hpp"
#include "server/net/http_json.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

constexpr std::int64_t kMaxTimeUs = 100'000'000'000LL * 1'000'000;  // as common/time_arg's @ form
constexpr std::int64_t kMaxLockUs = 3660LL * 86'400'000'000;        // ten years

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// FIELD as a time string, or FIELD_us as microseconds; exactly one of them.
std::int64_t time_field(const json::object& o, const std::string& field, std::int64_t now) {
  const auto text = string_field(o, field, 64);
  const auto us = int_field(o, field + "_us", -kMaxTimeUs, kMaxTimeUs);
  if (text && us) throw BadRequest("give '" + field + "' or '" + field + "_us', not both");
  if (us) return *us;
  if (!text) throw BadRequest("field '" + field + "' is required (a time, or '" + field + "_us' in microseconds)");
  try {
    const auto t = parse_time_arg(*text, now);
    if (t < -kMaxTimeUs || t > kMaxTimeUs) throw std::invalid_argument("out of range");
    return t;
  } catch (const std::invalid_argument& e) {
    throw BadRequest("field '" + field + "': " + e.what());
  }
}

// Who made the change, for its audit row: the token (and the lock's locked_by, when it names one).
catalog::AuditRow audit_of(const RouteContext& ctx, const std::string& action, const std::string& locked_by = "") {
  catalog::AuditRow row;
  row.action = action;
  if (ctx.grant) row.token_id = ctx.grant->token_id;
  row.who = ctx.grant ? ctx.grant->who() : "no-auth";
  if (!locked_by.empty()) row.who += " (locked_by: " + locked_by + ")";
  return row;
}

json::object lock_json(const catalog::LockRow& l) {
  return json::object{{"id", l.id},
                      {"camera", l.camera},
                      {"stream_id", l.stream_id},
                      {"from_us", l.start_us},
                      {"to_us", l.end_us},
                      {"reason", l.reason},
                      {"locked_by", l.locked_by},
                      {"locked_at_us", l.locked_at_us},
                      {"active", !l.unlocked_at_us.has_value()},
                      {"unlocked_at_us", l.unlocked_at_us ? json::value(*l.unlocked_at_us) : json::value(nullptr)}};
}

boost::asio::awaitable<HttpResponse> list_locks(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q) {
  allow_params(q, {"all", "limit"});
  bool all = false;
  if (const auto a = q.get("all")) {
    if (*a != "true" && *a != "false") throw BadRequest("parameter 'all' must be true or false");
    all = *a == "true";
  }
  std::size_t limit = 1000;
  if (const auto l = q.number("limit", 1, 1000)) {
    if (*l != static_cast<double>(static_cast<std::size_t>(*l))) {
      throw BadRequest("parameter 'limit' must be an integer from 1 to 1000");
    }
    limit = static_cast<std::size_t>(*l);
  }
  auto rows = co_await ctx.catalog.run([&all, &limit](pqxx::connection& c) {
    pqxx::work tx(c);
    return catalog::list_evidence_locks(tx, all, limit);
  });
  json::array arr;
  for (const auto& l : rows) {
    if (sees(ctx, l.camera)) arr.push_back(lock_json(l));  // a token for some cameras: only their locks
  }
  co_return json_response(req, http::status::ok, json::serialize(json::object{{"locks", std::move(arr)}}));
}

boost::asio::awaitable<HttpResponse> post_lock(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q) {
  allow_params(q, {});
  const auto body = json_object_body(req, {"camera", "from", "to", "from_us", "to_us", "reason", "locked_by"});
  const auto camera = string_field(body, "camera", 64);
  if (!camera) throw BadRequest("field 'camera' is required");
  if (!catalog::is_valid_camera_name(*camera)) throw BadRequest("field 'camera' is not a valid camera name");
  const auto now = now_us();
  const auto from = time_field(body, "from", now);
  const auto to = time_field(body, "to", now);
  if (to <= from) throw BadRequest("field 'to' must be after 'from'");
  if (to - from > kMaxLockUs) throw BadRequest("the range is longer than ten years");
  const auto reason = string_field(body, "reason", 1000);
  if (!reason || reason->empty()) throw BadRequest("field 'reason' is required (1-1000 bytes)");
  const auto locked_by = string_field(body, "locked_by", 256).value_or("");
  std::optional<std::vector<std::int64_t>> ids;
  // The audit rows (one per lock) commit with the locks or not at all.
  auto audit = audit_of(ctx, "lock_create", locked_by);
  audit.camera = *camera;
  audit.from_us = from;
  audit.to_us = to;
  audit.reason = *reason;
  co_await ctx.catalog.run([&camera, &from, &to, &reason, &locked_by, &ids, &audit](pqxx::connection& c) {
    pqxx::work tx(c);
    ids = catalog::lock_camera_range(tx, *camera, from, to, *reason, locked_by);
    if (ids && !ids->empty()) {
      for (const auto id : *ids) {
        audit.lock_id = id;
        catalog::insert_audit(tx, audit);
      }
      tx.commit();
    }
  });
  if (!ids) co_return json_error(req, http::status::not_found, "no camera named '" + *camera + "'");
  if (ids->empty()) {
    co_return json_error(req, http::status::conflict,
                         "camera '" + *camera + "' has no recording in that range: nothing to lock");
  }
  json::array arr;
  for (auto id : *ids) arr.push_back(id);
  json::object out{
      {"ids", std::move(arr)}, {"id", ids->front()}, {"camera", *camera}, {"from_us", from}, {"to_us", to}};
  auto res = json_response(req, http::status::created, json::serialize(out));
  res.set(http::field::location, "/api/v1/locks/" + std::to_string(ids->front()));
  co_return res;
}

boost::asio::awaitable<HttpResponse> delete_lock(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                                 std::int64_t id) {
  allow_params(q, {});
  const auto audit = audit_of(ctx, "lock_release");
  const bool released = co_await ctx.catalog.run([&id, &audit](pqxx::connection& c) {
    pqxx::work tx(c);
    const bool out = catalog::remove_evidence_lock(tx, id);
    // The audit row commits with the release.
    if (out) catalog::audit_lock_release(tx, id, audit.token_id, audit.who);
    tx.commit();
    return out;
  });
  if (!released) co_return json_error(req, http::status::not_found, "no active lock " + std::to_string(id));
  co_return json_response(req, http::status::ok, json::serialize(json::object{{"released", id}}));
}

}  // namespace

boost::asio::awaitable<HttpResponse> locks_route(const RouteContext& ctx, const HttpRequest& req,
                                                 const QueryParams& q) {
  const auto& seg = q.segments();
  const auto m = req.method();
  const bool get = m == http::verb::get || m == http::verb::head;
  if (seg.size() == 3) {
    if (get) co_return co_await list_locks(ctx, req, q);
    if (m == http::verb::post) co_return co_await post_lock(ctx, req, q);
    co_return method_not_allowed(req, "GET, HEAD, POST");
  }
  if (seg.size() == 4) {
    if (m != http::verb::delete_) co_return method_not_allowed(req, "DELETE");
    co_return co_await delete_lock(ctx, req, q, positive_id(seg[3], "lock id"));
  }
  co_return json_error(req, http::status::not_found, "no such resource");
}

}  // namespace vigil::server
