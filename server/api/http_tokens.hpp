#pragma once
// API-token routes of the HTTP API (docs/openapi.yaml), what `vigil token` does; admin tokens only,
// reading included (the list shows who may do what):
//   GET    /api/v1/tokens       every token, newest last, without its secret
//   POST   /api/v1/tokens       {role, label?, expires_in_s?, cameras?}: 201 with the token's secret,
//                                the only time it is shown (the catalog keeps its SHA-256);
//                                cameras: the names it is limited to (absent or null: every camera)
//   DELETE /api/v1/tokens/{id}  revokes it; 404 when there is no live token with that id
// A revoked token stops working within the Authenticator's cache lifetime (5 s).
// Thread: the session's network thread; catalog work on the CatalogPool. Errors: exceptions
// mapped by http_routes.
#include <boost/asio/awaitable.hpp>

#include "server/api/http_routes.hpp"
#include "server/net/http_query.hpp"

namespace vigil::server {

// Any path /api/v1/tokens[/...].
boost::asio::awaitable<HttpResponse> tokens_route(const RouteContext& ctx, const HttpRequest& req,
                                                  const QueryParams& q);

}  // namespace vigil::server
