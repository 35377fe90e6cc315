#pragma once
// The events routes of the HTTP API (docs/openapi.yaml):
//   POST   /api/v1/events          one event object or an array (at most 1000), one transaction; 201 + ids
//   GET    /api/v1/events?from=..  filtered, newest first, keyset-paginated (`cursor` = the `next` of the
//                                  previous page), each event with its padded clip and media URLs
//   GET    /api/v1/events/{id}     one event with its clip
//   DELETE /api/v1/events/{id}
// Every input is validated before SQL (400 naming the parameter or field); an unknown camera or
// event is 404; another method 405 with Allow. Catalog work runs on the CatalogPool.
// Thread: the session's network thread. Errors: exceptions (ApiError, CatalogError, pqxx), mapped to
// statuses by server/net/api_error.hpp's table.
#include <boost/asio/awaitable.hpp>

#include "server/net/http_query.hpp"
#include "server/api/http_routes.hpp"

namespace vigil::server {

// Any path /api/v1/events[/...]: Q is the parsed target.
boost::asio::awaitable<HttpResponse> events_route(const RouteContext& ctx, const HttpRequest& req,
                                                  const QueryParams& q);

}  // namespace vigil::server
