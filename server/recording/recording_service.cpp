#include "server/recording/recording_service.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <pqxx/pqxx>

#include "common/log.hpp"
#include "common/media_limits.hpp"
#include "catalog/profiles.hpp"
#include "catalog/pending_rows.hpp"
#include "catalog/node_rows.hpp"
#include "catalog/recording_rows.hpp"
#include "server/recording/stream_description_of.hpp"
#include "storage/stream_buffer.hpp"

namespace asio = boost::asio;

namespace vigil::server {
namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Timestamps further than this from the previous frame's end are a discontinuity, not time
// passing: B-frame reordering stays well within a second back, and a camera that stalls for
// longer than 10 s without closing its connection is treated as having restarted its clock.
constexpr std::int64_t kMaxBackwardsUs = 1'000'000;
constexpr std::int64_t kMaxForwardUs = 10'000'000;
// A recorder's MediaLoss spans at most this: a longer hole is a lost camera (its recorder ends,
// and the camera's reconnect gap covers it), not a report.
constexpr std::int64_t kMaxMediaLossUs = 3'600'000'000;
// A recorder's clock further than this from ours is not trusted for timestamps.
constexpr std::int64_t kMaxClockSkewUs = 3'600'000'000;
// Re-admission: a source is re-admitted when it sent this much more than its admitted rate over
// a whole window while policed (a burst does not qualify: policing is right for it), at what it
// sent times the headroom (VBR varies around its mean); after a refusal, not before the backoff.
constexpr double kReadmitAbove = 1.1;
constexpr double kReadmitHeadroom = 1.25;
constexpr auto kReadmitBackoff = std::chrono::seconds(60);
// How stale the catalog's row of an open segment may be (its end, extents and GOP index): what
// readers elsewhere see of it, and what a restart finds before its volume scan. Readers on this
// node see every durable cycle (RecentSegments).
constexpr std::int64_t kProgressEveryUs = 10'000'000;

FrameKey frame_key(const proto::MediaPacket& m, std::span<const std::byte> payload) {
  return {
      .pts = m.pts(), .dts = m.dts(), .has_pts = m.has_pts(), .has_dts = m.has_dts(), .payload_bytes = payload.size()};
}

// Why the stream's half was full when it refused a packet for its rate (RecordingStream::refused_because).
LossReason loss_reason(storage::RecordingStream::Held held) {
  switch (held) {
    case storage::RecordingStream::Held::write_pending: return LossReason::deadline_missed;
    case storage::RecordingStream::Held::segment_failed: return LossReason::io_error;
    case storage::RecordingStream::Held::no: break;
  }
  return LossReason::rate_exceeded;
}

static_assert(static_cast<int>(CameraMetrics::Loss::rate_exceeded) == static_cast<int>(LossReason::rate_exceeded) &&
              static_cast<int>(CameraMetrics::Loss::deadline_missed) == static_cast<int>(LossReason::deadline_missed) &&
              static_cast<int>(CameraMetrics::Loss::io_error) == static_cast<int>(LossReason::io_error));

}  // namespace

RecordingService::RecordingService(DiskSet& disks, LiveFeeds& feeds, CatalogPool& catalog, catalog::Batcher& batcher,
                                   Metrics* metrics, std::chrono::seconds max_segment, std::string node)
    : disks_(disks),
      feeds_(feeds),
      catalog_(catalog),
      batcher_(batcher),
      metrics_(metrics),
      max_segment_(max_segment),
      node_(std::move(node)) {}

