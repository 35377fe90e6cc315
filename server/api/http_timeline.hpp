#pragma once
// Read-only catalog routes of the HTTP API (docs/openapi.yaml): the camera list and the
// recordings timeline. Each runs one catalog query on the CatalogPool (statement time-out
// applies) and answers JSON; bad parameters are 400, an unknown camera 404.
// Thread: the session's network thread. Errors: exceptions (ApiError, CatalogError, pqxx), mapped to
// statuses by server/net/api_error.hpp's table.
#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>

#include "server/net/http_query.hpp"
#include "server/api/http_routes.hpp"

namespace vigil::server {

// GET /api/v1/cameras
boost::asio::awaitable<HttpResponse> cameras_route(const RouteContext& ctx, const HttpRequest& req);
// GET /api/v1/timeline?from&to[&camera=..][&merge=S][&limit=N], or for CAMERA alone
// (GET /api/v1/cameras/{name}/timeline).
boost::asio::awaitable<HttpResponse> timeline_route(const RouteContext& ctx, const HttpRequest& req,
                                                    const QueryParams& q, const std::optional<std::string>& camera);

}  // namespace vigil::server
