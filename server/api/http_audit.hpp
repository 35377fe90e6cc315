#pragma once
// GET /api/v1/audit (docs/openapi.yaml "Audit"): the audit trail of exports and evidence-lock
// changes (catalog/audit_rows.hpp), newest first; admin tokens only. Parameters: from, to (times,
// default the last 30 days), action (export, lock_create, lock_release), camera, limit (1-1000).
// Also what an export writes to it (audit_export).
// Thread: the session's network thread; catalog work on the CatalogPool. Errors: exceptions
// mapped by http_routes; audit_export never throws.
#include <boost/asio/awaitable.hpp>

#include "server/api/http_routes.hpp"
#include "server/net/http_query.hpp"

namespace vigil::server {

boost::asio::awaitable<HttpResponse> audit_route(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q);

// Writes the audit row of an export of CAMERA's [FROM_US, TO_US) that REQ asked for, unless REQ
// is a later range request of the same file (a player's seeks: one row per export, not per
// request). Best effort: when the catalog cannot take the row, the export goes on and the
// failure is logged (docs/openapi.yaml "Audit").
boost::asio::awaitable<void> audit_export(const RouteContext& ctx, const HttpRequest& req, const std::string& camera,
                                          std::int64_t from_us, std::int64_t to_us, const std::string& options);

}  // namespace vigil::server
