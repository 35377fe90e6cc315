#pragma once
// Evidence-lock routes of the HTTP API (docs/openapi.yaml):
//   GET    /api/v1/locks[?all=true][&limit=N]  active locks (with all: released ones too), newest first
//   POST   /api/v1/locks  {camera, from, to, reason[, locked_by]}: locks the range on every stream of
//                          the camera that overlaps it (retention never reclaims a locked range);
//                          201 with the ids; 404 unknown camera; 409 when no recording overlaps
//   DELETE /api/v1/locks/{id}                  releases it (the row stays as audit); 404 if not active
// from/to: common/time_arg strings ("@SECONDS", ISO 8601, "-1h", "now") or from_us/to_us integers.
// Thread: the session's network thread; catalog work on the CatalogPool. Errors: exceptions
// mapped by http_routes.
#include <boost/asio/awaitable.hpp>

#include "server/net/http_query.hpp"
#include "server/api/http_routes.hpp"

namespace vigil::server {

// Any path /api/v1/locks[/...].
boost::asio::awaitable<HttpResponse> locks_route(const RouteContext& ctx, const HttpRequest& req, const QueryParams& q);

}  // namespace vigil::server
