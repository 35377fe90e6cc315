#pragma once
// Nodes sharing one catalog (docs/nodes.md, schema 0010): each vigild node renews its lease in
// `nodes` every second on PostgreSQL's clock; pulled cameras are owned by one node under an epoch
// drawn from a sequence (the fencing token). Claims take unowned cameras with FOR UPDATE SKIP
// LOCKED; a sweeper on any live node (one at a time: a transaction advisory lock) releases the
// cameras of nodes whose lease expired and ends those nodes' unfinished streams of them as
// 'failed_over', so the camera's next stream starts with a 'failover' gap.
// Thread: the camera manager's (its own connection). Errors: throws (pqxx).
#include <cstdint>
#include <map>
#include <pqxx/transaction>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace vigil::catalog {

// A new incarnation id for this run of a node (PostgreSQL's gen_random_uuid()).
std::string new_incarnation(pqxx::work& tx);

// Where a node serves, as the others reach it (vigild --advertise): its HTTP API
// ("http://HOST:PORT") and wire protocol ("HOST:PORT", "tls://HOST:PORT"); empty: not advertised.
struct NodeAddresses {
  std::string http, wire;
};

// Renews NODE's lease for INCARNATION until PostgreSQL's clock_timestamp() + LEASE_MS, with its
// admission HEADROOM_BPS and its ADDRESSES. A new incarnation (the node restarted) takes the row
// over. Returns the incarnation the row had before (empty: none): another one than the caller's
// after its first renewal means a second vigild runs under the same node name.
std::string renew_lease(pqxx::work& tx, const std::string& node, const std::string& incarnation, std::int64_t lease_ms,
                        std::int64_t headroom_bps, const NodeAddresses& addresses = {});

// How many unowned pulled cameras NODE should claim now: none unless its lease is live and it
// ranks first of the live nodes (most headroom, then fewest cameras, then name); then its share,
// the unowned ones divided over the live nodes (rounded up) — all of them when it is alone.
int claim_quota(pqxx::work& tx, const std::string& node);

struct ClaimedCamera {
  std::string name;
  std::int64_t epoch = 0;
};
// Claims up to LIMIT unowned enabled cameras with a URL for NODE (oldest first, skipping rows
// another node is claiming and the names in EXCLUDED), each under a new epoch.
std::vector<ClaimedCamera> claim_cameras(pqxx::work& tx, const std::string& node, int limit,
                                         const std::set<std::string>& excluded = {});

// The enabled cameras with a URL that NODE owns: epoch by name.
std::map<std::string, std::int64_t> owned_cameras(pqxx::work& tx, const std::string& node);

// Gives camera NAME up if NODE still owns it under EPOCH (its admission refused it here): unowned,
// under a new epoch, for another node to claim — only when another node's lease is live (alone,
// the node keeps it and retries). Returns whether it did.
bool release_camera(pqxx::work& tx, const std::string& name, const std::string& node, std::int64_t epoch);

// A stream of a camera another node owns (docs/nodes.md, "Fencing"): what a node that lost the
// camera must not open.
struct Fenced : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Before a stream of camera CAMERA_ID opens on NODE: throws Fenced when another node owns the
// camera. Holds the camera row (FOR SHARE) to the end of TX, so no claim or sweep changes its
// owner in between. A camera nobody owns (pushed, or not claimed yet) may record anywhere.
void check_owner(pqxx::work& tx, std::int64_t camera_id, const std::string& node);

struct SweptCamera {
  std::string name, from_node;
};
// The sweeper: when no other node is sweeping (pg_try_advisory_xact_lock), every camera whose
// owner's lease expired (or that has no nodes row) becomes unowned under a new epoch, and that
// owner's unfinished streams of it end as 'failed_over' at their last recorded instant. The
// caller must have been connected for two leases itself (after a catalog outage every lease looks
// expired). Returns what it released.
std::vector<SweptCamera> sweep_expired_owners(pqxx::work& tx);

// After a restarted node recovered its volumes (VOLUME_IDS): its streams that another node's
// sweeper ended as 'failed_over' end where its recovery found their data ends (the open segment's
// catalog row trailed the recording), and the 'failover' gap after each starts there instead —
// or goes, when the recovered footage reaches the next node's first frame (no instant went
// unrecorded). Returns how many gaps it shortened or removed.
int shorten_failover_gaps(pqxx::work& tx, const std::vector<std::int64_t>& volume_ids);

}  // namespace vigil::catalog
