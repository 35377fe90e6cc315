#include "catalog/drain_rows.hpp"

#include <pqxx/pqxx>

#include "catalog/catalog_error.hpp"

namespace vigil::catalog {
namespace {

constexpr const char* kLive = "lease_until > clock_timestamp()";  // on PostgreSQL's clock (node_rows.cpp)

// A draining node left with no pulled camera is drained.
void mark_drained(pqxx::work& tx, const std::string& node) {
  tx.exec_params0(
      "UPDATE nodes SET state = 'drained' WHERE node = $1 AND state = 'draining' AND NOT EXISTS "
      "(SELECT 1 FROM cameras WHERE owner_node = $1)",
      node);
}

std::string text_array(const std::set<std::string>& names) {
  std::string out = "{";
  for (const auto& n : names) out += (out.size() > 1 ? "," : "") + std::string("\"") + n + "\"";
  return out + "}";
}

}  // namespace

DrainStarted start_drain(pqxx::work& tx, const std::string& node) {
  const auto row = tx.exec_params("SELECT state FROM nodes WHERE node = $1 FOR UPDATE", node);
  if (row.empty()) throw CatalogError::not_found("no node named '" + node + "' in the catalog (see vigil node list)");
  if (row[0][0].as<std::string>() == "active") {
    const auto others =
        tx.exec_params1(std::string("SELECT count(*) FROM nodes WHERE node <> $1 AND state = 'active' AND ") + kLive,
                        node);
    if (others[0].as<std::int64_t>() == 0) {
      throw CatalogError::conflict("no other live node can take node " + node +
                                   "'s cameras: start another node first; nothing was changed");
    }
    // What it owns but does not pull (disabled, no URL) has nothing to hand over: released.
    tx.exec_params0(
        "UPDATE cameras SET owner_node = NULL, owner_epoch = nextval('camera_owner_epoch') "
        "WHERE owner_node = $1 AND NOT (enabled AND url IS NOT NULL)",
        node);
    tx.exec_params0("UPDATE nodes SET state = 'draining' WHERE node = $1", node);
    mark_drained(tx, node);
  }
  const auto r = tx.exec_params1(
      "SELECT (SELECT state FROM nodes WHERE node = $1), (SELECT count(*) FROM cameras WHERE owner_node = $1)", node);
  return {r[0].as<std::string>(), r[1].as<std::int64_t>()};
}

int undrain(pqxx::work& tx, const std::string& node) {
  if (tx.exec_params("UPDATE nodes SET state = 'active' WHERE node = $1 RETURNING node", node).empty()) {
    throw CatalogError::not_found("no node named '" + node + "' in the catalog (see vigil node list)");
  }
  return static_cast<int>(tx.exec_params("UPDATE cameras SET handover_node = NULL, handover_epoch = NULL "
                                         "WHERE owner_node = $1 AND handover_node IS NOT NULL RETURNING id",
                                         node)
                              .size());
}

int handover_quota(pqxx::work& tx, const std::string& node) {
  return share_quota(tx, node,
                     "SELECT count(*) FROM cameras c JOIN nodes d ON d.node = c.owner_node "
                     "WHERE d.state = 'draining' AND c.handover_node IS NULL AND c.enabled AND c.url IS NOT NULL");
}

std::vector<ClaimedCamera> claim_handovers(pqxx::work& tx, const std::string& node, int limit,
                                           const std::set<std::string>& excluded) {
  std::vector<ClaimedCamera> out;
  if (limit <= 0) return out;
  for (const auto& r : tx.exec_params(
           "WITH c AS (SELECT c.id FROM cameras c JOIN nodes d ON d.node = c.owner_node "
           "           WHERE d.state = 'draining' AND c.handover_node IS NULL AND c.enabled AND c.url IS NOT NULL "
           "           AND c.owner_node <> $1 AND c.name <> ALL($3::text[]) ORDER BY c.id LIMIT $2 "
           "           FOR UPDATE OF c SKIP LOCKED) "
           "UPDATE cameras SET handover_node = $1, handover_epoch = nextval('camera_owner_epoch') FROM c "
           "WHERE cameras.id = c.id RETURNING cameras.name, cameras.handover_epoch",
           node, limit, text_array(excluded))) {
    out.push_back({r[0].as<std::string>(), r[1].as<std::int64_t>()});
  }
  return out;
}

std::vector<HandedOver> complete_handovers(pqxx::work& tx, const std::string& node) {
  std::vector<HandedOver> out;
  // Make before break: only once NODE's own first frames of the camera are durable and in the
  // catalog does it become the owner; the previous owner stops its stream after that. SKIP LOCKED:
  // a camera whose segment rows are being committed (they hold its row FOR SHARE) moves at the
  // next round, rather than this one waiting on — or deadlocking with — that transaction.
  const auto moved = tx.exec_params(
      "WITH ready AS (SELECT c.id, c.owner_node AS from_node, c.owner_epoch AS from_epoch FROM cameras c "
      "  WHERE c.handover_node = $1 AND EXISTS (SELECT 1 FROM streams s JOIN segments g ON g.stream_id = s.id "
      "    WHERE s.camera_id = c.id AND s.owner_epoch = c.handover_epoch AND s.role = 'main' "
      "    AND s.media_kind = 'video') FOR UPDATE OF c SKIP LOCKED) "
      "UPDATE cameras SET owner_node = $1, owner_epoch = cameras.handover_epoch, handover_node = NULL, "
      "  handover_epoch = NULL FROM ready WHERE cameras.id = ready.id "
      "RETURNING cameras.id, cameras.name, ready.from_node, ready.from_epoch, cameras.owner_epoch",
      node);
  std::set<std::string> from;
  for (const auto& r : moved) {
    // The previous owner's running streams of it: their last rows land as handed over, not fenced.
    tx.exec_params0(
        "UPDATE streams SET owner_epoch = $3 WHERE camera_id = $1 AND owner_epoch = $2 "
        "AND state IN ('pending', 'recording')",
        r[0].as<std::int64_t>(), r[3].as<std::int64_t>(), r[4].as<std::int64_t>());
    const auto from_node = r[2].is_null() ? std::string() : r[2].as<std::string>();
    out.push_back({r[1].as<std::string>(), from_node, r[4].as<std::int64_t>()});
    if (!from_node.empty()) from.insert(from_node);
  }
  for (const auto& n : from) mark_drained(tx, n);
  return out;
}

}  // namespace vigil::catalog