asio::awaitable<RecordingService::OpenResult> RecordingService::open(const proto::OpenRecord& req,
                                                                     const std::function<void()>& notify,
                                                                     std::shared_ptr<Recording>& out) {
  const auto& codec = req.codec();
  if (req.stream_name().empty() || codec.codec_name().empty() || codec.time_base_num() <= 0 ||
      codec.time_base_den() <= 0) {
    co_return refuse(proto::REFUSE_REASON_INVALID_REQUEST, "open-record needs a stream name, a codec and a time base");
  }
  // The media trust boundary (common/media_limits.hpp): what is stored here is later handed to
  // FFmpeg by every export, HLS segment and thumbnail of it, so it is refused now, not then.
  if (auto breach = media_limits_breach({.codec = codec.codec_name(),
                                         .extradata = codec.extradata(),
                                         .width = codec.width(),
                                         .height = codec.height(),
                                         .time_base_num = codec.time_base_num(),
                                         .time_base_den = codec.time_base_den(),
                                         .sample_rate = codec.sample_rate(),
                                         .channels = codec.channels()});
      !breach.empty()) {
    co_return refuse(proto::REFUSE_REASON_INVALID_REQUEST, "open-record refused: " + breach);
  }
  // The camera's track this stream records (empty: main video, what recorders before tracks send).
  const auto role = parse_role(req.role());
  if (!role) co_return refuse(proto::REFUSE_REASON_INVALID_REQUEST, "open-record role must be \"main\" or \"sub\"");
  const auto media_kind = parse_media_kind(req.media_kind());
  if (!media_kind) {
    co_return refuse(proto::REFUSE_REASON_INVALID_REQUEST, "open-record media_kind must be \"video\" or \"audio\"");
  }
  const Track track{.camera = req.stream_name(), .role = *role, .media_kind = *media_kind};
  const std::uint64_t peak_bps =
      req.declared_peak_rate_bps() ? req.declared_peak_rate_bps() : req.declared_average_rate_bps();
  if (peak_bps == 0) co_return refuse(proto::REFUSE_REASON_INVALID_REQUEST, "open-record needs a declared rate");
  admission::StreamDemand demand{.write = true,
                                 .peak_rate = Rate::from_bps(peak_bps),
                                 .average_rate = Rate::from_bps(req.declared_average_rate_bps())};

  // The catalog has been down so long that its backlog reached the batcher's bound: the streams
  // that record go on (their rows still queue and spool), new ones wait until it drains.
  if (batcher_.backlogged()) {
    co_return refuse(proto::REFUSE_REASON_UNSPECIFIED, "the catalog is unreachable and its backlog is full (" +
                                                           std::to_string(batcher_.waiting()) +
                                                           " rows wait); new recordings are refused until it drains");
  }
  // Admission: on the disk with the most real-time share left once it is admitted.
  auto admitted = disks_.admit(demand, DiskMetrics::Kind::recording, req.stream_name());
  if (auto* no = std::get_if<Refusal>(&admitted)) co_return to_refuse(*no);
  const Admitted granted = std::get<Admitted>(std::move(admitted));
  Disk* chosen = granted.disk;
  demand = granted.demand;

  // The recorder's clock, if it gives one and it is sane: its first packet's capture time.
  const std::int64_t opened_at = now_us();
  std::int64_t first_wall = 0;
  if (req.first_wall_us() != 0 && std::llabs(req.first_wall_us() - opened_at) < kMaxClockSkewUs) {
    first_wall = req.first_wall_us();
  }
  // Catalog rows, on the catalog pool.
  const std::int64_t disk_id = chosen->disk_id;
  std::int64_t stream_id = 0;
  bool gap = false;
  bool queued = false;  // the catalog could not be asked: the stream's row waits on the batcher
  const int top_up = spare_stream_ids() < kSpareStreamIds / 2 ? kSpareStreamIds : 0;
  std::vector<std::int64_t> reserved;
  try {
    stream_id = co_await catalog_.run([&, disk_id, top_up](pqxx::connection& c) {
      pqxx::work tx(c);
      if (top_up > 0) reserved = catalog::reserve_stream_ids(tx, top_up);
      const auto cam = catalog::ensure_camera(tx, req.stream_name());
      // Fencing: a node that lost the camera to another node opens no stream of it; the stream
      // carries the epoch it opens under, and its segment rows are refused once that is stale.
      std::optional<std::int64_t> epoch;
      if (!node_.empty()) epoch = catalog::check_owner(tx, cam, node_);
      // Reconnecting continues the track's recording: the hole since its last stream is a gap.
      gap = catalog::record_reconnect_gap(tx, cam, track.role, track.media_kind,
                                          first_wall ? std::min(first_wall, opened_at) : opened_at, req.gap_reason());
      const auto id =
          catalog::open_stream(tx, {.camera_id = cam,
                                    .role = track.role,
                                    .media_kind = track.media_kind,
                                    .codec = codec.codec_name(),
                                    .extradata = codec.extradata(),
                                    .width = codec.width(),
                                    .height = codec.height(),
                                    .sample_rate_hz = codec.sample_rate(),
                                    .channels = codec.channels(),
                                    .declared_rate_bps = static_cast<std::int64_t>(peak_bps),
                                    .admitted_rate_bps = static_cast<std::int64_t>(peak_bps),
                                    .disk_id = disk_id,
                                    .started_at_us = first_wall ? std::min(first_wall, opened_at) : opened_at,
                                    .owner_epoch = epoch});
      tx.commit();
      return id;
    });
  } catch (const catalog::Fenced& e) {
    // Another node owns the camera now (docs/nodes.md): it records it there, not here.
    disks_.log_admitted(granted, DiskMetrics::Kind::recording, std::nullopt, req.stream_name());
    disks_.release(*chosen, demand.id);
    log::warn("recording refused: another node owns the camera", {{"name", req.stream_name()}, {"error", e.what()}});
    co_return refuse(proto::REFUSE_REASON_STREAM_BUSY, e.what());
  } catch (const std::invalid_argument& e) {
    // The request itself is wrong (a camera name the catalog refuses).
    disks_.log_admitted(granted, DiskMetrics::Kind::recording, std::nullopt, req.stream_name());
    disks_.release(*chosen, demand.id);
    co_return refuse(proto::REFUSE_REASON_INVALID_REQUEST, std::string("catalog: ") + e.what());
  } catch (const std::exception& e) {
    // The catalog cannot be asked (down, frozen, cut): the recording is not held up by it. It
    // gets an id reserved ahead, and its row is queued in order before any row of its own.
    const auto id = take_spare_stream_id();
    if (!id) {
      disks_.log_admitted(granted, DiskMetrics::Kind::recording, std::nullopt, req.stream_name());
      disks_.release(*chosen, demand.id);
      co_return refuse(proto::REFUSE_REASON_UNSPECIFIED,
                       std::string("the catalog is unavailable and no stream id is reserved; try again (") + e.what() +
                           ")");
    }
    stream_id = *id;
    queued = true;
    batcher_.enqueue(catalog::StreamOpenRow{.stream_id = stream_id,
                                            .camera = req.stream_name(),
                                            .codec = codec.codec_name(),
                                            .extradata = codec.extradata(),
                                            .width = codec.width(),
                                            .height = codec.height(),
                                            .declared_rate_bps = static_cast<std::int64_t>(peak_bps),
                                            .admitted_rate_bps = static_cast<std::int64_t>(peak_bps),
                                            .disk_id = disk_id,
                                            .started_at_us = first_wall ? std::min(first_wall, opened_at) : opened_at,
                                            .gap_why = req.gap_reason(),
                                            .role = track.role,
                                            .media_kind = track.media_kind,
                                            .sample_rate_hz = codec.sample_rate(),
                                            .channels = codec.channels()});
    log::warn("catalog unavailable: recording opened with a reserved stream id; its row is queued",
              {{"stream", stream_id}, {"name", req.stream_name()}, {"error", e.what()}});
  }
  if (!reserved.empty()) add_spare_stream_ids(reserved);

  disks_.log_admitted(granted, DiskMetrics::Kind::recording, stream_id, req.stream_name());
  auto r = std::make_shared<Recording>();
  r->stream_id = static_cast<std::uint64_t>(stream_id);
  r->disk = chosen;
  r->demand = demand;
  r->time_num = codec.time_base_num();
  r->time_den = codec.time_base_den();
  r->first_wall_us = first_wall;
  r->notify = notify;
  r->name = req.stream_name();
  r->main_video = track.role == TrackRole::main && track.media_kind == MediaKind::video;
  if (metrics_) {
    r->camera = &metrics_->camera(req.stream_name());
    if (gap) r->camera->gap("source_lost");
    r->camera->stream_started(demand.peak_rate, r->main_video);
  }
  const auto& sched_cfg = chosen->io->scheduler().config();
  const double cycle_s = std::chrono::duration<double>(sched_cfg.cycle).count();
  const std::size_t io_bytes =
      storage::stream_io_bytes(demand.peak_rate, cycle_s, chosen->volume->volume->block_bytes());
  const std::int64_t volume_id = chosen->volume->volume_id;
  storage::Volume* vol = chosen->volume->volume.get();
  std::weak_ptr<Recording> weak = r;
  r->stream = std::make_shared<storage::RecordingStream>(
      *vol, r->stream_id,
      stream_description_of(req, peak_bps, first_wall ? std::min(first_wall, opened_at) : opened_at), 1, now_us(),
      storage::RecordingStreamOptions{.io_bytes = io_bytes,
                                      // Record timestamps are wall-clock microseconds.
                                      .max_segment_pts =
                                          std::chrono::duration_cast<std::chrono::microseconds>(max_segment_).count(),
                                      // Every audio packet is a keyframe: indexed about once a second.
                                      .min_gop_spacing_pts = track.media_kind == MediaKind::audio ? 1'000'000 : 0,
                                      .volume_failing = chosen->io->volume_failing_flag(),
                                      .progress_every_pts = kProgressEveryUs},
      [chosen] { return chosen->next_segment.fetch_add(1); },
      [weak](std::uint64_t seq) {
        // The IO thread: store and wake the session; never wait for it.
        if (auto rec = weak.lock()) {
          rec->durable.store(seq, std::memory_order_release);
          if (rec->notify) rec->notify();
        }
      },
      [batcher = &batcher_, volume_id, vol, chosen, recent = &disks_.recent()](const storage::SegmentSummary& s) {
        std::vector<std::uint64_t> offsets;
        for (auto e : s.extents) offsets.push_back(vol->extent_offset(e));
        auto row = catalog::closed_segment_row(volume_id, s, offsets, vol->extent_bytes(), now_us());
        chosen->segment_closed({row.segment_id, row.stream_id, row.start_us, row.end_us, s.extents.size()});
        const auto seq = batcher->enqueue(std::move(row));
        if (!s.discard) recent->closed(s.stream_id, s, seq);
      },
      [weak](std::uint64_t last_durable) {
        // The IO thread: the session ends the recording and names LAST_DURABLE to the sender.
        if (auto rec = weak.lock()) {
          rec->durable.store(last_durable, std::memory_order_release);
          rec->failed.store(true, std::memory_order_release);
          if (rec->notify) rec->notify();
        }
      });
  // The open segment's row: at its first durable cycle, then every kProgressEvery of media.
  r->stream->on_progress([batcher = &batcher_, volume_id, vol](const storage::SegmentSummary& s) {
    std::vector<std::uint64_t> offsets;
    for (auto e : s.extents) offsets.push_back(vol->extent_offset(e));
    batcher->enqueue(catalog::open_segment_row(volume_id, s, offsets, vol->extent_bytes(), now_us()));
  });
  disks_.recent().started({.track = track,
                           .stream_id = r->stream_id,
                           .volume_id = volume_id,
                           .volume = vol,
                           .codec = codec.codec_name(),
                           .extradata = codec.extradata(),
                           .width = codec.width(),
                           .height = codec.height(),
                           .sample_rate_hz = codec.sample_rate(),
                           .channels = codec.channels(),
                           .rate_bps = static_cast<std::int64_t>(peak_bps),
                           .stream = r->stream});
  chosen->io->scheduler().add_stream(r->stream_id, *r->stream);
  DiskSet::bind_io_id(*chosen, r->demand.id, r->stream_id);
  {
    // Live viewers see this recording's frames, with timestamps in wall-clock microseconds.
    proto::CodecParameters live_codec = codec;
    live_codec.set_time_base_num(1);
    live_codec.set_time_base_den(1'000'000);
    r->feed = std::make_shared<LiveFeed>(track, std::move(live_codec), demand.peak_rate);
    feeds_.put(r->feed);
  }

  proto::Admit a;
  a.set_stream_id(r->stream_id);
  a.set_admitted_rate_bps(peak_bps);
  a.set_cycle_us(
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(sched_cfg.cycle).count()));
  a.set_buffer_bytes(io_bytes);
  a.set_chunk_bytes(sched_cfg.chunk_bytes);
  log::info("recording admitted", {{"stream", r->stream_id},
                                   {"name", req.stream_name()},
                                   {"catalog", queued ? "queued" : "committed"},
                                   {"rate_bps", peak_bps},
                                   {"volume", chosen->volume->path.string()},
                                   {"buffer_bytes", io_bytes}});
  out = std::move(r);
  co_return a;
}

