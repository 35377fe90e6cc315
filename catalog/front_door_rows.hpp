#pragma once
// Which node serves a media request (docs/nodes.md, "One front door"): any node's HTTP API answers
// for any camera, and media it does not hold is proxied to the node whose volume holds it. The
// holder is the node of the disk of the volume of the segment the request begins with (or ends
// with: a thumbnail's keyframe at or before its instant), with that node's advertised address and
// whether its lease is live. Live HLS comes from the node that pulls the camera now.
// Thread: the catalog pool. Errors: throws (pqxx).
#include <cstdint>
#include <optional>
#include <pqxx/transaction>
#include <string>
#include <vector>

#include "common/track.hpp"

namespace vigil::catalog {

// A node as a front door reaches it.
struct NodeEndpoint {
  std::string node;
  std::string http_address, wire_address;  // empty: not advertised (a node from before 0012)
  bool live = false;                       // its lease has not expired (PostgreSQL's clock)
};

enum class HolderEnd { first, last };

// The node holding TRACK's footage at the start of [FROM_US, TO_US) (END last: at its end);
// nullopt when nothing of TRACK is recorded there, or the disk's node has no nodes row (a single
// server that never pulled cameras: the caller serves it).
std::optional<NodeEndpoint> media_holder(pqxx::work& tx, const Track& track, std::int64_t from_us, std::int64_t to_us,
                                         HolderEnd end = HolderEnd::first);

// The nodes whose volumes hold TRACK's footage in [FROM_US, TO_US), in time order, each with the
// span of its footage there (consecutive segments on one node are one run; at most 8 runs).
struct HolderRun {
  std::string node;
  std::int64_t from_us = 0, to_us = 0;
};
std::vector<HolderRun> media_holder_runs(pqxx::work& tx, const Track& track, std::int64_t from_us, std::int64_t to_us);

// The node that pulls CAMERA now (its owner); nullopt when nobody owns it (pushed cameras record
// wherever their recorder connects).
std::optional<NodeEndpoint> camera_owner(pqxx::work& tx, const std::string& camera);

}  // namespace vigil::catalog
