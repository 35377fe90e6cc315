#include "catalog/node_rows.hpp"

#include <pqxx/pqxx>

namespace vigil::catalog {
namespace {

// pg_try_advisory_xact_lock key of the sweeper: ASCII "vigilswp" (the migrator's is "vigilsch").
constexpr std::int64_t kSweepLockKey = 0x76696769'6c737770;

// A live lease, on PostgreSQL's clock: clock_timestamp() is the statement's instant, now() the
// transaction's start (which would make a lease look younger than it is).
constexpr const char* kLive = "lease_until > clock_timestamp()";

}  // namespace

std::string new_incarnation(pqxx::work& tx) { return tx.exec1("SELECT gen_random_uuid()::text")[0].as<std::string>(); }

std::string renew_lease(pqxx::work& tx, const std::string& node, const std::string& incarnation, std::int64_t lease_ms,
                        std::int64_t headroom_bps, const NodeAddresses& addresses) {
  const auto r = tx.exec_params1(
      "WITH prev AS (SELECT incarnation FROM nodes WHERE node = $1) "
      "INSERT INTO nodes (node, incarnation, lease_until, heartbeat_at, joined_at, headroom_bps, http_address, "
      "                   wire_address) "
      "VALUES ($1, $2::uuid, clock_timestamp() + $3 * interval '1 millisecond', clock_timestamp(), "
      "        clock_timestamp(), $4, NULLIF($5, ''), NULLIF($6, '')) "
      "ON CONFLICT (node) DO UPDATE SET incarnation = EXCLUDED.incarnation, lease_until = EXCLUDED.lease_until, "
      "  heartbeat_at = EXCLUDED.heartbeat_at, headroom_bps = EXCLUDED.headroom_bps, "
      "  http_address = EXCLUDED.http_address, wire_address = EXCLUDED.wire_address, "
      "  joined_at = CASE WHEN nodes.incarnation = EXCLUDED.incarnation AND nodes.lease_until > clock_timestamp() "
      "                   THEN nodes.joined_at ELSE EXCLUDED.joined_at END "
      "RETURNING (SELECT incarnation::text FROM prev)",
      node, incarnation, lease_ms, headroom_bps, addresses.http, addresses.wire);
  return r[0].is_null() ? std::string() : r[0].as<std::string>();
}

int share_quota(pqxx::work& tx, const std::string& node, const std::string& waiting_sql) {
  // Draining and drained nodes take nothing: they rank among no one.
  const auto r = tx.exec_params1(std::string("WITH live AS (SELECT n.node, n.headroom_bps, "
                                             "  (SELECT count(*) FROM cameras c WHERE c.owner_node = n.node) AS owned "
                                             "  FROM nodes n WHERE n.state = 'active' AND n.") +
                                     kLive +
                                     ") "
                                     "SELECT (SELECT node FROM live ORDER BY headroom_bps DESC, owned, node LIMIT 1) "
                                     "= $1, (SELECT count(*) FROM live), (" +
                                     waiting_sql + ")",
                                 node);
  if (r[0].is_null() || !r[0].as<bool>()) return 0;
  const auto live = std::max<std::int64_t>(r[1].as<std::int64_t>(), 1);
  const auto waiting = r[2].as<std::int64_t>();
  return static_cast<int>((waiting + live - 1) / live);
}

int claim_quota(pqxx::work& tx, const std::string& node) {
  return share_quota(tx, node, "SELECT count(*) FROM cameras WHERE owner_node IS NULL AND enabled AND url IS NOT NULL");
}

std::vector<ClaimedCamera> claim_cameras(pqxx::work& tx, const std::string& node, int limit,
                                         const std::set<std::string>& excluded) {
  std::vector<ClaimedCamera> out;
  if (limit <= 0) return out;
  std::string names = "{";
  for (const auto& n : excluded) names += (names.size() > 1 ? "," : "") + std::string("\"") + n + "\"";
  names += "}";
  // SKIP LOCKED: nodes claiming at once take different cameras instead of waiting on each other;
  // a camera another node claimed and committed meanwhile fails `owner_node IS NULL` on re-check.
  for (const auto& r :
       tx.exec_params("WITH c AS (SELECT id FROM cameras WHERE owner_node IS NULL AND enabled AND url IS NOT NULL "
                      "           AND name <> ALL($3::text[]) ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) "
                      "UPDATE cameras SET owner_node = $1, owner_epoch = nextval('camera_owner_epoch') FROM c "
                      "WHERE cameras.id = c.id RETURNING cameras.name, cameras.owner_epoch",
                      node, limit, names)) {
    out.push_back({r[0].as<std::string>(), r[1].as<std::int64_t>()});
  }
  return out;
}

std::map<std::string, std::int64_t> owned_cameras(pqxx::work& tx, const std::string& node) {
  std::map<std::string, std::int64_t> out;
  // A camera handed over to NODE (a drain) is pulled under the epoch it will own it by.
  for (const auto& r :
       tx.exec_params("SELECT name, CASE WHEN owner_node = $1 THEN owner_epoch ELSE handover_epoch END FROM cameras "
                      "WHERE (owner_node = $1 OR handover_node = $1) AND enabled AND url IS NOT NULL",
                      node)) {
    out.emplace(r[0].as<std::string>(), r[1].as<std::int64_t>());
  }
  return out;
}

bool release_camera(pqxx::work& tx, const std::string& name, const std::string& node, std::int64_t epoch) {
  // A handover this node cannot admit goes back to the drain for another node to take.
  if (!tx.exec_params("UPDATE cameras SET handover_node = NULL, handover_epoch = NULL "
                      "WHERE name = $1 AND handover_node = $2 AND handover_epoch = $3 RETURNING id",
                      name, node, epoch)
           .empty()) {
    return true;
  }
  // Alone, the node keeps it: nobody else could take it, and it retries after its backoff.
  return !tx.exec_params(std::string(
                             "UPDATE cameras SET owner_node = NULL, owner_epoch = nextval('camera_owner_epoch'), "
                             "handover_node = NULL, handover_epoch = NULL "
                             "WHERE name = $1 AND owner_node = $2 AND owner_epoch = $3 "
                             "AND EXISTS (SELECT 1 FROM nodes n WHERE n.node <> $2 AND n.") +
                             kLive + ") RETURNING id",
                         name, node, epoch)
              .empty();
}

std::optional<std::int64_t> check_owner(pqxx::work& tx, std::int64_t camera_id, const std::string& node) {
  const auto r = tx.exec_params(
      "SELECT owner_node, owner_epoch, handover_node, handover_epoch FROM cameras WHERE id = $1 FOR SHARE", camera_id);
  if (r.empty() || r[0][0].is_null()) return std::nullopt;
  const auto owner = r[0][0].as<std::string>();
  if (owner == node) return r[0][1].as<std::int64_t>();
  // The node a drain hands the camera to records it beside its owner, under the epoch it will own it by.
  if (!r[0][2].is_null() && r[0][2].as<std::string>() == node) return r[0][3].as<std::int64_t>();
  throw Fenced("the camera is owned by node " + owner + ", not this one (" + node +
               "): it records there (docs/nodes.md)");
}

std::vector<SweptCamera> sweep_expired_owners(pqxx::work& tx) {
  std::vector<SweptCamera> out;
  if (!tx.exec_params1("SELECT pg_try_advisory_xact_lock($1)", kSweepLockKey)[0].as<bool>()) return out;
  const auto swept =
      tx.exec(std::string("WITH dead AS (SELECT c.id, c.owner_node FROM cameras c WHERE c.owner_node IS NOT NULL "
                          "  AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.node = c.owner_node AND n.") +
              kLive +
              ") FOR UPDATE OF c SKIP LOCKED) "
              "UPDATE cameras SET owner_node = NULL, owner_epoch = nextval('camera_owner_epoch'), "
              "handover_node = NULL, handover_epoch = NULL FROM dead "
              "WHERE cameras.id = dead.id RETURNING cameras.id, cameras.name, dead.owner_node");
  // A dead node's handovers (a drain was moving cameras to it): back to the drain, for another node.
  tx.exec0(std::string("UPDATE cameras c SET handover_node = NULL, handover_epoch = NULL WHERE c.handover_node IS NOT "
                       "NULL AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.node = c.handover_node AND n.") +
           kLive + ")");
  for (const auto& r : swept) {
    // The dead node's unfinished streams of the camera end where its recording ends in the
    // catalog; the camera's next stream records the hole from there as a 'failover' gap.
    tx.exec_params0(
        "UPDATE streams s SET state = 'failed_over', ended_at_us = GREATEST(s.started_at_us, "
        "  COALESCE((SELECT max(end_us) FROM segments g WHERE g.stream_id = s.id), s.started_at_us)) "
        "WHERE s.camera_id = $1 AND s.state IN ('pending', 'recording') "
        "AND s.disk_id IN (SELECT id FROM disks WHERE node = $2)",
        r[0].as<std::int64_t>(), r[2].as<std::string>());
    out.push_back({r[1].as<std::string>(), r[2].as<std::string>()});
  }
  return out;
}

std::vector<NodeRow> list_nodes(pqxx::work& tx) {
  std::vector<NodeRow> out;
  for (const auto& r : tx.exec(std::string("SELECT n.node, n.state, n.") + kLive +
                               ", n.headroom_bps, "
                               "(SELECT count(*) FROM cameras c WHERE c.owner_node = n.node AND c.enabled AND c.url IS "
                               "NOT NULL), "
                               "(SELECT count(*) FROM cameras c WHERE c.owner_node = n.node AND c.handover_node IS NOT "
                               "NULL), "
                               "(extract(epoch FROM n.lease_until - clock_timestamp()) * 1000)::bigint, "
                               "COALESCE(n.http_address, ''), COALESCE(n.wire_address, '') "
                               "FROM nodes n ORDER BY n.node")) {
    out.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<bool>(), r[3].as<std::int64_t>(),
                   r[4].as<std::int64_t>(), r[5].as<std::int64_t>(), r[6].as<std::int64_t>(),
                   NodeAddresses{r[7].as<std::string>(), r[8].as<std::string>()}});
  }
  return out;
}