void RecordingService::add_spare_stream_ids(const std::vector<std::int64_t>& ids) {
  std::lock_guard lock(spare_mu_);
  spare_ids_.insert(spare_ids_.end(), ids.begin(), ids.end());
}

std::optional<std::int64_t> RecordingService::take_spare_stream_id() {
  std::lock_guard lock(spare_mu_);
  if (spare_ids_.empty()) return std::nullopt;
  const auto id = spare_ids_.front();
  spare_ids_.pop_front();
  return id;
}

std::size_t RecordingService::spare_stream_ids() const {
  std::lock_guard lock(spare_mu_);
  return spare_ids_.size();
}

Result<void> RecordingService::packet(Recording& r, const proto::MediaPacket& m, std::span<const std::byte> payload) {
  const auto to_us = [&](std::int64_t t) { return t * r.time_num * 1'000'000 / r.time_den; };
  if (m.sequence() != r.last_sequence + 1) {
    if (r.camera) r.camera->refused(CameraMetrics::Refusal::out_of_order);
    if (r.refused.waiting()) {
      // Sent after a refused packet, before its sender heard of the refusal: refused with it,
      // and lost with it unless sent again.
      const std::int64_t at = m.has_pts() && r.have_offset ? to_us(m.pts()) + r.wall_offset_us
                              : r.last_end_us              ? r.last_end_us
                                                           : now_us();
      report_lost(r, r.refused.refused({.key = frame_key(m, payload),
                                        .start_us = at,
                                        .end_us = at + to_us(m.duration()),
                                        .reason = r.refused.last_reason()}));
    }
    return errc::invalid_argument;
  }
  storage::RecordHeader h;
  h.sequence = m.sequence();
  h.duration = to_us(m.duration());
  // Wall-clock microseconds: the first timestamp is pinned to now; packets without one (RTSP
  // B-frame sources) continue from the previous packet's end.
  if (m.has_pts()) {
    if (!r.have_offset) {
      r.wall_offset_us = (r.first_wall_us ? r.first_wall_us : now_us()) - to_us(m.pts());
      r.have_offset = true;
    } else if (r.last_end_us) {
      // A timestamp jump or wrap (a camera restarting its clock, a 33-bit RTP wrap) is a
      // discontinuity: wall-clock time continues from the previous frame's end instead of
      // jumping, so segments stay ordered and the GOP index searchable.
      const std::int64_t at = to_us(m.pts()) + r.wall_offset_us;
      if (at < r.last_end_us - kMaxBackwardsUs || at > r.last_end_us + kMaxForwardUs) {
        log::warn("timestamp discontinuity: wall-clock time continues from the previous frame",
                  {{"stream", r.stream_id}, {"sequence", m.sequence()}, {"jump_us", at - r.last_end_us}});
        r.wall_offset_us = r.last_end_us - to_us(m.pts());
        ++r.discontinuities;
        if (r.camera) r.camera->discontinuity();
      }
    }
    h.pts = to_us(m.pts()) + r.wall_offset_us;
  } else {
    h.pts = r.last_end_us ? r.last_end_us : now_us();
  }
  h.dts = m.has_dts() && r.have_offset ? to_us(m.dts()) + r.wall_offset_us : h.pts;
  if (m.keyframe()) h.flags |= storage::kRecordKeyframe;
  r.offered.packet(m.sequence(), h.pts, storage::kRecordHeaderBytes + payload.size());
  auto ok = r.stream->append(h, payload);
  if (!ok && ok.error() == errc::io_error) return ok;  // the stream has ended; not the sender's fault
  if (!ok && ok.error() == errc::rate_exceeded) r.offered.policed();
  if (auto window = r.offered.take()) maybe_readmit(r, *window);
  if (!ok) {
    if (r.camera) {
      r.camera->refused(ok.error() == errc::rate_exceeded ? CameraMetrics::Refusal::rate_exceeded
                                                          : CameraMetrics::Refusal::invalid);
    }
    // Not stored now; lost if its sender gives it up (refused_run.hpp). A frame larger than the
    // buffer is beyond what the admitted rate holds, like one refused for the rate.
    if (ok.error() == errc::rate_exceeded || ok.error() == errc::frame_exceeds_buffer) {
      report_lost(r, r.refused.refused({.key = frame_key(m, payload),
                                        .start_us = h.pts,
                                        .end_us = h.pts + h.duration,
                                        .reason = ok.error() == errc::rate_exceeded
                                                      ? loss_reason(r.stream->refused_because())
                                                      : LossReason::rate_exceeded}));
    }
    return ok;
  }
  report_lost(r, r.refused.stored(frame_key(m, payload)));
  r.not_durable.emplace_back(m.sequence(), payload.size());
  while (!r.not_durable.empty() && r.not_durable.front().first <= r.durable.load(std::memory_order_acquire)) {
    r.not_durable.pop_front();
  }
  if (r.camera) r.camera->packet(payload.size());
  r.last_sequence = m.sequence();
  r.last_end_us = h.pts + h.duration;
  // Live frames name their stream and sequence: a recorded playback continuing live joins the
  // feed at exactly the frame after the last durable one it read.
  h.stream_id = r.stream_id;
  if (r.feed) r.feed->publish(h, payload);
  return {};
}

