#include "catalog/pending_rows.hpp"

#include "catalog/node_rows.hpp"

#include <bit>
#include <cstring>
#include <pqxx/pqxx>
#include <stdexcept>
#include <type_traits>

#include "catalog/profiles.hpp"
#include "catalog/recording_rows.hpp"
#include "catalog/retention_rows.hpp"

namespace vigil::catalog {
namespace {

// The encoding: one kind byte, then the fields in declaration order, little-endian fixed-width
// integers and doubles, strings as a u32 length and the bytes. A version byte first, so a later
// vigild can still read an older spool.
constexpr std::uint8_t kVersion = 1;
enum class Kind : std::uint8_t {
  closed_segment = 1,
  stream_end = 2,
  admission_decision = 3,
  stream_open = 4,
  reclaim = 5,
  open_segment = 6,
  gap = 7
};

static_assert(std::endian::native == std::endian::little, "the spool encoding is little-endian");

class Writer {
 public:
  template <class T>
  void fixed(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void text(std::string_view s) {
    fixed(static_cast<std::uint32_t>(s.size()));
    out_.append(s);
  }
  void maybe(const std::optional<std::int64_t>& v) {
    fixed<std::uint8_t>(v ? 1 : 0);
    fixed<std::int64_t>(v.value_or(0));
  }
  void maybe(const std::optional<std::string>& v) {
    fixed<std::uint8_t>(v ? 1 : 0);
    text(v.value_or(""));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what Writer wrote; any read past the end sets failed() and yields zeros.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <class T>
  T fixed() {
    T v{};
    if (in_.size() < sizeof v) {
      bad_ = true;
      return v;
    }
    std::memcpy(&v, in_.data(), sizeof v);
    in_.remove_prefix(sizeof v);
    return v;
  }
  std::string text() {
    const auto n = fixed<std::uint32_t>();
    if (bad_ || in_.size() < n) {
      bad_ = true;
      return {};
    }
    std::string s(in_.substr(0, n));
    in_.remove_prefix(n);
    return s;
  }
  std::optional<std::int64_t> maybe_int() {
    const bool has = fixed<std::uint8_t>() != 0;
    const auto v = fixed<std::int64_t>();
    return has ? std::optional(v) : std::nullopt;
  }
  std::optional<std::string> maybe_text() {
    const bool has = fixed<std::uint8_t>() != 0;
    auto v = text();
    return has ? std::optional(std::move(v)) : std::nullopt;
  }
  bool failed() const noexcept { return bad_; }
  bool at_end() const noexcept { return in_.empty(); }
  void fail() noexcept { bad_ = true; }
  // Everything read, nothing left over.
  bool ok() const noexcept { return !bad_ && in_.empty(); }

 private:
  std::string_view in_;
  bool bad_ = false;
};

void write_segment(Writer& w, const ClosedSegmentRow& r) {
  w.fixed(r.volume_id);
  w.fixed(r.segment_id);
  w.fixed(r.stream_id);
  w.fixed(r.start_us);
  w.fixed(r.end_us);
  w.fixed(r.data_bytes);
  w.fixed(r.frame_count);
  w.fixed(static_cast<std::uint32_t>(r.extent_offsets.size()));
  for (auto o : r.extent_offsets) w.fixed(o);
  w.fixed(r.extent_bytes);
  w.fixed(r.closed_at_us);
  w.fixed(r.gop_count);
  w.text(r.gop_blob);
  w.fixed(static_cast<std::uint8_t>(r.deleting ? 1 : 0));
  w.fixed(r.checksum_crc32c);
}

void write(Writer& w, const ClosedSegmentRow& r) {
  w.fixed(Kind::closed_segment);
  write_segment(w, r);
}

void write(Writer& w, const OpenSegmentRow& r) {
  w.fixed(Kind::open_segment);
  write_segment(w, r.segment);
}

void write(Writer& w, const StreamEndRow& r) {
  w.fixed(Kind::stream_end);
  w.fixed(r.stream_id);
  w.text(r.state);
  w.fixed(r.ended_us);
  w.text(r.gap_reason);
  w.text(r.gap_detail);
}

void write(Writer& w, const AdmissionDecisionRow& r) {
  const auto& d = r.decision;
  w.fixed(Kind::admission_decision);
  w.fixed<std::uint8_t>(d.admitted ? 1 : 0);
  w.fixed(static_cast<std::int32_t>(d.cause));
  w.fixed(static_cast<std::int32_t>(d.policy));
  w.text(d.reason);
  w.fixed(d.requested_rate.Bps());
  w.fixed(d.max_rate.Bps());
  w.fixed(d.predicted_busy_s);
  w.fixed(d.budget_s);
  w.fixed(d.s_avg);
  w.fixed(d.curve_rate.Bps());
  w.fixed(static_cast<std::uint64_t>(d.streams));
  w.maybe(r.disk_id);
  w.maybe(r.stream_id);
  w.fixed(r.cycle_s);
  w.maybe(r.camera);
}

void write(Writer& w, const StreamOpenRow& r) {
  w.fixed(Kind::stream_open);
  w.fixed(r.stream_id);
  w.text(r.camera);
  w.text(r.codec);
  w.text(r.extradata);
  w.fixed(static_cast<std::int32_t>(r.width));
  w.fixed(static_cast<std::int32_t>(r.height));
  w.fixed(r.declared_rate_bps);
  w.fixed(r.admitted_rate_bps);
  w.fixed(r.disk_id);
  w.fixed(r.started_at_us);
  w.text(r.gap_why);
  w.text(std::string(role_name(r.role)));
  w.text(std::string(media_kind_name(r.media_kind)));
  w.fixed(static_cast<std::int32_t>(r.sample_rate_hz));
  w.fixed(static_cast<std::int32_t>(r.channels));
}

StreamOpenRow read_stream_open(Reader& in) {
  StreamOpenRow r;
  r.stream_id = in.fixed<std::int64_t>();
  r.camera = in.text();
  r.codec = in.text();
  r.extradata = in.text();
  r.width = in.fixed<std::int32_t>();
  r.height = in.fixed<std::int32_t>();
  r.declared_rate_bps = in.fixed<std::int64_t>();
  r.admitted_rate_bps = in.fixed<std::int64_t>();
  r.disk_id = in.fixed<std::int64_t>();
  r.started_at_us = in.fixed<std::int64_t>();
  r.gap_why = in.text();
  if (!in.at_end()) {
    // Unknown words make the row undecodable (as any bad field does): never a guessed track.
    const auto role = parse_role(in.text());
    const auto kind = parse_media_kind(in.text());
    if (!role || !kind) in.fail();
    else {
      r.role = *role;
      r.media_kind = *kind;
    }
  }
  if (!in.at_end()) {
    r.sample_rate_hz = in.fixed<std::int32_t>();
    r.channels = in.fixed<std::int32_t>();
  }
  return r;
}

void write(Writer& w, const ReclaimRow& r) {
  w.fixed(Kind::reclaim);
  w.fixed<std::uint8_t>(r.freed ? 1 : 0);
  w.fixed(static_cast<std::uint32_t>(r.segment_ids.size()));
  for (auto id : r.segment_ids) w.fixed(id);
}

ReclaimRow read_reclaim(Reader& in) {
  ReclaimRow r;
  r.freed = in.fixed<std::uint8_t>() != 0;
  const auto n = in.fixed<std::uint32_t>();
  for (std::uint32_t i = 0; i < n && !in.failed(); ++i) r.segment_ids.push_back(in.fixed<std::uint64_t>());
  return r;
}

void write(Writer& w, const GapRow& r) {
  w.fixed(Kind::gap);
  w.fixed(r.stream_id);
  w.fixed(r.start_us);
  w.fixed(r.end_us);
  w.text(r.reason);
  w.text(r.detail);
}

GapRow read_gap(Reader& in) {
  GapRow r;
  r.stream_id = in.fixed<std::int64_t>();
  r.start_us = in.fixed<std::int64_t>();
  r.end_us = in.fixed<std::int64_t>();
  r.reason = in.text();
  r.detail = in.text();
  return r;
}

ClosedSegmentRow read_closed_segment(Reader& in) {
  ClosedSegmentRow r;
  r.volume_id = in.fixed<std::int64_t>();
  r.segment_id = in.fixed<std::uint64_t>();
  r.stream_id = in.fixed<std::uint64_t>();
  r.start_us = in.fixed<std::int64_t>();
  r.end_us = in.fixed<std::int64_t>();
  r.data_bytes = in.fixed<std::uint64_t>();
  r.frame_count = in.fixed<std::uint64_t>();
  const auto n = in.fixed<std::uint32_t>();
  for (std::uint32_t i = 0; i < n && !in.failed(); ++i) r.extent_offsets.push_back(in.fixed<std::uint64_t>());
  r.extent_bytes = in.fixed<std::uint64_t>();
  r.closed_at_us = in.fixed<std::int64_t>();
  r.gop_count = in.fixed<std::uint32_t>();
  r.gop_blob = in.text();
  r.deleting = in.fixed<std::uint8_t>() != 0;
  // Absent in rows spooled by a vigild from before the segment checksum: unknown.
  if (!in.at_end()) r.checksum_crc32c = in.fixed<std::uint32_t>();
  return r;
}

StreamEndRow read_stream_end(Reader& in) {
  StreamEndRow r;
  r.stream_id = in.fixed<std::int64_t>();
  r.state = in.text();
  r.ended_us = in.fixed<std::int64_t>();
  r.gap_reason = in.text();
  r.gap_detail = in.text();
  return r;
}

AdmissionDecisionRow read_admission_decision(Reader& in) {
  AdmissionDecisionRow r;
  auto& d = r.decision;
  d.admitted = in.fixed<std::uint8_t>() != 0;
  d.cause = static_cast<admission::RefuseCause>(in.fixed<std::int32_t>());
  d.policy = static_cast<admission::Policy>(in.fixed<std::int32_t>());
  d.reason = in.text();
  d.requested_rate = Rate::from_Bps(in.fixed<double>());
  d.max_rate = Rate::from_Bps(in.fixed<double>());
  d.predicted_busy_s = in.fixed<double>();
  d.budget_s = in.fixed<double>();
  d.s_avg = in.fixed<double>();
  d.curve_rate = Rate::from_Bps(in.fixed<double>());
  d.streams = static_cast<std::size_t>(in.fixed<std::uint64_t>());
  r.disk_id = in.maybe_int();
  r.stream_id = in.maybe_int();
  r.cycle_s = in.fixed<double>();
  r.camera = in.maybe_text();
  return r;
}

// The state of segment R.segment_id, which is already in the catalog; invalid_argument when
// another stream or volume holds that id.
std::string existing_segment_state(pqxx::work& tx, const ClosedSegmentRow& r) {
  const auto id = static_cast<std::int64_t>(r.segment_id);
  const auto had = tx.exec_params1("SELECT stream_id, volume_id, state FROM segments WHERE id = $1", id);
  if (had[0].as<std::int64_t>() != static_cast<std::int64_t>(r.stream_id) || had[1].as<std::int64_t>() != r.volume_id) {
    throw std::invalid_argument("segment id " + std::to_string(id) + " is taken by stream " + had[0].as<std::string>() +
                                " on volume " + had[1].as<std::string>());
  }
  return had[2].as<std::string>();
}

// R's extents and GOP index, replacing what an earlier progress row wrote.
void write_extents_and_gops(pqxx::work& tx, const ClosedSegmentRow& r) {
  const auto id = static_cast<std::int64_t>(r.segment_id);
  tx.exec_params0("DELETE FROM segment_extents WHERE segment_id = $1 AND ordinal >= $2", id,
                  static_cast<int>(r.extent_offsets.size()));
  for (std::size_t i = 0; i < r.extent_offsets.size(); ++i) {
    tx.exec_params0(
        "INSERT INTO segment_extents (segment_id, ordinal, volume_offset_bytes, length_bytes) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT (segment_id, ordinal) DO UPDATE SET "
        "volume_offset_bytes = EXCLUDED.volume_offset_bytes, length_bytes = EXCLUDED.length_bytes",
        id, static_cast<int>(i), static_cast<std::int64_t>(r.extent_offsets[i]),
        static_cast<std::int64_t>(r.extent_bytes));
  }
  tx.exec_params0(
      "INSERT INTO gop_index (segment_id, format, gop_count, blob) VALUES ($1, 1, $2, $3) "
      "ON CONFLICT (segment_id) DO UPDATE SET gop_count = EXCLUDED.gop_count, blob = EXCLUDED.blob",
      id, static_cast<int>(r.gop_count), pqxx::binarystring(r.gop_blob));
}

// Fencing in the catalog (docs/nodes.md): the epoch stream STREAM_ID was opened under, when the
// camera has moved on since (another node owns it, or the same node under a new epoch); none
// otherwise. Holds the camera row (FOR SHARE), so the epoch cannot change before the commit.
std::optional<std::int64_t> stale_epoch(pqxx::work& tx, std::uint64_t stream_id) {
  const auto r = tx.exec_params1("SELECT vigil_stale_epoch($1)", static_cast<std::int64_t>(stream_id));
  if (r[0].is_null()) return std::nullopt;
  return r[0].as<std::int64_t>();
}

// A segment row of a stream under a stale epoch: the catalog refuses it as it stands (the trigger
// segments_owner_epoch, SQLSTATE VF001), but its footage is on the node's volume and was
// acknowledged to the recorder, so it is written marked (fenced_epoch) and stays findable; the
// stream ends as 'fenced' at its last recorded instant, and the caller tells the node.
// A stream the sweeper ended as 'failed_over' came from a node that was cut off from the catalog,
// not dead (docs/nodes.md, "A node cut off from PostgreSQL"): it recorded on, so it is 'fenced'
// too, and the 'failover' gap the next node recorded after it shrinks to what nobody recorded.
void end_fenced_stream(pqxx::work& tx, std::uint64_t stream_id) {
  const auto ended = tx.exec_params(
      "UPDATE streams s SET state = 'fenced', ended_at_us = GREATEST(s.started_at_us, "
      "  COALESCE((SELECT max(end_us) FROM segments g WHERE g.stream_id = s.id), s.started_at_us)) "
      "WHERE s.id = $1 AND s.state IN ('pending', 'recording', 'fenced', 'failed_over') RETURNING s.ended_at_us",
      static_cast<std::int64_t>(stream_id));
  if (!ended.empty()) shorten_failover_gap(tx, static_cast<std::int64_t>(stream_id), ended[0][0].as<std::int64_t>());
}

Applied apply_row(pqxx::work& tx, const ClosedSegmentRow& r) {
  const auto id = static_cast<std::int64_t>(r.segment_id);
  const auto stale = stale_epoch(tx, r.stream_id);
  const auto inserted = tx.exec_params(
      "INSERT INTO segments (id, stream_id, volume_id, state, start_us, end_us, data_bytes, frame_count, "
      "checksum_crc32c, closed_at_us, fenced_epoch) VALUES ($1, $2, $3, $9, $4, $5, $6, $7, $10, $8, $11) "
      "ON CONFLICT (id) DO NOTHING RETURNING id",
      id, static_cast<std::int64_t>(r.stream_id), r.volume_id, r.start_us, r.end_us,
      static_cast<std::int64_t>(r.data_bytes), static_cast<std::int64_t>(r.frame_count), r.closed_at_us,
      r.deleting ? "deleting" : "closed", static_cast<std::int64_t>(r.checksum_crc32c), stale);
  if (inserted.empty()) {
    // Already there: its open row (its progress so far), the same segment committed before a
    // restart (a replayed spool row), or another one with the same id, a real conflict, refused.
    const std::string state = existing_segment_state(tx, r);
    if (state != "open") return {};
    tx.exec_params0(
        "UPDATE segments SET state = $2, end_us = $3, data_bytes = $4, frame_count = $5, checksum_crc32c = $7, "
        "closed_at_us = $6, fenced_epoch = COALESCE(fenced_epoch, $8) WHERE id = $1",
        id, r.deleting ? "deleting" : "closed", r.end_us, static_cast<std::int64_t>(r.data_bytes),
        static_cast<std::int64_t>(r.frame_count), r.closed_at_us, static_cast<std::int64_t>(r.checksum_crc32c), stale);
  }
  write_extents_and_gops(tx, r);
  if (!stale) return {};
  end_fenced_stream(tx, r.stream_id);
  return {static_cast<std::int64_t>(r.stream_id)};
}

Applied apply_row(pqxx::work& tx, const OpenSegmentRow& o) {
  const ClosedSegmentRow& r = o.segment;
  const auto id = static_cast<std::int64_t>(r.segment_id);
  const auto stale = stale_epoch(tx, r.stream_id);
  const auto inserted = tx.exec_params(
      "INSERT INTO segments (id, stream_id, volume_id, state, start_us, end_us, data_bytes, frame_count, fenced_epoch) "
      "VALUES ($1, $2, $3, 'open', $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING RETURNING id",
      id, static_cast<std::int64_t>(r.stream_id), r.volume_id, r.start_us, r.end_us,
      static_cast<std::int64_t>(r.data_bytes), static_cast<std::int64_t>(r.frame_count), stale);
  if (inserted.empty()) {
    // Closed already (a late or replayed progress row): the closed row stands.
    if (existing_segment_state(tx, r) != "open") return {};
    tx.exec_params0(
        "UPDATE segments SET end_us = $2, data_bytes = $3, frame_count = $4, fenced_epoch = COALESCE(fenced_epoch, "
        "$5) WHERE id = $1",
        id, r.end_us, static_cast<std::int64_t>(r.data_bytes), static_cast<std::int64_t>(r.frame_count), stale);
  }
  write_extents_and_gops(tx, r);
  if (!stale) return {};
  end_fenced_stream(tx, r.stream_id);
  return {static_cast<std::int64_t>(r.stream_id)};
}

void apply_row(pqxx::work& tx, const StreamEndRow& r) {
  const auto state = tx.exec_params("SELECT state FROM streams WHERE id = $1", r.stream_id);
  if (state.empty()) throw std::invalid_argument("stream " + std::to_string(r.stream_id) + " is not in the catalog");
  const auto now = state[0][0].as<std::string>();
  if (now != "pending" && now != "recording") return;  // ended already (a replayed spool row)
  if (r.gap_reason.empty()) end_stream(tx, r.stream_id, r.state, r.ended_us);
  else end_stream_with_gap(tx, r.stream_id, r.state, r.ended_us, r.gap_reason, r.gap_detail);
}

void apply_row(pqxx::work& tx, const StreamOpenRow& r) {
  if (!tx.exec_params("SELECT 1 FROM streams WHERE id = $1", r.stream_id).empty()) return;  // replayed
  const auto cam = ensure_camera(tx, r.camera);
  record_reconnect_gap(tx, cam, r.role, r.media_kind, r.started_at_us, r.gap_why);
  // Opened while the catalog could not be asked: under the camera's epoch if its disk's node still
  // owns it (or receives it in a drain); a camera another node owns now was recorded here while
  // cut off (partition footage): an epoch no claim ever draws (0), so its segments land marked
  // fenced, findable, and the node is told to stop.
  const auto epoch = tx.exec_params(
      "SELECT CASE WHEN c.owner_node IS NULL THEN NULL WHEN c.owner_node = d.node THEN c.owner_epoch "
      "WHEN c.handover_node = d.node THEN c.handover_epoch ELSE 0 END "
      "FROM cameras c, disks d WHERE c.id = $1 AND d.id = $2",
      cam, r.disk_id);
  open_stream(tx, {.camera_id = cam,
                   .role = r.role,
                   .media_kind = r.media_kind,
                   .codec = r.codec,
                   .extradata = r.extradata,
                   .width = r.width,
                   .height = r.height,
                   .sample_rate_hz = r.sample_rate_hz,
                   .channels = r.channels,
                   .declared_rate_bps = r.declared_rate_bps,
                   .admitted_rate_bps = r.admitted_rate_bps,
                   .disk_id = r.disk_id,
                   .started_at_us = r.started_at_us,
                   .id = r.stream_id,
                   .owner_epoch = epoch.empty() || epoch[0][0].is_null()
                                      ? std::nullopt
                                      : std::optional<std::int64_t>(epoch[0][0].as<std::int64_t>())});
}

void apply_row(pqxx::work& tx, const ReclaimRow& r) {
  if (r.freed) finish_deleting(tx, r.segment_ids);
  else mark_deleting(tx, r.segment_ids, /*check_locks=*/false);
}

void apply_row(pqxx::work& tx, const GapRow& r) {
  (void)record_refused_gap(tx, r.stream_id, r.start_us, r.end_us, r.reason, r.detail);
}

void apply_row(pqxx::work& tx, const AdmissionDecisionRow& r) {
  log_decision(tx, r.decision, r.disk_id, r.stream_id, r.cycle_s, r.camera);
}

}  // namespace

ClosedSegmentRow closed_segment_row(std::int64_t volume_id, const storage::SegmentSummary& seg,
                                    const std::vector<std::uint64_t>& extent_offsets, std::uint64_t extent_bytes,
                                    std::int64_t closed_at_us) {
  ClosedSegmentRow r;
  r.volume_id = volume_id;
  r.segment_id = seg.segment_id;
  r.stream_id = seg.stream_id;
  r.start_us = seg.first_pts == storage::kNoTimestamp ? closed_at_us : seg.first_pts;
  r.end_us = seg.end_pts == storage::kNoTimestamp ? r.start_us : std::max(r.start_us, seg.end_pts);
  r.data_bytes = seg.end_offset;
  r.frame_count = seg.frame_count;
  r.extent_offsets = extent_offsets;
  r.extent_bytes = extent_bytes;
  r.closed_at_us = closed_at_us;
  r.gop_count = static_cast<std::uint32_t>(seg.gop_index.size());
  r.deleting = seg.discard;
  r.checksum_crc32c = seg.checksum_crc32c;
  const auto blob = seg.gop_index.encode();
  r.gop_blob.assign(reinterpret_cast<const char*>(blob.data()), blob.size());
  return r;
}

OpenSegmentRow open_segment_row(std::int64_t volume_id, const storage::SegmentSummary& segment,
                                const std::vector<std::uint64_t>& extent_offsets, std::uint64_t extent_bytes,
                                std::int64_t now_us) {
  return OpenSegmentRow{closed_segment_row(volume_id, segment, extent_offsets, extent_bytes, now_us)};
}

std::string encode(const PendingRow& row) {
  Writer w;
  w.fixed(kVersion);
  std::visit([&](const auto& r) { write(w, r); }, row);
  return w.take();
}

std::optional<PendingRow> decode(std::string_view bytes) {
  Reader in(bytes);
  if (in.fixed<std::uint8_t>() != kVersion) return std::nullopt;
  std::optional<PendingRow> row;
  switch (static_cast<Kind>(in.fixed<std::uint8_t>())) {
    case Kind::closed_segment: row = read_closed_segment(in); break;
    case Kind::stream_end: row = read_stream_end(in); break;
    case Kind::admission_decision: row = read_admission_decision(in); break;
    case Kind::stream_open: row = read_stream_open(in); break;
    case Kind::reclaim: row = read_reclaim(in); break;
    case Kind::open_segment: row = OpenSegmentRow{read_closed_segment(in)}; break;
    case Kind::gap: row = read_gap(in); break;
    default: return std::nullopt;
  }
  if (!in.ok()) return std::nullopt;
  return row;
}

std::string label(const PendingRow& row) {
  struct {
    std::string operator()(const ClosedSegmentRow& r) const { return "close segment " + std::to_string(r.segment_id); }
    std::string operator()(const OpenSegmentRow& r) const {
      return "open segment " + std::to_string(r.segment.segment_id);
    }
    std::string operator()(const StreamEndRow& r) const { return "end stream " + std::to_string(r.stream_id); }
    std::string operator()(const AdmissionDecisionRow&) const { return "admission decision"; }
    std::string operator()(const StreamOpenRow& r) const { return "open stream " + std::to_string(r.stream_id); }
    std::string operator()(const GapRow& r) const { return r.reason + " gap of stream " + std::to_string(r.stream_id); }
    std::string operator()(const ReclaimRow& r) const {
      return std::string(r.freed ? "reclaimed " : "reclaiming ") + std::to_string(r.segment_ids.size()) + " segments";
    }
  } name;
  return std::visit(name, row);
}

Applied apply(pqxx::work& tx, const PendingRow& row) {
  return std::visit(
      [&](const auto& r) -> Applied {
        if constexpr (std::is_same_v<decltype(apply_row(tx, r)), Applied>) {
          return apply_row(tx, r);
        } else {
          apply_row(tx, r);
          return {};
        }
      },
      row);
}

}  // namespace vigil::catalog
