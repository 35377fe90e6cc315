#include "server/api/http_events.hpp"

#include "server/net/http_json.hpp"

#include <boost/json.hpp>
#include <cctype>
#include <charconv>
#include <chrono>
#include <algorithm>
#include <cmath>
#include <pqxx/pqxx>

#include "catalog/event_rows.hpp"
#include "server/api/event_json.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

constexpr std::int64_t kMaxRangeUs = 400LL * 86'400'000'000;
constexpr std::size_t kMaxWords = 64;  // type / object_class values per query
constexpr std::size_t kMaxAttrs = 16;  // attr=key:value per query
constexpr double kMaxPadS = 300;

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool parse_int64(std::string_view s, std::int64_t& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// A path segment that is an event id: a positive integer.
std::int64_t event_id(const std::string& seg) {
  std::int64_t id = 0;
  if (!parse_int64(seg, id) || id <= 0) throw BadRequest("the event id must be a positive integer");
  return id;
}

std::string cursor_text(const catalog::EventCursor& c) {
  return std::to_string(c.start_us) + ":" + std::to_string(c.id);
}

catalog::EventCursor parse_cursor(const std::string& s) {
  const auto colon = s.find(':');
  catalog::EventCursor c;
  if (colon == std::string::npos || !parse_int64(std::string_view(s).substr(0, colon), c.start_us) ||
      !parse_int64(std::string_view(s).substr(colon + 1), c.id) || c.id <= 0) {
    throw BadRequest("parameter 'cursor' must be the 'next' value of a previous page");
  }
  return c;
}

double strict_number(const std::string& s, bool& ok) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(s, &used);
  } catch (const std::exception&) {
    ok = false;
    return 0;
  }
  ok = used == s.size() && std::isfinite(x);
  return x;
}

catalog::FrameBox parse_zone(const std::string& s) {
  const auto bad = [] {
    return BadRequest("parameter 'zone' must be x0,y0,x1,y1: numbers from 0 to 1 with x0 <= x1 and y0 <= y1");
  };
  double v[4];
  std::size_t start = 0;
  for (int i = 0; i < 4; ++i) {
    const auto comma = s.find(',', start);
    if ((i < 3) == (comma == std::string::npos)) throw bad();
    const auto part = s.substr(start, i < 3 ? comma - start : std::string::npos);
    bool ok = false;
    v[i] = strict_number(part, ok);
    if (!ok || part.empty() || v[i] < 0 || v[i] > 1) throw bad();
    start = comma + 1;
  }
  if (v[0] > v[2] || v[1] > v[3]) throw bad();
  return {v[0], v[1], v[2], v[3]};
}

std::vector<std::string> words(const QueryParams& q, const char* key) {
  auto out = q.all(key);
  if (out.size() > kMaxWords) throw BadRequest(std::string("too many '") + key + "' values (at most 64)");
  for (const auto& w : out) {
    if (!catalog::is_valid_event_word(w)) {
      throw BadRequest(std::string("parameter '") + key + "' must match ^[a-z][a-z0-9_.-]*$ (at most 64 characters)");
    }
  }
  return out;
}

// attr=key:value, repeatable: one JSON object of string values for jsonb containment.
std::optional<std::string> attributes_filter(const QueryParams& q) {
  const auto attrs = q.all("attr");
  if (attrs.empty()) return std::nullopt;
  if (attrs.size() > kMaxAttrs) throw BadRequest("too many 'attr' values (at most 16)");
  json::object o;
  for (const auto& a : attrs) {
    const auto colon = a.find(':');
    if (colon == std::string::npos || colon == 0 || colon > 256 || a.size() - colon - 1 > 1024 ||
        a.find('\0') != std::string::npos) {
      throw BadRequest("parameter 'attr' must be key:value (key 1-256 bytes, value at most 1024, no U+0000)");
    }
    const auto key = a.substr(0, colon);
    if (o.contains(key)) throw BadRequest("parameter 'attr' names the key '" + key.substr(0, 64) + "' twice");
    o[key] = a.substr(colon + 1);
  }
  return json::serialize(o);
}

catalog::ClipPadding padding(const QueryParams& q) {
  catalog::ClipPadding pad;
  if (auto b = q.number("pad_before", 0, kMaxPadS)) pad.before_us = std::llround(*b * 1e6);
  if (auto a = q.number("pad_after", 0, kMaxPadS)) pad.after_us = std::llround(*a * 1e6);
  return pad;
}