Result<void> RecordingService::media_loss(Recording& r, const proto::MediaLoss& m) {
  const auto to_us = [&](std::int64_t t) { return t * r.time_num * 1'000'000 / r.time_den; };
  const bool dropped = m.reason() == proto::MEDIA_LOSS_REASON_RATE_EXCEEDED;
  if (!dropped && m.reason() != proto::MEDIA_LOSS_REASON_SOURCE_LOSS) return errc::invalid_argument;
  const std::int64_t span_us = to_us(m.to_pts()) - to_us(m.from_pts());
  if (span_us <= 0 || span_us > kMaxMediaLossUs) return errc::invalid_argument;
  // On the recording's clock, as its packets are; a loss reported before any packet pins it as
  // a first packet would.
  if (!r.have_offset) {
    r.wall_offset_us = (r.first_wall_us ? r.first_wall_us : now_us()) - to_us(m.from_pts());
    r.have_offset = true;
  }
  const LostRun run{.reason = dropped ? LossReason::rate_exceeded : LossReason::source_loss,
                    .start_us = to_us(m.from_pts()) + r.wall_offset_us,
                    .end_us = to_us(m.to_pts()) + r.wall_offset_us,
                    .frames = m.packets(),
                    .payload_bytes = m.payload_bytes(),
                    .reported = true};
  if (dropped) {
    r.offered.dropped(run.start_us, run.end_us, static_cast<std::size_t>(m.payload_bytes()));
    if (auto window = r.offered.take()) maybe_readmit(r, *window);
  }
  report_lost(r, {run});
  return {};
}

