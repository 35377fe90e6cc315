#pragma once
// A planned drain (docs/nodes.md, "Drain"): `vigil node drain NAME` moves every camera NAME pulls
// to other nodes make-before-break. A draining node claims nothing; the best-ranked live active
// node takes its share of the draining node's cameras as handovers (cameras.handover_node, under a
// new epoch from camera_owner_epoch) and records each beside its owner; once that node's first
// frames of it are in the catalog (a segment row of its stream), one transaction makes it the
// owner under the handover epoch and re-stamps the draining node's running stream of it with that
// epoch (its tail lands as handed over, not fenced). The draining node then stops its pull: the
// two runs overlap, there is no gap. A draining node that owns nothing is 'drained' and takes no
// camera until undrained.
// Thread: the caller's (the camera manager's, an HTTP route's on the catalog pool). Errors:
// throws CatalogError (no such node; nobody to drain to) and pqxx.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <pqxx/transaction>

#include "catalog/node_rows.hpp"

namespace vigil::catalog {

struct DrainStarted {
  std::string state;         // draining, or drained when it owned no camera
  std::int64_t cameras = 0;  // the pulled cameras it owns, to be moved
};
// Marks NODE draining (drained if it owns no camera); its cameras without a URL or disabled are
// released (owner NULL, a new epoch). Draining a draining or drained node again changes nothing.
// Throws CatalogError::not_found when NODE has no row, and CatalogError::conflict — nothing
// changed — when no other live active node could take its cameras.
DrainStarted start_drain(pqxx::work& tx, const std::string& node);

// NODE takes cameras again (active). Handovers of its cameras not completed yet are cancelled
// (the receiving node stops its extra stream). Returns how many were. Throws CatalogError::not_found.
int undrain(pqxx::work& tx, const std::string& node);

// share_quota of the draining nodes' cameras that no node receives yet.
int handover_quota(pqxx::work& tx, const std::string& node);
// Takes up to LIMIT of the draining nodes' cameras as handovers to NODE (SKIP LOCKED; not the
// names in EXCLUDED), each under a new epoch: NODE records them beside their owner under it.
std::vector<ClaimedCamera> claim_handovers(pqxx::work& tx, const std::string& node, int limit,
                                           const std::set<std::string>& excluded = {});

struct HandedOver {
  std::string name, from_node;
  std::int64_t epoch = 0;  // the camera's owner_epoch now
};
// The handovers to NODE whose first frames on NODE are in the catalog (a segment row of NODE's main
// video stream under the handover epoch): NODE owns them now under that epoch, the previous owner's
// running streams of them carry that epoch too, and a draining node left with no camera is
// 'drained'. One transaction (TX).
std::vector<HandedOver> complete_handovers(pqxx::work& tx, const std::string& node);

}  // namespace vigil::catalog
