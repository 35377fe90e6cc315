#pragma once
// What the JSON admin routes (http_cameras, http_locks, http_disks) share: error and 405
// answers, the allowed-parameter check, the JSON body of a POST/PATCH (Content-Type checked,
// one object, parsed before any SQL) with typed field readers that name the field in their
// 400, keyset cursors "A:B", and a camera URL shown without its credentials.
// Thread: any. Errors: throws BadRequest naming the field or parameter; ApiError
// (unsupported_media_type).
#include <boost/json.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "server/net/http_query.hpp"
#include "server/net/http_server.hpp"

namespace vigil::server {

HttpResponse json_error(const HttpRequest& req, boost::beast::http::status status, const std::string& message);
// 405 with Allow: ALLOW.
HttpResponse method_not_allowed(const HttpRequest& req, const char* allow);
// BadRequest for any query parameter not in ALLOWED (access_token, the auth's, is always allowed).
void allow_params(const QueryParams& q, std::initializer_list<std::string_view> allowed);

// CONTENT_TYPE names application/json (any case, parameters such as charset allowed).
bool is_json_content_type(std::string_view content_type);

// The request's body as one JSON object: 415 unless Content-Type is application/json, 400 for
// bad JSON or another type, or a key outside ALLOWED.
boost::json::object json_object_body(const HttpRequest& req, std::initializer_list<std::string_view> allowed);

// Typed fields; absent: nullopt; a wrong type or range: BadRequest naming FIELD.
std::optional<std::string> string_field(const boost::json::object& o, std::string_view field, std::size_t max_bytes);
std::optional<bool> bool_field(const boost::json::object& o, std::string_view field);
std::optional<std::int64_t> int_field(const boost::json::object& o, std::string_view field, std::int64_t min,
                                      std::int64_t max);
bool is_null_field(const boost::json::object& o, std::string_view field);

// A positive integer path segment named WHAT ("lock id", "disk id").
std::int64_t positive_id(const std::string& segment, const char* what);
// "A:B" of two integers (B positive): a page cursor; BadRequest otherwise.
std::pair<std::int64_t, std::int64_t> parse_cursor_pair(const std::string& text);

// URL with any user:password@ removed and any query replaced by "?…" (it may hold tokens).
std::string redact_url(const std::string& url);

}  // namespace vigil::server