void RecordingService::report_lost(Recording& r, const std::vector<LostRun>& runs) {
  for (const auto& run : runs) {
    if (r.camera) {
      r.camera->lost(static_cast<CameraMetrics::Loss>(run.reason), run.frames, run.payload_bytes);
      r.camera->gap(loss_reason_name(run.reason));
    }
    auto detail = lost_run_detail(run, r.demand.peak_rate.bps());
    // One warning per recording and reason's first run: a policed source may lose a run every cycle.
    if (!r.lost_logged[static_cast<std::size_t>(run.reason)]) {
      r.lost_logged[static_cast<std::size_t>(run.reason)] = true;
      log::warn(run.reported ? "media the recorder never sent: a gap (further ones are counted, not logged)"
                             : "media packets refused and never stored: a gap (further ones are counted, not logged)",
                {{"stream", r.stream_id},
                 {"name", r.name},
                 {"reason", std::string(loss_reason_name(run.reason))},
                 {"detail", detail}});
    }
    batcher_.enqueue(catalog::GapRow{.stream_id = static_cast<std::int64_t>(r.stream_id),
                                     .start_us = run.start_us,
                                     .end_us = run.end_us,
                                     .reason = std::string(loss_reason_name(run.reason)),
                                     .detail = std::move(detail)});
  }
}

