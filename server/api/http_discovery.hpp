#pragma once
// ONVIF discovery for admins (docs/onvif.md, docs/openapi.yaml):
//   GET /api/v1/discovery[?timeout=S][&probe=HOST:PORT]  the cameras that answer a WS-Discovery
//       probe within S seconds (default 3, at most 10; each device then within 5 s), with their
//       profiles and main and substream URLs: what `vigil camera discover --json` prints. No
//       credentials: a camera that wants them is listed with its error (use the CLI's --user).
// Thread: the session's network thread; the probe and the devices' requests (blocking, seconds)
// run on the media pool, never on a network thread. Errors: exceptions mapped by http_routes.
#include <boost/asio/awaitable.hpp>

#include "server/api/http_routes.hpp"
#include "server/net/http_query.hpp"

namespace vigil::server {

// Any path /api/v1/discovery[/...].
boost::asio::awaitable<HttpResponse> discovery_route(const RouteContext& ctx, const HttpRequest& req,
                                                     const QueryParams& q);

}  // namespace vigil::server
