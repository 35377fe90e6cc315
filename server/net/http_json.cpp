#include "server/net/http_json.hpp"

#include <cctype>
#include <charconv>
#include <cmath>

namespace http = boost::beast::http;
namespace json = boost::json;

namespace vigil::server {
namespace {

bool parse_int64(std::string_view s, std::int64_t& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

std::string field_name(std::string_view f) { return "field '" + std::string(f) + "'"; }

}  // namespace

bool is_json_content_type(std::string_view content_type) {
  const auto semi = content_type.find(';');
  auto media = content_type.substr(0, semi);
  while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
  constexpr std::string_view kJson = "application/json";
  if (media.size() != kJson.size()) return false;
  for (std::size_t i = 0; i < kJson.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(media[i])) != kJson[i]) return false;
  }
  return true;
}

HttpResponse json_error(const HttpRequest& req, http::status status, const std::string& message) {
  return json_response(req, status, json::serialize(json::object{{"error", message}}));
}

HttpResponse method_not_allowed(const HttpRequest& req, const char* allow) {
  auto res = json_error(req, http::status::method_not_allowed, std::string("use ") + allow);
  res.set(http::field::allow, allow);
  return res;
}

void allow_params(const QueryParams& q, std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, v] : q.params()) {
    bool ok = k == "access_token";  // the bearer token of a client that cannot send headers (http_routes)
    for (auto a : allowed) ok = ok || k == a;
    if (!ok) throw BadRequest("unknown parameter '" + k.substr(0, 64) + "'");
  }
}

json::object json_object_body(const HttpRequest& req, std::initializer_list<std::string_view> allowed) {
  // A JSON content type also keeps plain HTML forms of other sites from posting here.
  if (!is_json_content_type(req[http::field::content_type])) {
    throw ApiError(ApiErrc::unsupported_media_type, "the body must be JSON (Content-Type: application/json)");
  }
  boost::system::error_code ec;
  json::parse_options opts;
  opts.max_depth = 8;
  json::value doc = json::parse(req.body(), ec, {}, opts);
  if (ec) throw BadRequest("the body is not valid JSON: " + ec.message());
  if (!doc.is_object()) throw BadRequest("the body must be a JSON object");
  for (const auto& [k, v] : doc.get_object()) {
    bool ok = false;
    for (auto a : allowed) ok = ok || k == a;
    if (!ok) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      throw BadRequest("unknown field '" + std::string(k.substr(0, 64)) + "' (accepted: " + list + ")");
    }
  }
  return std::move(doc.get_object());
}

std::optional<std::string> string_field(const json::object& o, std::string_view field, std::size_t max_bytes) {
  const auto* v = o.if_contains(field);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw BadRequest(field_name(field) + " must be a string");
  const auto& s = v->get_string();
  if (s.size() > max_bytes)
    throw BadRequest(field_name(field) + " is longer than " + std::to_string(max_bytes) + " bytes");
  if (s.find('\0') != json::string::npos) throw BadRequest(field_name(field) + " must not contain U+0000");
  return std::string(s);
}

std::optional<bool> bool_field(const json::object& o, std::string_view field) {
  const auto* v = o.if_contains(field);
  if (!v) return std::nullopt;
  if (!v->is_bool()) throw BadRequest(field_name(field) + " must be true or false");
  return v->get_bool();
}

std::optional<std::int64_t> int_field(const json::object& o, std::string_view field, std::int64_t min,
                                      std::int64_t max) {
  const auto* v = o.if_contains(field);
  if (!v) return std::nullopt;
  std::int64_t x = 0;
  if (v->is_int64()) {
    x = v->get_int64();
  } else if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(max)) {
    x = static_cast<std::int64_t>(v->get_uint64());
  } else if (v->is_double() && std::isfinite(v->get_double()) && std::floor(v->get_double()) == v->get_double() &&
             v->get_double() >= static_cast<double>(min) && v->get_double() <= static_cast<double>(max)) {
    x = static_cast<std::int64_t>(v->get_double());
  } else {
    throw BadRequest(field_name(field) + " must be an integer from " + std::to_string(min) + " to " +
                     std::to_string(max));
  }
  if (x < min || x > max) {
    throw BadRequest(field_name(field) + " must be an integer from " + std::to_string(min) + " to " +
                     std::to_string(max));
  }
  return x;
}

bool is_null_field(const json::object& o, std::string_view field) {
  const auto* v = o.if_contains(field);
  return v && v->is_null();
}

std::int64_t positive_id(const std::string& segment, const char* what) {
  std::int64_t id = 0;
  if (!parse_int64(segment, id) || id <= 0)
    throw BadRequest(std::string("the ") + what + " must be a positive integer");
  return id;
}

std::pair<std::int64_t, std::int64_t> parse_cursor_pair(const std::string& s) {
  const auto colon = s.find(':');
  std::int64_t a = 0, b = 0;
  if (colon == std::string::npos || !parse_int64(std::string_view(s).substr(0, colon), a) ||
      !parse_int64(std::string_view(s).substr(colon + 1), b) || b <= 0) {
    throw BadRequest("parameter 'cursor' must be the 'next' value of a previous page");
  }
  return {a, b};
}

std::string redact_url(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return "<redacted>";
  const auto start = scheme + 3;
  auto end = url.find_first_of("/?#", start);
  if (end == std::string::npos) end = url.size();
  std::string out = url.substr(0, start);
  const auto at = url.rfind('@', end - 1);
  out += url.substr(at != std::string::npos && at >= start ? at + 1 : start,
                    end - (at != std::string::npos && at >= start ? at + 1 : start));
  const auto query = url.find_first_of("?#", end);
  out += url.substr(end, (query == std::string::npos ? url.size() : query) - end);
  if (query != std::string::npos) out += "?…";
  return out;
}

}  // namespace vigil::server
