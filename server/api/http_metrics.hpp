#pragma once
// GET /metrics (docs/metrics.md): vigild's metrics in the Prometheus text exposition format
// 0.0.4, open like /healthz. Also the wrapper that times every HTTP request into
// vigil_http_request_duration_seconds, labelled with a route name from a fixed set
// (kHttpRoutes) — never the raw path, whose camera names and query strings would make the
// number of series unbounded.
// Thread: runs on the network threads; rendering reads atomics and takes only the metrics'
// own family mutexes, which no IO thread ever takes. Errors: none (the route cannot fail).
#include <string_view>

#include "server/net/http_server.hpp"
#include "server/core/auth.hpp"
#include "server/core/vigild_metrics.hpp"

namespace vigil::server {

// The response to GET/HEAD /metrics.
// GRANT (when /metrics needs a token): a token limited to some cameras gets only their series
// of the camera-labelled families; null: everything.
HttpResponse metrics_response(const Metrics& metrics, const HttpRequest& req, const Grant* grant = nullptr);

// One of kHttpRoutes for a request path (without the query string). A new route in
// http_routes.cpp needs its name here, else it is counted as "other".
std::string_view http_route_name(std::string_view path) noexcept;

// HANDLER, timed into METRICS (which must outlive the returned handler).
HttpHandler with_request_metrics(HttpHandler handler, Metrics& metrics);

}  // namespace vigil::server
