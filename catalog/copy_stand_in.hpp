#pragma once
// When an archive copy stands in for a segment still on a volume (docs/nodes.md, "A holder that is
// down"; docs/archive.md, "Readers"): the segment is closed — its bytes will not change, and its
// copy holds all of them — and the node whose volume holds it is down (its lease expired), so no
// node can read the volume. Then any other node with an archive tier reads the copy, as it reads an
// 'archived' segment. A segment of a live node is never read from the store (its node serves it,
// and the front door proxies there); nor is one of the reading node itself (a node whose own lease
// lapsed for a moment — after a catalog restart — still reads its own volumes).
// One rule for the front door (catalog/front_door_rows.*, who answers) and the plan
// (catalog/playback_rows.*, what is read), so the two never disagree.
#include <string>

namespace vigil::catalog {

// SQL: segment g (aliased g, its volume aliased v) is closed and on a volume of a node other than
// the text parameter $READER_PARAM whose lease has expired, on PostgreSQL's clock. Always false
// for an empty reader (a server alone, or one without an archive tier). Says nothing of a copy:
// the caller joins or tests segment_copies.
inline std::string holder_down_sql(int reader_param) {
  const std::string r = "$" + std::to_string(reader_param) + "::text";
  return "(g.state = 'closed' AND " + r + " <> '' AND EXISTS (SELECT 1 FROM disks hd JOIN nodes hn ON " +
         "hn.node = hd.node WHERE hd.id = v.disk_id AND hd.node <> " + r + " AND hn.lease_until <= clock_timestamp()))";
}

// SQL: segment g (as above) has a verified copy in the archive (a segment_copies row is written only
// once the store holds the bytes, checked).
inline constexpr const char* kHasCopySql =
    "EXISTS (SELECT 1 FROM segment_copies hk WHERE hk.segment_id = g.id AND hk.tier = 's3')";

}  // namespace vigil::catalog
