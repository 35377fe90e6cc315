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

// READER_NODE below: the node asking, when it has an archive tier: a closed segment of a node that
// is down, with a verified copy, is then read from the copy by the reader itself
// (copy_stand_in.hpp), so it is held by no node here; empty: every segment on a volume is its
// node's (a reader without an archive tier). 'archived' segments are never a node's.

// The node holding TRACK's footage at the start of [FROM_US, TO_US) (END last: at its end);
// nullopt when nothing of TRACK is recorded there on a volume (or only copies stand in for it),
// or the disk's node has no nodes row (a single server that never pulled cameras: the caller
// serves it).
std::optional<NodeEndpoint> media_holder(pqxx::work& tx, const Track& track, std::int64_t from_us, std::int64_t to_us,
                                         HolderEnd end = HolderEnd::first, const std::string& reader_node = {});

// The nodes whose volumes hold TRACK's footage in [FROM_US, TO_US), in time order, each with the
// span of its footage there (consecutive segments on one node are one run; at most 8 runs).
struct HolderRun {
  std::string node;
  std::int64_t from_us = 0, to_us = 0;
  bool open = false;  // it has a segment still open in the catalog (its node was writing it)
};
std::vector<HolderRun> media_holder_runs(pqxx::work& tx, const Track& track, std::int64_t from_us, std::int64_t to_us,
                                         const std::string& reader_node = {});

// What of TRACK's footage in [FROM_US, TO_US) only NODE's volumes hold — no copy stands in for it
// (the segment NODE was writing, closed segments not copied yet) — as spans clipped to the range,
// in time order, consecutive segments without a copy merged, the open one apart (at most 8): what
// a front door cannot serve while NODE is down.
std::vector<HolderRun> volume_only_spans(pqxx::work& tx, const Track& track, std::int64_t from_us, std::int64_t to_us,
                                         const std::string& node, const std::string& reader_node);

// The node that pulls CAMERA now (its owner); nullopt when nobody owns it (pushed cameras record
// wherever their recorder connects).
std::optional<NodeEndpoint> camera_owner(pqxx::work& tx, const std::string& camera);

}  // namespace vigil::catalog
