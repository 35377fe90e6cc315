#include "client/proxy/proxy_playback.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <functional>

namespace asio = boost::asio;

namespace vigil::client {
namespace {

// vigild's Refuse as the viewer's answer: admission (the disk is full, or not profiled) is a 503
// the viewer may retry, with the reason and the largest rate that would fit now.
ProxyReply refusal_reply(const proto::Refuse& r) {
  int status = 503;
  if (r.reason_code() == proto::REFUSE_REASON_NO_SUCH_STREAM) status = 404;
  if (r.reason_code() == proto::REFUSE_REASON_INVALID_REQUEST) status = 400;
  ProxyReply out;
  out.status = status;
  out.headers = {{"Content-Type", "application/json"}, {"Cache-Control", "no-store"}};
  if (status == 503) out.headers.emplace_back("Retry-After", "5");
  boost::json::object body{{"error", r.reason()}};
  if (status == 503) body["largest_rate_bps"] = r.largest_rate_bps();
  out.body = std::make_shared<const std::string>(boost::json::serialize(body));
  return out;
}

}  // namespace

UpstreamPlayback::UpstreamPlayback(const asio::any_io_executor& ex, PlaybackParams params, PlaybackLimits limits)
    : ex_(ex),
      params_(std::move(params)),
      limits_(limits),
      buffer_(params_.start_us, params_.end_us, limits),
      last_used_(std::chrono::steady_clock::now()) {}

void UpstreamPlayback::start() { asio::co_spawn(ex_, run(shared_from_this()), asio::detached); }

void UpstreamPlayback::close() {
  if (closed_) return;
  closed_ = true;
  if (conn_) conn_->close();
  if (!buffer_.ended() && !failure_) fail(json_error(502, "the proxy closed the upstream playback"));
  wake();
}

void UpstreamPlayback::fail(ProxyReply reply) {
  if (!failure_) failure_ = std::move(reply);
  if (conn_) conn_->close();
  wake();
}

void UpstreamPlayback::wake() {
  for (auto* t : waiters_) t->cancel();
}

asio::awaitable<void> UpstreamPlayback::run(std::shared_ptr<UpstreamPlayback> self) {
  self->conn_ = std::make_shared<WireConnection>(self->ex_);
  auto refused = co_await self->conn_->open(self->params_.node, self->params_.token, self->limits_.open_timeout);
  if (refused) {
    self->fail(std::move(*refused));
    co_return;
  }
  if (self->closed_) co_return;
  proto::Envelope open;
  auto* o = open.mutable_open_playback();
  o->set_stream_name(self->params_.camera);
  o->set_start_us(self->params_.start_us);
  o->set_end_us(self->params_.end_us);
  o->set_rate(self->limits_.rate);
  o->set_keyframes_only(self->params_.keyframes_only);
  o->set_direction(proto::DIRECTION_FORWARD);
  self->conn_->send(open);
  for (;;) {
    auto frame = co_await self->conn_->receive();
    if (!frame) {
      if (!self->buffer_.ended()) self->fail(self->conn_->failure());
      co_return;
    }
    const auto& msg = frame->msg;
    if (msg.has_playback_started()) {
      const auto& c = msg.playback_started().codec();
      self->codec_ = media::CodecInfo{.codec_name = c.codec_name(),
                                      .width = c.width(),
                                      .height = c.height(),
                                      .bit_rate = c.bit_rate(),
                                      .extradata = c.extradata()};
      self->stream_id_ = msg.playback_started().stream_id();
      self->started_ = true;
      self->wake();
    } else if (msg.has_refuse()) {
      self->fail(refusal_reply(msg.refuse()));
      co_return;
    } else if (msg.has_media_packet()) {
      self->on_packet(msg.media_packet(), frame->payload);
    } else if (msg.has_playback_end()) {
      const auto& end = msg.playback_end();
      self->buffer_.mark_ended();
      if (end.failed()) self->fail(json_error(502, "vigild: the playback failed: " + end.reason()));
      self->conn_->close();  // the buffer stays; the node's playback is over
      self->wake();
      co_return;
    } else if (msg.has_error()) {
      self->fail(reply_for_error(msg.error()));
      co_return;
    }
  }
}

void UpstreamPlayback::on_packet(const proto::MediaPacket& m, std::span<const std::byte> payload) {
  PlaybackBuffer::Packet p;
  p.pts = m.has_pts() ? m.pts() : last_pts_;
  p.dts = m.has_dts() ? m.dts() : p.pts;
  p.duration = m.duration();
  p.keyframe = m.keyframe();
  last_pts_ = p.pts;
  p.payload.assign(payload.begin(), payload.end());  // the one copy, out of the decoder's buffer
  // A segment can only become complete when the next GOP starts.
  if (!buffer_.append(std::move(p))) return;
  buffer_.trim();
  steer();
  wake();
}

bool UpstreamPlayback::covers(std::int64_t t0, std::int64_t t1) const {
  return !failure_ && !closed_ && buffer_.covers(t0, t1);
}

bool UpstreamPlayback::passed(std::int64_t t0, std::int64_t t1) const { return !failure_ && buffer_.passed(t0, t1); }

void UpstreamPlayback::steer() {
  if (!started_ || buffer_.ended() || failure_ || closed_ || !conn_) return;
  const bool pause = buffer_.should_pause();
  if (pause == paused_) return;
  paused_ = pause;
  proto::Envelope c;
  c.mutable_control()->set_stream_id(stream_id_);
  c.mutable_control()->set_op(pause ? proto::CONTROL_OP_PAUSE : proto::CONTROL_OP_RESUME);
  conn_->send(c);
}

asio::awaitable<std::optional<ProxyReply>> UpstreamPlayback::wait_until(
    const std::function<bool()>& ready, std::chrono::steady_clock::time_point deadline) {
  asio::steady_timer timer(ex_);
  waiters_.insert(&timer);
  // Owns the playback: this frame may be destroyed (shutdown) after the viewer's frames above it.
  struct Leave {
    std::shared_ptr<UpstreamPlayback> p;
    asio::steady_timer* t;
    ~Leave() { p->waiters_.erase(t); }
  } leave{shared_from_this(), &timer};
  for (;;) {
    last_used_ = std::chrono::steady_clock::now();
    if (ready()) co_return std::nullopt;
    if (failure_) co_return *failure_;
    if (buffer_.ended()) co_return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline) {
      co_return json_error(504, "upstream playback of '" + params_.camera + "' did not deliver in time");
    }
    timer.expires_at(deadline);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

asio::awaitable<std::optional<ProxyReply>> UpstreamPlayback::wait_for(std::int64_t t0, std::int64_t t1,
                                                                      std::chrono::steady_clock::time_point deadline) {
  buffer_.enter(t0, t1);
  // Dropping what the viewers left behind happens here and on new keyframes, never between this
  // wait's end and the caller cutting its segment.
  buffer_.trim();
  steer();
  // Named: GCC 12 destroys temporaries of a co_await expression twice.
  const std::function<bool()> ready = [this, t1] { return started_ && buffer_.complete(t1); };
  auto result = co_await wait_until(ready, deadline);
  buffer_.leave(t0, t1);
  if (!result && !started_) result = failure_ ? *failure_ : json_error(502, "the upstream playback never started");
  steer();
  co_return result;
}

asio::awaitable<std::optional<ProxyReply>> UpstreamPlayback::wait_started(
    std::chrono::steady_clock::time_point deadline) {
  const std::function<bool()> ready = [this] { return started_; };
  auto result = co_await wait_until(ready, deadline);
  if (!result && !started_) result = failure_ ? *failure_ : json_error(502, "the upstream playback never started");
  co_return result;
}

media::Bytes UpstreamPlayback::segment(std::int64_t t0, std::int64_t t1, std::int64_t origin) const {
  // The GOPs whose keyframe is in [T0, T1), as vigild cuts hls/seg.m4s (its segments start and end at keyframes).
  const auto picked = buffer_.pick(t0, t1);
  if (picked.empty() || !codec_) return {};
  auto writer = media::MediaWriter::fragmented(*codec_, origin);
  (void)writer.take_output();  // the init segment: served by init.mp4
  for (std::size_t i = 0; i < picked.size(); ++i) {
    const auto& p = *picked[i];
    media::Frame f{
        .pts_us = p.pts, .dts_us = p.dts, .duration_us = p.duration, .keyframe = p.keyframe, .payload = p.payload};
    if (params_.keyframes_only) {
      // Each keyframe lasts until the next one (or the segment's end): the segment keeps its
      // length on the playlist's timeline, shown as a still per GOP.
      const std::int64_t next = i + 1 < picked.size() ? picked[i + 1]->pts : t1;
      f.dts_us = p.pts;
      f.duration_us = std::max<std::int64_t>(next - p.pts, 1);
    }
    writer.write(f);
  }
  writer.flush_fragment();
  return writer.take_output();
}

media::Bytes UpstreamPlayback::init_segment(std::int64_t origin) const {
  if (!codec_) return {};
  auto writer = media::MediaWriter::fragmented(*codec_, origin);
  return writer.take_output();
}

}  // namespace vigil::client
