#pragma once
// One session's queries (docs/protocol.md, "Queries"): STREAMS lists the cameras, TIMELINE gives
// each camera's runs and gaps in a range, EVENTS the events matching filters, newest first, with
// their clips and a cursor for the next page. Everything is read on the catalog pool, never on
// the session's thread; the timeline adds what this node recorded since the catalog's last rows
// (the open segment up to its last durable cycle), as the HTTP timeline does.
// The token's camera set is applied here as well as at the gate (which refuses a query naming a
// camera outside it): a query naming none lists only the token's cameras.
// Thread: the session's thread. Errors: protocol answers (an Error carrying the request id:
// INVALID_ARGUMENT, NOT_FOUND, UNAVAILABLE when the catalog does not answer), never throws.
#include <boost/asio/awaitable.hpp>

#include "proto/vigil.pb.h"
#include "server/core/auth.hpp"
#include "server/core/catalog_pool.hpp"
#include "server/disks/disk_set.hpp"

namespace vigil::server {

// Bounds of one answer (a frame must stay well under the wire's payload limit).
inline constexpr std::uint32_t kQueryDefaultStreams = 1000, kQueryMaxStreams = 10'000;
inline constexpr std::uint32_t kQueryDefaultEvents = 100, kQueryMaxEvents = 1000;
inline constexpr std::uint32_t kQueryDefaultTimelineItems = 10'000, kQueryMaxTimelineItems = 10'000;

class QueryChannel {
 public:
  // DISKS may be null (a server without volumes): the timeline is the catalog's alone.
  QueryChannel(CatalogPool& catalog, DiskSet* disks) : catalog_(catalog), disks_(disks) {}

  // A QueryResponse, or an Error with the request's id.
  boost::asio::awaitable<proto::Envelope> answer(const proto::QueryRequest& request, const Grant& grant);

 private:
  boost::asio::awaitable<proto::Envelope> streams(const proto::QueryRequest& request, const Grant& grant);
  boost::asio::awaitable<proto::Envelope> timeline(const proto::QueryRequest& request, const Grant& grant);
  boost::asio::awaitable<proto::Envelope> events(const proto::QueryRequest& request, const Grant& grant);

  CatalogPool& catalog_;
  DiskSet* disks_;
};

}  // namespace vigil::server