std::optional<std::pair<std::string, std::string>> RecordingService::report_unwritten(Recording& r) {
  const auto durable = r.durable.load(std::memory_order_acquire);
  if (durable >= r.last_sequence) return std::nullopt;
  LostRun lost{.reason = r.stream->held() == storage::RecordingStream::Held::segment_failed
                             ? LossReason::io_error
                             : LossReason::deadline_missed};
  for (const auto& [sequence, bytes] : r.not_durable) {
    if (sequence <= durable) continue;
    ++lost.frames;
    lost.payload_bytes += bytes;
  }
  if (r.camera) {
    r.camera->lost(static_cast<CameraMetrics::Loss>(lost.reason), lost.frames, lost.payload_bytes);
    r.camera->gap(loss_reason_name(lost.reason));
  }
  std::string detail = std::to_string(lost.frames) + " frames (" + std::to_string(lost.payload_bytes) +
                       " payload bytes) taken but never written when the recording ended: " +
                       (lost.reason == LossReason::io_error
                            ? "the stream's segment could not be started or extended on its volume (full or failing)"
                            : "the disk's IO thread did not write them within ten cycles") +
                       "; a recorder resends what was not acknowledged in a new stream";
  log::warn("recording ended with packets never written: a gap",
            {{"stream", r.stream_id}, {"name", r.name}, {"reason", loss_reason_name(lost.reason)}, {"detail", detail}});
  return std::pair{std::string(loss_reason_name(lost.reason)), std::move(detail)};
}

