#include "server/playback/playback_service.hpp"

#include <pqxx/pqxx>

#include "common/log.hpp"
#include "catalog/playback_rows.hpp"
#include "server/disks/archive_reads.hpp"
#include "storage/stream_buffer.hpp"

namespace asio = boost::asio;

namespace vigil::server {
namespace {

// What REQ asks of a PlaybackStream: its range, direction, and whether only keyframes.
storage::PlaybackRange playback_range(const proto::OpenPlayback& req, bool key_only) {
  return {.from_pts = req.start_us(),
          .to_pts = req.end_us(),
          .keyframes_only = key_only,
          .direction = req.direction() == proto::DIRECTION_REVERSE ? storage::ReadDirection::reverse
                                                                   : storage::ReadDirection::forward};
}

// Playback ids live apart from recording stream ids on a disk's scheduler.
constexpr std::uint64_t kPlaybackIdBase = 1ull << 62;

// The track REQ asks for (empty role and media_kind: the main video); nullopt for a word unknown.
std::optional<Track> track_of(const proto::OpenPlayback& req) {
  const auto role = parse_role(req.role());
  const auto kind = parse_media_kind(req.media_kind());
  if (!role || !kind) return std::nullopt;
  return Track{.camera = req.stream_name(), .role = *role, .media_kind = *kind};
}

}  // namespace

asio::awaitable<PlaybackService::OpenResult> PlaybackService::open(const proto::OpenPlayback& req,
                                                                   const std::function<void()>& notify,
                                                                   std::shared_ptr<Playback>& out, std::uint64_t id) {
  const double speed = req.rate() == 0 ? 1.0 : req.rate();
  if (req.stream_name().empty())
    co_return refuse(proto::REFUSE_REASON_INVALID_REQUEST, "open-playback needs a stream name");
  if (!(speed > 0 && speed <= kMaxPlaybackRate)) {
    co_return refuse(proto::REFUSE_REASON_INVALID_REQUEST, "rate must be in (0, 64]");
  }
  const auto track = track_of(req);
  if (!track) {
    co_return refuse(proto::REFUSE_REASON_INVALID_REQUEST,
                     "open-playback role must be \"main\" or \"sub\", media_kind \"video\" or \"audio\"");
  }
  if (req.live()) co_return open_live(req, *track, notify, out, id);
  if (req.end_us() <= req.start_us()) {
    co_return refuse(proto::REFUSE_REASON_INVALID_REQUEST, "the end of the range must be after its start");
  }

  catalog::PlaybackPlan plan;
  try {
    // By reference: see CatalogPool::run. REQ outlives the co_await.
    // What this node recorded lately, up to its last durable cycle, beside the catalog's rows.
    const auto fresher = disks_.recent().of(*track, req.start_us(), req.end_us());
    // With an archive tier, a down node's copied segments are read from their copies.
    const std::string& reader = disks_.archive_reader_node();
    plan = co_await catalog_.run([&req, &track, &fresher, &reader](pqxx::connection& c) {
      pqxx::work tx(c);
      // One disk's scheduler reads a playback: it stops where the volume changes too.
      auto p = catalog::plan_playback(tx, *track, req.start_us(), req.end_us(), 10'000, fresher, true, reader);
      tx.commit();
      return p;
    });
  } catch (const std::exception& e) {
    co_return refuse(proto::REFUSE_REASON_INVALID_REQUEST, std::string("catalog: ") + e.what());
  }
  if (!plan.camera_exists) {
    co_return refuse(proto::REFUSE_REASON_NO_SUCH_STREAM, "no camera named '" + req.stream_name() + "'");
  }
  if (!plan.track_exists) {
    co_return refuse(proto::REFUSE_REASON_NO_SUCH_STREAM,
                     "camera '" + req.stream_name() + "' has no " + track->kind_words() + " stream");
  }
  if (plan.segments.empty()) {
    co_return refuse(proto::REFUSE_REASON_NO_SUCH_STREAM,
                     "nothing of " + track->described() + " is recorded in that range");
  }
  if (!plan.segment_archives.empty() && plan.segment_archives.front()) {
    co_return open_archived(req, *track, std::move(plan), notify, out, id);
  }
  auto* disk = disks_.disk_of_volume(plan.volume_id);
  if (!disk) {
    co_return refuse(proto::REFUSE_REASON_NO_SUCH_STREAM, "the recording is on volume " +
                                                              std::to_string(plan.volume_id) +
                                                              ", which this server has not opened");
  }
  // The disk time this playback takes: the recording's rate at SPEED; trick play reads keyframes only.
  const bool key_only = req.keyframes_only() || req.direction() == proto::DIRECTION_REVERSE;
  // The recording's own data rate (with headroom for bursts within a segment) when it is known,
  // rather than the peak its recorder declared: a camera declared at 8 Mbit/s that records
  // 2 Mbit/s is played back at what it stored.
  const Rate admitted = Rate::from_bps(plan.rate_bps);
  const Rate stored = Rate::from_bps(plan.data_rate_bps) * kPlaybackHeadroom;
  const Rate base = stored > Rate{} ? std::min(admitted, stored) : admitted;
  const Rate rate = key_only ? admission::trick_play_rate(base, kKeyframeShare, speed) : base * speed;
  const admission::StreamDemand wanted{.write = false, .peak_rate = rate, .average_rate = rate};
  // Registered with the admission, so a recording admitted right after still finds it.
  auto ended = std::make_shared<EndedNotice>();
  auto on_ended = [ended, notify](const std::string& reason) {
    ended->set(reason);
    if (notify) notify();
  };
  auto outcome = disks_.admit(wanted, DiskMetrics::Kind::playback, std::nullopt, disk, std::move(on_ended));
  if (auto* no = std::get_if<Refusal>(&outcome)) {
    no->reason = "playback: " + no->reason;
    co_return to_refuse(*no);
  }
  const auto& granted = std::get<Admitted>(outcome);
  disks_.log_admitted(granted, DiskMetrics::Kind::playback, std::nullopt, std::nullopt);
  const admission::StreamDemand demand = granted.demand;

  auto p = std::make_shared<Playback>();
  // A fresh scheduler id every time, also when a seek or rate change keeps the client's id: the
  // previous read stream may still have an IO in flight under its own id.
  p->sched_id = kPlaybackIdBase + next_id_.fetch_add(1);
  p->id = id ? id : p->sched_id;
  p->disk = disk;
  p->demand = demand;
  p->request = req;
  p->track = *track;
  p->from_us = std::max(plan.from_us, req.start_us());
  p->to_us = std::min(plan.to_us, req.end_us());
  // The range goes on past its durable end while the camera records here (live tail).
  p->reaches_open = plan.reaches_open || (plan.next_from_us == 0 && disks_.recent().recording(*track));
  p->volume_id = plan.volume_id;
  p->codec = plan.codec;
  p->extradata = plan.extradata;
  p->notify = notify;
  p->ended = std::move(ended);
  if (req.direction() != proto::DIRECTION_REVERSE) p->next_from_us = plan.next_from_us;
  const auto& cfg = disk->io->scheduler().config();
  const double cycle_s = std::chrono::duration<double>(cfg.cycle).count();
  const std::size_t block = disk->volume->volume->block_bytes();
  const std::size_t cycle_bytes = storage::stream_io_bytes(rate, cycle_s, block);
  p->cycle_bytes = cycle_bytes;
  p->stream = std::make_shared<storage::PlaybackStream>(std::move(plan.segments), playback_range(req, key_only),
                                                        cycle_bytes, block, notify);
  disk->io->scheduler().add_stream(p->sched_id, *p->stream);
  DiskSet::bind_io_id(*disk, p->demand.id, p->sched_id);

  proto::PlaybackStarted started;
  started.set_stream_id(p->id);
  started.set_admitted_rate_bps(static_cast<std::uint64_t>(rate.bps()));
  auto* codec = started.mutable_codec();
  codec->set_codec_name(plan.codec);
  codec->set_width(plan.width);
  codec->set_height(plan.height);
  codec->set_time_base_num(1);  // served timestamps are wall-clock microseconds
  codec->set_time_base_den(1'000'000);
  codec->set_extradata(plan.extradata);
  codec->set_bit_rate(plan.rate_bps);
  codec->set_sample_rate(plan.sample_rate_hz);  // audio, where the catalog keeps them
  codec->set_channels(plan.channels);
  log::info("playback admitted", {{"playback", p->id},
                                  {"name", track->label()},
                                  {"from_us", p->from_us},
                                  {"to_us", p->to_us},
                                  {"speed", speed},
                                  {"keyframes_only", key_only ? "yes" : "no"},
                                  {"rate_bps", static_cast<std::uint64_t>(rate.bps())},
                                  {"gops", p->stream->gop_total()}});
  out = std::move(p);
  co_return started;
}

PlaybackService::OpenResult PlaybackService::open_archived(const proto::OpenPlayback& req, const Track& track,
                                                           catalog::PlaybackPlan plan,
                                                           const std::function<void()>& notify,
                                                           std::shared_ptr<Playback>& out, std::uint64_t id) {
  auto* reads = disks_.archive_reads();
  if (!reads) {
    return refuse(proto::REFUSE_REASON_NO_SUCH_STREAM,
                  "the recording is archived, and this server has no archive tier (--archive-endpoint)");
  }
  const double speed = req.rate() == 0 ? 1.0 : req.rate();
  const bool key_only = req.keyframes_only() || req.direction() == proto::DIRECTION_REVERSE;
  // No disk time to admit: the store serves it. The double buffer is a second of the recording's
  // rate at SPEED, as a disk's cycle would read.
  const Rate stored = Rate::from_bps(plan.data_rate_bps) * kPlaybackHeadroom;
  const Rate rate = (stored > Rate{} ? stored : Rate::from_bps(plan.rate_bps)) * speed;
  const std::size_t block = plan.segment_archives.front()->block_bytes;
  auto p = std::make_shared<Playback>();
  p->sched_id = kPlaybackIdBase + next_id_.fetch_add(1);
  p->id = id ? id : p->sched_id;
  p->request = req;
  p->track = track;
  p->from_us = std::max(plan.from_us, req.start_us());
  p->to_us = std::min(plan.to_us, req.end_us());
  p->volume_id = plan.volume_id;
  p->codec = plan.codec;
  p->extradata = plan.extradata;
  p->notify = notify;
  if (req.direction() != proto::DIRECTION_REVERSE) p->next_from_us = plan.next_from_us;
  p->cycle_bytes = storage::stream_io_bytes(rate, 1.0, block);
  auto objects =
      std::make_shared<const std::vector<std::optional<catalog::ArchivedObject>>>(std::move(plan.segment_archives));
  p->stream = std::make_shared<storage::PlaybackStream>(std::move(plan.segments), playback_range(req, key_only),
                                                        p->cycle_bytes, block, notify);
  p->archive_stop = std::make_shared<std::atomic<bool>>(false);
  reads->start_pump(p->stream, std::move(objects), p->archive_stop);

  proto::PlaybackStarted started;
  started.set_stream_id(p->id);
  started.set_admitted_rate_bps(0);  // no disk time
  auto* codec = started.mutable_codec();
  codec->set_codec_name(plan.codec);
  codec->set_width(plan.width);
  codec->set_height(plan.height);
  codec->set_time_base_num(1);
  codec->set_time_base_den(1'000'000);
  codec->set_extradata(plan.extradata);
  codec->set_bit_rate(plan.rate_bps);
  codec->set_sample_rate(plan.sample_rate_hz);
  codec->set_channels(plan.channels);
  log::info("playback from the archive", {{"playback", p->id},
                                          {"name", track.label()},
                                          {"from_us", p->from_us},
                                          {"to_us", p->to_us},
                                          {"speed", speed},
                                          {"gops", p->stream->gop_total()}});
  out = std::move(p);
  return started;
}

PlaybackService::OpenResult PlaybackService::open_live(const proto::OpenPlayback& req, const Track& track,
                                                       const std::function<void()>& notify,
                                                       std::shared_ptr<Playback>& out, std::uint64_t id) {
  if (req.direction() == proto::DIRECTION_REVERSE || req.keyframes_only() || (req.rate() != 0 && req.rate() != 1.0)) {
    return refuse(proto::REFUSE_REASON_INVALID_REQUEST, "live view plays forward at rate 1, every frame");
  }
  auto feed = feeds_.find(track);
  std::shared_ptr<LiveTap> tap;
  if (feed) {
    // Two cycles' worth of the camera's rate, like a stream's double buffer, plus a keyframe's room.
    const std::size_t bound = static_cast<std::size_t>(feed->rate().bytes_over(2.0)) + (1u << 20);
    tap = feed->subscribe(bound, notify);
  }
  if (!tap) return refuse(proto::REFUSE_REASON_NO_SUCH_STREAM, track.described() + " is not recording now");
  auto p = std::make_shared<Playback>();
  p->id = id ? id : kPlaybackIdBase + next_id_.fetch_add(1);
  p->request = req;
  p->track = track;
  p->live = std::move(tap);
  proto::PlaybackStarted started;
  started.set_stream_id(p->id);
  *started.mutable_codec() = feed->codec();
  started.set_admitted_rate_bps(0);  // no disk time
  log::info("live view opened", {{"playback", p->id}, {"name", track.label()}});
  out = std::move(p);
  return started;
}

PlaybackService::Extended PlaybackService::extend(Playback& p, std::int64_t from_us) {
  if (!p.disk || !p.stream) return Extended::over;
  // The last frame sent may end past the range (its pts inside, its duration beyond): nothing is
  // left to read then, however the recording goes on. Without this, the open segment that runs on
  // past the range's end was read again and again over an empty range.
  if (from_us >= p.request.end_us()) return Extended::over;
  // The read stream just finished was planned through the range's end already: it held every frame
  // of the range. The last frame's end need not reach the range's end (its duration is the
  // camera's nominal frame time, or none: the next frame, past the end, may come later than
  // that), and then each extend() found durable frames past FROM_US and read an empty range again,
  // never ending the playback (a sub stream's play of -20 s to -1 s hung so).
  if (p.to_us >= p.request.end_us()) return Extended::over;
  auto fresh = disks_.recent().of(p.track, from_us, p.request.end_us());
  const auto other = [&](const catalog::FreshSegment& f) {
    return f.volume_id != p.volume_id || f.codec != p.codec || f.extradata != p.extradata;
  };
  // The camera records on in another configuration or on another volume: this part ends here,
  // and its PlaybackEnd names where the next one begins.
  for (const auto& f : fresh) {
    if (other(f) && !f.segment.gops.empty()) {
      p.next_from_us = p.next_from_us ? std::min(p.next_from_us, f.start_us) : std::max(f.start_us, from_us);
    }
  }
  if (p.next_from_us) return Extended::over;
  std::erase_if(fresh, [&](const catalog::FreshSegment& f) { return other(f) || f.segment.gops.empty(); });
  std::sort(fresh.begin(), fresh.end(),
            [](const catalog::FreshSegment& a, const catalog::FreshSegment& b) { return a.start_us < b.start_us; });
  std::int64_t end_us = 0;
  std::vector<storage::PlaybackSegment> segments;
  bool open = false;
  for (auto& f : fresh) {
    end_us = std::max(end_us, f.segment.end_pts);
    open = open || f.open;
    segments.push_back(std::move(f.segment));
  }
  // A segment just rotated may have no durable frame yet: the camera recording here is what says
  // the range goes on.
  const bool recording = disks_.recent().recording(p.track);
  p.reaches_open = open || recording;
  if (end_us <= from_us) {
    // Nothing new is durable: the next cycle may bring some while the camera records (its last
    // segment is handed over before its recording counts as ended here) — unless what it records
    // is durable past the range already (a range that ended before a reconnect, say).
    const auto durable_end = disks_.recent().durable_end_us(p.track);
    if (!recording || (durable_end && *durable_end >= p.request.end_us())) return Extended::over;
    return Extended::not_yet;
  }
  const std::size_t block = p.disk->volume->volume->block_bytes();
  auto next = std::make_shared<storage::PlaybackStream>(std::move(segments),
                                                        storage::PlaybackRange{.from_pts = from_us,
                                                                               .to_pts = p.request.end_us(),
                                                                               .keyframes_only = false},
                                                        p.cycle_bytes, block, p.notify);
  // The old read stream leaves the scheduler (its last IO may still be in flight); the new one
  // runs under the same admitted share, with a scheduler id of its own.
  auto& sched = p.disk->io->scheduler();
  sched.remove_stream(p.sched_id, [keep = p.stream] {});
  p.sched_id = kPlaybackIdBase + next_id_.fetch_add(1);
  p.stream = std::move(next);
  p.to_us = std::min(end_us, p.request.end_us());
  sched.add_stream(p.sched_id, *p.stream);
  DiskSet::bind_io_id(*p.disk, p.demand.id, p.sched_id);
  return Extended::more;
}

std::shared_ptr<LiveTap> PlaybackService::subscribe_tail(const Playback& p) {
  auto feed = feeds_.find(p.track);
  if (!feed) return nullptr;
  // The recorded part lags the live edge by a cycle or two; four seconds of the camera's rate
  // hold what arrives meanwhile (more is dropped to a keyframe, and read from the disk instead).
  const std::size_t bound = static_cast<std::size_t>(feed->rate().bytes_over(4.0)) + (1u << 20);
  return feed->subscribe(bound, p.notify, /*at_keyframe=*/false);
}

void PlaybackService::go_live(Playback& p, std::shared_ptr<LiveTap> tap) {
  if (p.disk) {
    disks_.release(*p.disk, p.demand.id);
    p.disk->io->scheduler().remove_stream(p.sched_id, [keep = p.stream] {});
  }
  p.disk = nullptr;
  p.stream.reset();
  p.tail.reset();
  p.live = std::move(tap);
  p.live_tail = true;
  log::info("playback reached the live edge: continues live", {{"playback", p.id}, {"name", p.track.label()}});
}

void PlaybackService::suspend(Playback& p) {
  if (!p.disk || p.live) return;
  disks_.release(*p.disk, p.demand.id);
  if (auto* m = p.disk->io->metrics()) m->playback_released(DiskMetrics::Release::paused);
  p.disk->io->scheduler().remove_stream(p.sched_id, [keep = p.stream] {});
  log::info("paused playback released its disk share",
            {{"playback", p.id}, {"name", p.track.label()}, {"after_ms", pause_release_.count()}});
  p.disk = nullptr;
  p.stream.reset();
  p.suspended = true;
}

void PlaybackService::close(const std::shared_ptr<Playback>& p) {
  if (!p) return;
  if (p->archive_stop) p->archive_stop->store(true);  // its pump ends at its next step
  if (p->live) return;                                // the tap goes with the playback; the feed forgets it
  if (!p->disk) return;                               // suspended: off its disk already
  disks_.release(*p->disk, p->demand.id);
  // The stream object lives until its last read is done.
  p->disk->io->scheduler().remove_stream(p->sched_id, [keep = p->stream] {});
}

}  // namespace vigil::server
