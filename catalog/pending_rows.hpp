#pragma once
// The catalog rows vigild produces while recording, as values (docs/catalog.md, "When the catalog
// is down"): a closed segment, a stream's end, an admission decision, a gap of refused frames. The Batcher commits them;
// while PostgreSQL is unreachable it keeps them in its spool (catalog/spool.hpp), so each row has
// a byte encoding that survives a restart of vigild.
//
// Applying a row twice leaves the catalog as applying it once would (a crash between the commit
// of a spooled row and the spool's truncation replays it): a segment already there with the same
// stream and volume is skipped, a stream already ended is not ended again, a stream already
// opened is not opened again, a gap already there (stream, start, reason) is not added again. An admission decision
// replayed twice is the one exception (an audit row, written twice).
// Thread: any (values). Errors: apply() throws (pqxx; std::invalid_argument for a segment id
// taken by another stream); decode() answers nullopt for bytes it does not recognise.
#include <cstdint>
#include <optional>
#include <pqxx/transaction>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/track.hpp"
#include "admission/admission.hpp"
#include "storage/segment_writer.hpp"

namespace vigil::catalog {

struct ClosedSegmentRow {
  std::int64_t volume_id = 0;
  std::uint64_t segment_id = 0, stream_id = 0;
  std::int64_t start_us = 0, end_us = 0;
  std::uint64_t data_bytes = 0, frame_count = 0;
  std::vector<std::uint64_t> extent_offsets;  // device offsets, by ordinal
  std::uint64_t extent_bytes = 0;
  std::int64_t closed_at_us = 0;
  std::uint32_t gop_count = 0;
  std::string gop_blob;   // storage::GopIndex::encode()
  bool deleting = false;  // the writer gave it up (SegmentSummary::discard): catalogued 'deleting', freed by recovery
  // SegmentSummary::checksum_crc32c (0: unknown). Encoded last, so spool rows of an older vigild,
  // which end before it, still read (as unknown).
  std::uint32_t checksum_crc32c = 0;
};
// The row of SEGMENT (a writer's summary) closed at CLOSED_AT_US on VOLUME_ID.
ClosedSegmentRow closed_segment_row(std::int64_t volume_id, const storage::SegmentSummary& segment,
                                    const std::vector<std::uint64_t>& extent_offsets, std::uint64_t extent_bytes,
                                    std::int64_t closed_at_us);

// An open segment as far as it is durable (docs/catalog.md, "The open segment"): its row is
// inserted in state 'open' at its first durable cycle and its end, extents and GOP index are
// brought up to date at a bounded interval until its ClosedSegmentRow closes it. Readers on this
// node see fresher figures from memory (server/disks/recent_segments.hpp); this row is what other
// readers and a restart see. A progress row that arrives after the close is ignored.
struct OpenSegmentRow {
  ClosedSegmentRow segment;  // closed_at_us and deleting unused
};

// The progress row of SEGMENT, still open, on VOLUME_ID (NOW_US: its start when it has no frame).
OpenSegmentRow open_segment_row(std::int64_t volume_id, const storage::SegmentSummary& segment,
                                const std::vector<std::uint64_t>& extent_offsets, std::uint64_t extent_bytes,
                                std::int64_t now_us);

// A stream's end: STATE (stopped, interrupted, stalled) at ENDED_US; with GAP_REASON, the stream
// ends at its last recorded instant and a gap with that reason runs from there to ENDED_US.
struct StreamEndRow {
  std::int64_t stream_id = 0;
  std::string state;
  std::int64_t ended_us = 0;
  std::string gap_reason{}, gap_detail{};
};

struct AdmissionDecisionRow {
  admission::Decision decision{};
  std::optional<std::int64_t> disk_id, stream_id;
  double cycle_s = 0;
  std::optional<std::string> camera{};
};

// A stream opened while the catalog could not be asked: its id was reserved ahead
// (reserve_stream_ids), its camera is found or registered by name, and the hole since the
// camera's previous stream becomes a gap (record_reconnect_gap, with GAP_WHY) when it commits.
struct StreamOpenRow {
  std::int64_t stream_id = 0;
  std::string camera;
  std::string codec;
  std::string extradata{};
  int width = 0, height = 0;
  std::int64_t declared_rate_bps = 0, admitted_rate_bps = 0;
  std::int64_t disk_id = 0;
  std::int64_t started_at_us = 0;
  std::string gap_why{};
  // Its track; encoded after GAP_WHY, so a row spooled before tracks existed decodes as main video.
  TrackRole role = TrackRole::main;
  MediaKind media_kind = MediaKind::video;
  // Audio; encoded after the track, so a row spooled before they were kept decodes with none (0).
  int sample_rate_hz = 0, channels = 0;
};

// Retention during a catalog outage (server/disks/retention_service.hpp): SEGMENT_IDS are being
// reclaimed (FREED false: marked 'deleting' whatever the locks say now, before their extents are
// freed — this row is durable first) or have been (FREED true: their rows go).
struct ReclaimRow {
  std::vector<std::uint64_t> segment_ids;
  bool freed = false;
};

// Frames refused and never stored (server/recording/refused_run.hpp): a gap of STREAM_ID with
// REASON (rate_exceeded, deadline_missed, io_error), applied by record_refused_gap.
struct GapRow {
  std::int64_t stream_id = 0;
  std::int64_t start_us = 0, end_us = 0;
  std::string reason, detail{};
};

// New alternatives go at the end: a spool written by an older vigild must still decode.
using PendingRow = std::variant<ClosedSegmentRow, StreamEndRow, AdmissionDecisionRow, StreamOpenRow, ReclaimRow,
                                OpenSegmentRow, GapRow>;

std::string encode(const PendingRow& row);
std::optional<PendingRow> decode(std::string_view bytes);
// For logs: "close segment 12", "end stream 3", "admission decision".
std::string label(const PendingRow& row);
// What applying a row found. A segment row of a stream whose camera has moved on (a stale
// ownership epoch: docs/nodes.md, "Fencing in the catalog") is refused as it stands; it is written
// marked (segments.fenced_epoch: acknowledged footage stays findable) and its stream ends as
// 'fenced': FENCED_STREAM names it, and the node that wrote it must stop that camera.
struct Applied {
  std::optional<std::int64_t> fenced_stream{};
};
Applied apply(pqxx::work& tx, const PendingRow& row);

}  // namespace vigil::catalog