boost::asio::awaitable<HttpResponse> list_events(const RouteContext& ctx, const HttpRequest& req,
                                                 const QueryParams& q) {
  allow_params(q, {"from", "to", "camera", "cameras", "type", "object_class", "zone", "attr", "min_confidence", "limit",
                   "cursor", "pad_before", "pad_after"});
  const auto now = now_us();
  catalog::EventQuery query;
  query.from_us = q.time("from", now);
  query.to_us = q.get("to") ? q.time("to", now) : now;
  if (query.from_us < -kMaxEventTimeUs || query.to_us > kMaxEventTimeUs) throw BadRequest("the range is out of bounds");
  if (query.to_us < query.from_us) throw BadRequest("'to' must not be before 'from'");
  if (query.to_us - query.from_us > kMaxRangeUs) throw BadRequest("the range is longer than 400 days: ask in pieces");
  query.cameras = q.cameras();
  // A token for some cameras: asking for another is refused; asking for none means its own (those
  // that exist: a recorder token may name a camera that has not recorded yet).
  const bool own_cameras = ctx.grant && ctx.grant->scoped() && query.cameras.empty();
  for (const auto& c : query.cameras) {
    if (!sees(ctx, c)) co_return json_error(req, http::status::forbidden, "this token is not for camera '" + c + "'");
  }
  if (own_cameras) query.cameras = *ctx.grant->cameras;
  query.types = words(q, "type");
  query.object_classes = words(q, "object_class");
  if (const auto z = q.get("zone")) query.zone = parse_zone(*z);
  query.attributes_json = attributes_filter(q);
  query.min_confidence = q.number("min_confidence", 0, 1);
  if (const auto l = q.number("limit", 1, 1000)) {
    if (std::floor(*l) != *l) throw BadRequest("parameter 'limit' must be an integer from 1 to 1000");
    query.limit = static_cast<std::size_t>(*l);
  }
  if (const auto c = q.get("cursor")) query.after = parse_cursor(*c);
  query.pad = padding(q);

  auto found = co_await ctx.catalog.run([&query, own_cameras](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    return catalog::search_events(tx, query, own_cameras);
  });
  const auto& unknown = found.unknown;
  const auto& page = found.page;
  if (!unknown.empty()) co_return json_error(req, http::status::not_found, "no camera named '" + unknown.front() + "'");
  json::array events;
  for (const auto& e : page.events) events.push_back(event_to_json(e));
  json::object body{{"from_us", query.from_us}, {"to_us", query.to_us}, {"events", std::move(events)}};
  body["next"] = page.next ? json::value(cursor_text(*page.next)) : json::value(nullptr);
  co_return json_response(req, http::status::ok, json::serialize(body));
}

boost::asio::awaitable<HttpResponse> post_events(const RouteContext& ctx, const HttpRequest& req,
                                                 const QueryParams& q) {
  allow_params(q, {});
  // A JSON content type also keeps plain HTML forms of other sites from posting events.
  if (!is_json_content_type(req[http::field::content_type])) {
    co_return json_error(req, http::status::unsupported_media_type,
                         "the body must be JSON (Content-Type: application/json)");
  }
  bool single = false;
  const auto now = now_us();
  const auto events = parse_events_body(req.body(), now, single);
  // What the token may post: its cameras only; and, but for an admin, no event that ended
  // more than --max-backdate ago (a detector posts an event when it ends; its start may be older).
  const auto earliest = ctx.auth && ctx.grant ? ctx.auth->earliest_dated_us(*ctx.grant, now) : std::nullopt;
  for (const auto& e : events) {
    if (!sees(ctx, e.camera)) {
      co_return json_error(req, http::status::forbidden, "this token is not for camera '" + e.camera + "'");
    }
    if (earliest && e.end_us < *earliest) {
      co_return json_error(req, http::status::forbidden,
                           "the event ended more than " + std::to_string(ctx.auth->max_backdate().count()) +
                               " s ago (vigild --max-backdate): only an admin token may post it");
    }
  }
  // An unknown camera is a CatalogError (not_found), answered 404 by the routes' table.
  const auto ids = co_await ctx.catalog.run([&events](pqxx::connection& c) {
    pqxx::work tx(c);
    auto out = catalog::insert_events(tx, events);
    tx.commit();
    return out;
  });
  json::array arr;
  for (auto id : ids) arr.push_back(id);
  json::object body{{"ids", std::move(arr)}};
  if (single) body["id"] = ids.front();
  auto res = json_response(req, http::status::created, json::serialize(body));
  if (single) res.set(http::field::location, "/api/v1/events/" + std::to_string(ids.front()));
  co_return res;
}

boost::asio::awaitable<HttpResponse> one_event(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                               std::int64_t id) {
  allow_params(q, {"pad_before", "pad_after"});
  const auto pad = padding(q);
  auto row = co_await ctx.catalog.run([&id, &pad](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    return catalog::event_by_id(tx, id, pad);
  });
  // Another camera's event, for a token limited to some cameras, is as if there were none.
  if (!row || !sees(ctx, row->camera))
    co_return json_error(req, http::status::not_found, "no event " + std::to_string(id));
  co_return json_response(req, http::status::ok, json::serialize(event_to_json(*row)));
}

boost::asio::awaitable<HttpResponse> delete_one(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q,
                                                std::int64_t id) {
  allow_params(q, {});
  const bool existed = co_await ctx.catalog.run([&id](pqxx::connection& c) {
    pqxx::work tx(c);
    const bool out = catalog::delete_event(tx, id);
    tx.commit();
    return out;
  });
  if (!existed) co_return json_error(req, http::status::not_found, "no event " + std::to_string(id));
  co_return json_response(req, http::status::ok, json::serialize(json::object{{"deleted", id}}));
}

}  // namespace

boost::asio::awaitable<HttpResponse> events_route(const RouteContext& ctx, const HttpRequest& req,
                                                  const QueryParams& q) {
  const auto& seg = q.segments();
  const auto m = req.method();
  const bool get = m == http::verb::get || m == http::verb::head;
  if (seg.size() == 3) {
    if (get) co_return co_await list_events(ctx, req, q);
    if (m == http::verb::post) co_return co_await post_events(ctx, req, q);
    co_return method_not_allowed(req, "GET, HEAD, POST");
  }
  if (seg.size() == 4) {
    if (!get && m != http::verb::delete_) co_return method_not_allowed(req, "GET, HEAD, DELETE");
    const auto id = event_id(seg[3]);
    if (get) co_return co_await one_event(ctx, req, q, id);
    co_return co_await delete_one(ctx, req, q, id);
  }
  co_return json_error(req, http::status::not_found, "no such resource");
}

}  // namespace vigil::server
