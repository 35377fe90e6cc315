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
#include <optional>
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

// How many of the cameras WAITING_SQL counts (one count(*) query) NODE should take now: none
// unless its lease is live, it is active (not draining or drained) and it ranks first of the live
// active nodes (most headroom, then fewest cameras, then name); then its share, those cameras
// divided over the live active nodes (rounded up) — all of them when it is alone.
int share_quota(pqxx::work& tx, const std::string& node, const std::string& waiting_sql);

// share_quota of the unowned pulled cameras.
int claim_quota(pqxx::work& tx, const std::string& node);

struct ClaimedCamera {
  std::string name;
  std::int64_t epoch = 0;
};
// Claims up to LIMIT unowned enabled cameras with a URL for NODE (oldest first, skipping rows
// another node is claiming and the names in EXCLUDED), each under a new epoch.
std::vector<ClaimedCamera> claim_cameras(pqxx::work& tx, const std::string& node, int limit,
                                         const std::set<std::string>& excluded = {});

// The enabled cameras with a URL that NODE owns, or that a drain hands over to it: epoch by name
// (a handover's: the epoch NODE will own it by).
std::map<std::string, std::int64_t> owned_cameras(pqxx::work& tx, const std::string& node);

// Gives camera NAME up if NODE still owns it under EPOCH (its admission refused it here): unowned,
// under a new epoch, for another node to claim — only when another node's lease is live (alone,
// the node keeps it and retries). A camera handed over to NODE under EPOCH (a drain) goes back to
// the drain instead. Returns whether it did.
bool release_camera(pqxx::work& tx, const std::string& name, const std::string& node, std::int64_t epoch);

// A stream of a camera another node owns (docs/nodes.md, "Fencing"): what a node that lost the
// camera must not open.
struct Fenced : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Before a stream of camera CAMERA_ID opens on NODE: throws Fenced when another node owns the
// camera. Holds the camera row (FOR SHARE) to the end of TX, so no claim or sweep changes its
// owner in between. Returns the epoch the stream is opened under (streams.owner_epoch): the
// camera's, or its handover epoch when a drain hands it to NODE; none when nobody owns the camera
// (pushed, or not claimed yet): it may record anywhere and is never fenced.
std::optional<std::int64_t> check_owner(pqxx::work& tx, std::int64_t camera_id, const std::string& node);

struct SweptCamera {
  std::string name, from_node;
};
// The sweeper: when no other node is sweeping (pg_try_advisory_xact_lock), every camera whose
// owner's lease expired (or that has no nodes row) becomes unowned under a new epoch, and that
// owner's unfinished streams of it end as 'failed_over' at their last recorded instant. A handover
// to a node whose lease expired is dropped (the drain hands the camera to another node). The
// caller must have been connected for two leases itself (after a catalog outage every lease looks
// expired). Returns what it released.
std::vector<SweptCamera> sweep_expired_owners(pqxx::work& tx);

struct NodeRow {
  std::string node, state;  // state: active, draining, drained
  bool live = false;        // its lease has not expired
  std::int64_t headroom_bps = 0;
  std::int64_t cameras = 0;        // pulled cameras it owns
  std::int64_t handovers = 0;      // of those, being handed to another node (a drain)
  std::int64_t lease_left_ms = 0;  // negative: expired that long ago
  NodeAddresses addresses;         // where it serves (vigild --advertise); empty: not advertised
};
// Every node of the catalog, by name.
std::vector<NodeRow> list_nodes(pqxx::work& tx);

// After a restarted node recovered its volumes (VOLUME_IDS): its streams that another node's
// sweeper ended as 'failed_over' (or that ended 'fenced', their marked rows landed from the spool)
// end where its recovery found their data ends (the open segment's
// catalog row trailed the recording), and the 'failover' gap after each starts there instead —
// or goes, when the recovered footage reaches the next node's first frame (no instant went
// unrecorded). Returns how many gaps it shortened or removed.
int shorten_failover_gaps(pqxx::work& tx, const std::vector<std::int64_t>& volume_ids);
// The 'failover' gap after stream STREAM_ID starts at END_US, where its footage is now known to
// end, or goes if it ended before (a restarted node's recovery above; a partitioned node's
// marked rows landing, pending_rows.cpp). Returns how many gaps it shortened or removed.
int shorten_failover_gap(pqxx::work& tx, std::int64_t stream_id, std::int64_t end_us);

}  // namespace vigil::catalog
