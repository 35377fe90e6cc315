#include "server/wire/playback_channel.hpp"

#include "common/log.hpp"
#include "proto/frame_codec.hpp"

namespace asio = boost::asio;

namespace vigil::server {
namespace {

proto::Envelope error(errc code, std::string message) { return proto::make_error(code, std::move(message)); }

}  // namespace

asio::awaitable<proto::Envelope> PlaybackChannel::open(const proto::OpenPlayback& request) {
  if (playback_) co_return error(errc::invalid_argument, "this session already plays a stream");
  std::shared_ptr<PlaybackService::Playback> p;
  auto r = co_await service_.open(request, notify_, p);
  proto::Envelope reply;
  if (auto* s = std::get_if<proto::PlaybackStarted>(&r)) {
    *reply.mutable_playback_started() = *s;
    playback_ = std::move(p);
    pacer_ = PlaybackPacer(request.rate() == 0 ? 1.0 : request.rate());
    gop_.reset();
    frame_ = 0;
    sequence_ = 0;
    last_pts_.reset();
    last_end_us_ = 0;
    last_stream_ = last_sequence_ = 0;
    skip_sent_ = false;
    end_.Clear();
    tail_skipped_ = false;
    tail_dropped_seen_ = 0;
  } else {
    *reply.mutable_refuse() = std::get<proto::Refuse>(r);
  }
  co_return reply;
}

asio::awaitable<std::optional<proto::Envelope>> PlaybackChannel::control(const proto::Control& c) {
  if (!playback_ || c.stream_id() != playback_->id) {
    co_return error(errc::not_found, "control names no playback of this session");
  }
  const auto now = Clock::now();
  switch (c.op()) {
    case proto::CONTROL_OP_PAUSE:
      if (!pacer_.paused()) paused_at_ = now;
      pacer_.pause(now);
      co_return std::nullopt;
    case proto::CONTROL_OP_RESUME:
      if (playback_->suspended) co_return co_await readmit(now);
      pacer_.resume(now);
      co_return std::nullopt;
    case proto::CONTROL_OP_SEEK:
    case proto::CONTROL_OP_SET_RATE: {
      if (playback_->live && !playback_->live_tail) {
        co_return error(errc::invalid_argument, "live view cannot seek or change rate: open a recorded range");
      }
      const bool seek = c.op() == proto::CONTROL_OP_SEEK;
      if (!seek && !(c.rate() > 0 && c.rate() <= kMaxPlaybackRate)) {
        co_return error(errc::invalid_argument, "rate must be in (0, 64]");
      }
      auto old = playback_;
      proto::OpenPlayback req = old->request;
      if (seek) {
        req.set_start_us(c.seek_to_us());
        if (req.end_us() <= req.start_us()) co_return error(errc::invalid_argument, "seek past the end of the range");
      } else {
        req.set_rate(c.rate());
        // Continue from the next frame not yet sent: the keyframe at or before it.
        if (last_pts_) {
          if (req.direction() == proto::DIRECTION_REVERSE) req.set_end_us(*last_pts_);
          else req.set_start_us(*last_pts_ + 1);
        }
      }
      // The old playback's share is released first, so its own admission never counts twice.
      service_.close(old);
      std::shared_ptr<PlaybackService::Playback> p;
      auto r = co_await service_.open(req, notify_, p, old->id);
      std::optional<proto::Envelope> reply;
      if (auto* s = std::get_if<proto::PlaybackStarted>(&r)) {
        proto::Envelope e;
        *e.mutable_playback_started() = *s;
        reply = std::move(e);
      } else {
        const auto& refused = std::get<proto::Refuse>(r);
        // Keep playing as before: reopen at the old speed from where it was.
        proto::OpenPlayback back = old->request;
        if (last_pts_ && back.direction() != proto::DIRECTION_REVERSE) back.set_start_us(*last_pts_ + 1);
        auto r2 = co_await service_.open(back, notify_, p, old->id);
        auto e = error(errc::admission_refused, (seek ? "seek refused: " : "rate change refused: ") + refused.reason());
        if (!std::holds_alternative<proto::PlaybackStarted>(r2)) {
          playback_.reset();
          co_return e;
        }
        reply = std::move(e);
      }
      playback_ = std::move(p);
      gop_.reset();
      frame_ = 0;
      skip_through_.reset();
      skip_sent_ = false;
      if (seek) {
        pacer_.reanchor();
        last_end_us_ = 0;  // a seek back: the live tail counts from what is sent from now on
      } else if (last_pts_ && playback_->request.direction() != proto::DIRECTION_REVERSE) {
        // The reopened playback starts at the keyframe before the position: the viewer has
        // those frames already.
        skip_through_ = last_pts_;
      }
      if (!seek && playback_->request.rate() == c.rate()) pacer_.set_rate(c.rate(), now);
      co_return reply;
    }
    default: co_return error(errc::invalid_argument, "unknown control operation");
  }
}

asio::awaitable<proto::Envelope> PlaybackChannel::readmit(Clock::time_point now) {
  // Opened again where it was, like a rate change at the same speed.
  auto old = playback_;
  proto::OpenPlayback req = old->request;
  const bool reverse = req.direction() == proto::DIRECTION_REVERSE;
  if (last_pts_) {
    if (reverse) req.set_end_us(*last_pts_);
    else req.set_start_us(*last_pts_ + 1);
  }
  std::shared_ptr<PlaybackService::Playback> p;
  auto r = co_await service_.open(req, notify_, p, old->id);
  if (auto* refused = std::get_if<proto::Refuse>(&r)) {
    log::info("paused playback not re-admitted on resume", {{"playback", old->id}, {"reason", refused->reason()}});
    co_return error(errc::admission_refused,
                    "resume refused: the playback released its disk share while paused and the disk cannot take it "
                    "again now (" +
                        refused->reason() + "); it stays paused: resume again later, or close it");
  }
  playback_ = std::move(p);
  gop_.reset();
  frame_ = 0;
  skip_sent_ = false;
  skip_through_.reset();
  // The reopened playback starts at the keyframe before the position: the viewer has those frames.
  if (last_pts_ && !reverse) skip_through_ = last_pts_;
  pacer_.resume(now);
  proto::Envelope e;
  *e.mutable_playback_started() = std::get<proto::PlaybackStarted>(r);
  co_return e;
}

std::optional<PlaybackChannel::Out> PlaybackChannel::next(Clock::time_point now, Clock::time_point& wake) {
  wake = Clock::time_point::max();
  if (!playback_) return std::nullopt;
  if (auto why = playback_->ended->reason()) return ended_for_recording(*why);
  if (playback_->live) return next_live(now);
  if (pacer_.paused() && playback_->disk) {
    // A paused playback keeps its disk share only so long.
    const auto release_at = paused_at_ + service_.pause_release();
    if (now >= release_at) service_.suspend(*playback_);
    else wake = release_at;
  }
  if (playback_->suspended) return std::nullopt;  // paused, off its disk: resume re-admits it
  auto& stream = *playback_->stream;
  for (;;) {
    if (!gop_ || frame_ >= gop_->frames.size()) {
      gop_ = stream.pop();
      frame_ = 0;
      if (!gop_) break;
      if (gop_->damaged) {
        auto* g = end_.add_gaps();
        g->set_from_us(gop_->from_pts);
        g->set_to_us(gop_->to_pts);
        g->set_reason(std::string("corruption: a GOP failed verification (") + gop_->damage + ") and was skipped");
        log::warn("playback skipped a damaged GOP",
                  {{"playback", playback_->id}, {"from_us", gop_->from_pts}, {"why", gop_->damage}});
        gop_.reset();
        continue;
      }
      continue;
    }
    const auto& f = gop_->frames[frame_];
    if (skip_through_ && f.header.pts != storage::kNoTimestamp && f.header.pts <= *skip_through_) {
      ++frame_;
      continue;
    }
    if (skip_sent_ && f.header.stream_id == last_stream_ && f.header.sequence <= last_sequence_) {
      ++frame_;
      continue;
    }
    const std::int64_t pts = f.header.pts == storage::kNoTimestamp ? last_pts_.value_or(0) : f.header.pts;
    const auto due = pacer_.due(pts, now);
    if (!due) return std::nullopt;  // paused
    if (*due > now) {
      wake = *due;
      return std::nullopt;
    }
    proto::Envelope env;
    auto* m = env.mutable_media_packet();
    m->set_stream_id(playback_->id);
    m->set_sequence(++sequence_);
    m->set_has_pts(f.header.pts != storage::kNoTimestamp);
    m->set_has_dts(f.header.dts != storage::kNoTimestamp);
    if (m->has_pts()) m->set_pts(f.header.pts);
    if (m->has_dts()) m->set_dts(f.header.dts);
    m->set_duration(f.header.duration);
    m->set_keyframe(f.header.keyframe());
    m->set_payload_bytes(static_cast<std::uint32_t>(f.payload.size()));
    Out out;
    proto::append_frame_header(out.header, env);
    out.payload = f.payload;
    out.keep = gop_;
    ++frame_;
    last_pts_ = pts;
    last_end_us_ = std::max(last_end_us_, pts + f.header.duration);
    last_stream_ = f.header.stream_id;
    last_sequence_ = f.header.sequence;
    pacer_.sent(pts);
    return out;
  }
  if (!stream.done()) return std::nullopt;  // the next cycle's read will notify
  if (!stream.error()) {
    switch (tail(now, wake)) {
      // A new read (or the live feed) has the next frame; at most one more level deep, since a
      // tail that extends with nothing new to read answers wait or end (extend()).
      case Tail::go: return next(now, wake);
      case Tail::wait: return std::nullopt;
      case Tail::end: break;
    }
  }
  proto::Envelope env;
  *env.mutable_playback_end() = end_;
  auto* e = env.mutable_playback_end();
  e->set_stream_id(playback_->id);
  e->set_packets(sequence_);
  if (auto err = stream.error()) {
    e->set_failed(true);
    e->set_reason("read error: " + err->message());
  } else if (playback_->next_from_us != 0) {
    e->set_reason("end of part: the codec parameters or the volume change; the range continues at next_start_us");
    e->set_next_start_us(playback_->next_from_us);
  } else {
    e->set_reason("end of range");
  }
  Out out;
  proto::append_frame_header(out.header, env);
  out.last = true;
  log::info("playback ended", {{"playback", playback_->id}, {"packets", sequence_}, {"reason", e->reason()}});
  close();
  return out;
}

std::optional<PlaybackChannel::Out> PlaybackChannel::next_live(Clock::time_point now) {
  // Live frames go out as they come: the camera paces them. Paused, the tap fills and drops to
  // the next keyframe; resuming continues from there.
  auto& tap = *playback_->live;
  if (pacer_.paused()) {
    while (tap.pop()) tail_skipped_ = true;
    return std::nullopt;
  }
  (void)now;
  if (auto f = tap.peek(); f && playback_->live_tail && f->header.pts != storage::kNoTimestamp &&
                           f->header.pts >= playback_->request.end_us()) {
    // A recorded range continued live ends where the range does.
    return live_end("end of range");
  }
  if (auto f = tap.pop()) {
    if (playback_->live_tail && f->header.pts != storage::kNoTimestamp) {
      // A recorded range continued live: frames the feed skipped (a pause, or a viewer behind by
      // more than the tap holds) are recorded but were not sent: the PlaybackEnd names them.
      if ((tail_skipped_ || tap.dropped() > tail_dropped_seen_) && last_end_us_ > 0 && f->header.pts > last_end_us_) {
        auto* g = end_.add_gaps();
        g->set_from_us(last_end_us_);
        g->set_to_us(f->header.pts);
        g->set_reason("not sent: the viewer paused or fell behind the live edge (recorded: play the range again)");
      }
      tail_skipped_ = false;
      tail_dropped_seen_ = tap.dropped();
      last_end_us_ = std::max(last_end_us_, f->header.pts + f->header.duration);
    }
    proto::Envelope env;
    auto* m = env.mutable_media_packet();
    m->set_stream_id(playback_->id);
    m->set_sequence(++sequence_);
    m->set_has_pts(f->header.pts != storage::kNoTimestamp);
    m->set_has_dts(f->header.dts != storage::kNoTimestamp);
    if (m->has_pts()) m->set_pts(f->header.pts);
    if (m->has_dts()) m->set_dts(f->header.dts);
    m->set_duration(f->header.duration);
    m->set_keyframe(f->header.keyframe());
    m->set_payload_bytes(static_cast<std::uint32_t>(f->payload.size()));
    Out out;
    proto::append_frame_header(out.header, env);
    out.payload = f->payload;
    out.keep_live = std::move(f);
    return out;
  }
  if (!tap.ended()) return std::nullopt;
  return live_end("recording ended");
}

PlaybackChannel::Out PlaybackChannel::live_end(const std::string& reason) {
  proto::Envelope env;
  *env.mutable_playback_end() = end_;  // gaps met on the way (recorded part and live tail)
  auto* e = env.mutable_playback_end();
  e->set_stream_id(playback_->id);
  e->set_packets(sequence_);
  e->set_reason(reason);
  Out out;
  proto::append_frame_header(out.header, env);
  out.last = true;
  log::info("live view ended", {{"playback", playback_->id},
                                {"packets", sequence_},
                                {"reason", reason},
                                {"dropped", playback_->live->dropped()}});
  close();
  return out;
}

PlaybackChannel::Out PlaybackChannel::ended_for_recording(const std::string& reason) {
  proto::Envelope env;
  *env.mutable_playback_end() = end_;  // gaps met on the way
  auto* e = env.mutable_playback_end();
  e->set_stream_id(playback_->id);
  e->set_packets(sequence_);
  e->set_failed(true);
  e->set_reason(reason);
  Out out;
  proto::append_frame_header(out.header, env);
  out.last = true;
  log::info("playback ended for a recording", {{"playback", playback_->id}, {"packets", sequence_}});
  close();
  return out;
}

PlaybackChannel::Tail PlaybackChannel::tail(Clock::time_point now, Clock::time_point& wake) {
  auto& p = *playback_;
  const auto& req = p.request;
  // Only a forward playback of every frame whose range goes on past what is durable continues.
  // (A plan with a later part ends at that part: its PlaybackEnd names it.)
  if (!p.reaches_open || p.next_from_us != 0 || req.direction() == proto::DIRECTION_REVERSE || req.keyframes_only() ||
      !last_pts_ || req.end_us() <= *last_pts_ + 1) {
    return Tail::end;
  }
  if (!p.tail) p.tail = service_.subscribe_tail(p);
  if (p.tail) {
    // The feed has what arrived since the tap opened; what it already is on the disk was sent.
    for (auto f = p.tail->peek(); f && f->header.stream_id == last_stream_ && f->header.sequence <= last_sequence_;
         f = p.tail->peek()) {
      (void)p.tail->pop();
    }
    if (auto f = p.tail->peek(); f && f->header.stream_id == last_stream_ && f->header.sequence == last_sequence_ + 1) {
      tail_dropped_seen_ = p.tail->dropped();  // what it skipped before was sent from the disk
      tail_skipped_ = false;
      service_.go_live(p, std::move(p.tail));
      return Tail::go;
    }
  }
  // The recording made more durable since: read it (a cycle or two behind the live edge).
  // From the end of the last frame sent: a segment that ends there has nothing more to give.
  switch (service_.extend(p, std::max(last_end_us_, *last_pts_ + 1))) {
    case PlaybackService::Extended::more:
      gop_.reset();
      frame_ = 0;
      skip_through_.reset();
      skip_sent_ = true;  // the read starts at the keyframe before: the viewer has those frames
      return Tail::go;
    case PlaybackService::Extended::not_yet:
      // Look again within the cycle (the tap's frames wake us sooner).
      wake = now + std::chrono::milliseconds(100);
      return Tail::wait;
    case PlaybackService::Extended::over: break;
  }
  return Tail::end;  // the recording ended and every frame of it in the range was sent
}

void PlaybackChannel::close() {
  if (!playback_) return;
  service_.close(playback_);
  playback_.reset();
  gop_.reset();
}

}  // namespace vigil::server