int shorten_failover_gap(pqxx::work& tx, std::int64_t stream_id, std::int64_t end_us) {
  // Both nodes recorded across the whole hole (the first node's last frames reach the new node's
  // first): no gap. Otherwise it starts where the first node's footage ends.
  auto changed = tx.exec_params0("DELETE FROM gaps WHERE stream_id = $1 AND reason = 'failover' AND end_us <= $2",
                                 stream_id, end_us)
                     .affected_rows();
  changed +=
      tx.exec_params0("UPDATE gaps SET start_us = $2 WHERE stream_id = $1 AND reason = 'failover' AND start_us < $2",
                      stream_id, end_us)
          .affected_rows();
  return static_cast<int>(changed);
}

int shorten_failover_gaps(pqxx::work& tx, const std::vector<std::int64_t>& volume_ids) {
  std::string ids = "{";
  for (std::size_t i = 0; i < volume_ids.size(); ++i) ids += (i ? "," : "") + std::to_string(volume_ids[i]);
  ids += "}";
  // The recovered end of each failed-over stream with segments on these volumes.
  const auto recovered = tx.exec_params(
      "UPDATE streams s SET ended_at_us = r.end_us FROM ("
      "  SELECT g.stream_id, max(g.end_us) AS end_us FROM segments g JOIN streams t ON t.id = g.stream_id "
      "  WHERE t.state IN ('failed_over', 'fenced') AND g.volume_id = ANY($1::bigint[]) GROUP BY g.stream_id) r "
      "WHERE s.id = r.stream_id AND r.end_us > s.ended_at_us RETURNING s.id, s.ended_at_us",
      ids);
  int changed = 0;
  for (const auto& r : recovered) changed += shorten_failover_gap(tx, r[0].as<std::int64_t>(), r[1].as<std::int64_t>());
  return changed;
}

}  // namespace vigil::catalog