void RecordingService::maybe_readmit(Recording& r, const OfferedRate::Window& window) {
  const Rate admitted = r.demand.peak_rate;
  if (!window.policed || window.rate.bps() <= admitted.bps() * kReadmitAbove) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < r.next_readmit) return;
  const auto& cfg = r.disk->io->scheduler().config();
  const double cycle_s = std::chrono::duration<double>(cfg.cycle).count();
  const std::uint32_t block = r.disk->volume->volume->block_bytes();
  const Rate wanted_rate = window.rate * kReadmitHeadroom;
  const std::size_t io_bytes = storage::stream_io_bytes(wanted_rate, cycle_s, block);
  admission::StreamDemand wanted = r.demand;
  wanted.peak_rate = wanted_rate;
  wanted.average_rate = window.rate;
  const std::string measured = std::to_string(static_cast<std::uint64_t>(window.rate.bps()));
  auto decided = disks_.readmit(*r.disk, r.demand.id, wanted, DiskMetrics::Kind::recording,
                                static_cast<std::int64_t>(r.stream_id), r.name);
  if (auto* no = std::get_if<Refusal>(&decided)) {
    r.next_readmit = now + kReadmitBackoff;
    log::warn("recording sends more than admitted and stays policed: re-admission refused",
              {{"stream", r.stream_id},
               {"name", r.name},
               {"admitted_bps", static_cast<std::uint64_t>(admitted.bps())},
               {"measured_bps", measured},
               {"reason", no->reason}});
    return;
  }
  if (auto grown = r.stream->grow(io_bytes); !grown) {
    // A buffer that large would not fit an extent: give the share back and stay policed.
    (void)disks_.readmit(*r.disk, r.demand.id, r.demand, DiskMetrics::Kind::recording,
                         static_cast<std::int64_t>(r.stream_id), r.name);
    r.next_readmit = now + kReadmitBackoff;
    log::warn("recording sends more than admitted: its buffer cannot grow that far (extent size)",
              {{"stream", r.stream_id}, {"name", r.name}, {"buffer_bytes", io_bytes}});
    return;
  }
  if (r.camera) r.camera->readmitted(admitted, wanted_rate);
  r.demand = wanted;
  ++r.readmissions;
  batcher_.enqueue("stream re-admitted",
                   [id = static_cast<std::int64_t>(r.stream_id), bps = static_cast<std::int64_t>(wanted_rate.bps())](
                       pqxx::work& tx) { catalog::update_admitted_rate(tx, id, bps); });
  log::info("recording re-admitted at its measured rate", {{"stream", r.stream_id},
                                                           {"name", r.name},
                                                           {"from_bps", static_cast<std::uint64_t>(admitted.bps())},
                                                           {"measured_bps", measured},
                                                           {"to_bps", static_cast<std::uint64_t>(wanted_rate.bps())},
                                                           {"buffer_bytes", io_bytes}});
}

