#pragma once
// Camera administration routes of the HTTP API (docs/openapi.yaml):
//   POST   /api/v1/cameras                 {name, url?, substream_url?, enabled?, retention_days?}: 201;
//                                          409 if the name exists (nothing changed)
//   GET    /api/v1/cameras/{name}          settings, state, its newest streams; URLs without credentials
//   PATCH  /api/v1/cameras/{name}          {enabled?, url?, substream_url?, retention_days?} (null clears)
//   DELETE /api/v1/cameras/{name}          as `vigil camera remove`: deleted without recordings, else
//                                          disabled; the answer says which
//   GET    /api/v1/cameras/{name}/streams  its streams with state, codec, rates and times
// The camera manager polls the catalog, so a pulled camera added or enabled here starts by
// itself. Input is validated before SQL (400 naming the field); unknown camera 404; other
// methods 405 with Allow. Thread: the session's network thread; catalog work on the
// CatalogPool. Errors: exceptions mapped by http_routes.
#include <boost/asio/awaitable.hpp>

#include "server/net/http_query.hpp"
#include "server/api/http_routes.hpp"

namespace vigil::server {

// POST /api/v1/cameras (GET of the list stays in http_timeline).
boost::asio::awaitable<HttpResponse> create_camera_route(const RouteContext& ctx, const HttpRequest& req,
                                                         const QueryParams& q);
// /api/v1/cameras/{name} and /api/v1/cameras/{name}/streams.
boost::asio::awaitable<HttpResponse> camera_route(const RouteContext& ctx, const HttpRequest& req,
                                                  const QueryParams& q);

}  // namespace vigil::server
