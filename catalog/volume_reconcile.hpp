#pragma once
// A volume and its catalog rows, side by side: registering a volume (by the uuid in its
// superblock), reconciling the two after a start or on `vigil fsck --db --repair` (the
// recovery plan of recovery_plan.hpp, applied in one transaction, then space reclaimed), and
// checking them without changing anything (`vigil fsck --db`).
// Thread: start-up or the fsck command, never an IO or network thread. Errors: SQL throws;
// a failed reclaim throws std::runtime_error.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/connection>
#include <pqxx/transaction>

#include "catalog/recovery_plan.hpp"
#include "catalog/stream_rebuild.hpp"
#include "storage/volume.hpp"

namespace vigil::catalog {

// The catalog id of VOLUME, if it was ever registered.
std::optional<std::int64_t> find_volume(pqxx::work& tx, const storage::Volume& volume);
// The catalogued end (logical data offset) of each closed or deleting segment of VOLUME_ID, by id.
std::map<std::uint64_t, std::uint64_t> closed_segment_ends(pqxx::work& tx, std::int64_t volume_id);
// The catalog id of VOLUME, registering it (and a disk row for PATH on NODE: vigild's --node;
// empty: this host's name) on first sight.
std::int64_t register_volume(pqxx::work& tx, const storage::Volume& volume, const std::string& path,
                             const std::string& node = {});

struct Reconciled {
  std::vector<catalog::VolumeSegment> found;  // what the volume holds
  catalog::RecoveryPlan plan;                 // what was done about it
  std::size_t scanned = 0;                    // segments whose records were read
  std::size_t trusted = 0;                    // closed segments taken from the catalog unread
  std::vector<RebuiltStream> rebuilt;         // streams the catalog lacked, rebuilt from segment headers
};

struct ReconcileOptions {
  bool reclaim_unreadable = false;  // `vigil fsck --repair`: free what cannot be read
  bool full_scan = false;           // read every segment's records, closed ones too (fsck)
};

// Scans VOLUME (at start only the segments the catalog cannot vouch for: trusted_segments),
// rebuilds the streams the catalog lacks from the segment headers (stream_rebuild.hpp), applies
// the recovery plan to the catalog (RESTART_US ends crash gaps), commits, then reclaims
// the space of segments nothing should point at any more. Unreadable segments are kept unless
// options.reclaim_unreadable.
Reconciled reconcile_volume(pqxx::connection& conn, storage::Volume& volume, std::int64_t volume_id,
                            std::int64_t restart_us, ReconcileOptions options = {});

// One disagreement between a volume and the catalog.
struct CatalogProblem {
  enum class Kind {
    unregistered,      // the volume has no catalog row
    open_segment,      // open in the catalog: vigild stopped uncleanly; its next start closes it
    orphan_on_disk,    // a segment with frames the catalog does not know (adopted on repair)
    unusable_on_disk,  // space held by a segment that is unreadable or has no frames
    missing_data,      // a catalog segment whose data is not on the volume
    mismatch,          // a closed segment whose frame count or end differs from the volume's
    unfinished_delete  // retention was interrupted; the next start finishes it
  };
  Kind kind;
  std::int64_t segment_id = 0;
  std::int64_t stream_id = 0;
  std::string detail;
  bool serious() const noexcept;  // lost or unindexed data (the others fix themselves at start)
  std::string describe() const;
};
const char* catalog_problem_name(CatalogProblem::Kind k) noexcept;

// The gaps between the streams REBUILT by reconcile_volume (of every volume) and their cameras'
// other streams, in one transaction: call once all volumes are reconciled. Returns gaps written.
int write_rebuild_gaps(pqxx::connection& conn, const std::set<std::int64_t>& rebuilt);

// Read-only comparison of FOUND (scan_volume) with the catalog rows of VOLUME_ID.
std::vector<CatalogProblem> check_against_catalog(pqxx::work& tx, const std::vector<catalog::VolumeSegment>& found,
                                                  std::int64_t volume_id);

}  // namespace vigil::catalog