asio::awaitable<void> RecordingService::close(const std::shared_ptr<Recording>& recording, Ending ending) {
  // A local copy (the caller's lives on, but this frame owns what it uses). No by-value
  // non-trivial parameters on awaited calls: GCC 12 may destroy them twice.
  auto r = recording;
  if (!r) co_return;
  if (r->feed) {
    r->feed->end();  // live viewers finish with the frames they have
    feeds_.erase(r->feed);
  }
  // The frames still in the filling half are written by the next cycle: give them up to ten
  // cycles to become durable (a busy machine may be late by a few), so a clean end loses nothing.
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto cycle = r->disk->io->scheduler().config().cycle;
  for (int i = 0; i < 100 && r->durable.load() < r->last_sequence && !r->failed.load(); ++i) {
    timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(cycle / 10));
    co_await timer.async_wait(asio::use_awaitable);
  }
  // 'stopped' only when the client ended cleanly and everything it sent became durable.
  const bool disk_failed = r->failed.load(std::memory_order_acquire);
  // Refused packets never sent again are lost (after a failed disk, its io_error gap covers them).
  if (!disk_failed) report_lost(*r, r->refused.close());
  const auto unwritten = disk_failed || ending == Ending::stalled ? std::nullopt : report_unwritten(*r);
  const char* state = disk_failed                                                        ? "interrupted"
                      : ending == Ending::stalled                                        ? "stalled"
                      : ending == Ending::clean && r->durable.load() >= r->last_sequence ? "stopped"
                                                                                         : "interrupted";
  Disk* disk = r->disk;
  const std::int64_t volume_id = disk->volume->volume_id;
  storage::Volume* vol = disk->volume->volume.get();
  const std::int64_t stream_id = static_cast<std::int64_t>(r->stream_id);
  const auto demand_id = r->demand.id;
  disks_.release(*disk, demand_id);
  if (r->camera) {
    r->camera->stream_ended(r->demand.peak_rate, r->main_video);
    if (disk_failed) r->camera->gap("io_error");
    else if (ending == Ending::stalled) r->camera->gap("source_stalled");
  }
  // On the IO thread once the stream's last IO is done: its last segment and its end.
  disk->io->scheduler().remove_stream(r->stream_id, [batcher = &batcher_, recent = &disks_.recent(), r, disk, volume_id,
                                                     vol, stream_id, state, disk_failed, unwritten] {
    auto last = r->stream->close();
    const auto ended = now_us();
    if (last && (last->frame_count > 0 || last->discard)) {
      std::vector<std::uint64_t> offsets;
      for (auto e : last->extents) offsets.push_back(vol->extent_offset(e));
      auto row = catalog::closed_segment_row(volume_id, *last, offsets, vol->extent_bytes(), ended);
      disk->segment_closed({row.segment_id, row.stream_id, row.start_us, row.end_us, last->extents.size()});
      const auto seq = batcher->enqueue(std::move(row));
      if (!last->discard) recent->closed(last->stream_id, *last, seq);
    }
    recent->ended(r->stream_id);
    catalog::StreamEndRow end{.stream_id = stream_id, .state = state, .ended_us = ended};
    if (disk_failed) {
      end.state = "interrupted";
      end.gap_reason = "io_error";
      end.gap_detail =
          "the disk failed to store the recording; the recorder resends what was not durable in a new stream";
    } else if (std::string_view(state) == "stalled") {
      end.gap_reason = "source_stalled";
      end.gap_detail = "the recorder sent nothing for the stall timeout; its disk share was released";
    } else if (unwritten) {
      end.gap_reason = unwritten->first;
      end.gap_detail = unwritten->second;
    }
    batcher->enqueue(std::move(end));
  });
  log::info("recording ended", {{"stream", r->stream_id},
                                {"state", state},
                                {"last_sequence", r->last_sequence},
                                {"durable", r->durable.load()}});
}

}  // namespace vigil::server
