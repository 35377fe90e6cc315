#include "client/cli/recorder_session.hpp"

#include <algorithm>
#include <iostream>
#include <thread>

#include "client/wire/reply_reader.hpp"
#include "common/exit_codes.hpp"

namespace vigil::client {
namespace {

constexpr double kBurstS = 0.1;  // media sent per write: one server read per burst, no reply
constexpr auto kFirstRetry = std::chrono::milliseconds(1000);
constexpr auto kLongestRetry = std::chrono::milliseconds(30'000);
constexpr double kRecordHeaderBytes = 56;  // what each packet costs in the buffer besides its payload
// A re-open's buffer holds the large frame and the frames around it in its cycle, not the frame
// alone: else the next cycle's policing refuses what follows it.
constexpr double kLargeFrameHeadroom = 1.5;
// The reader's queue (live_reader.hpp): this much media at the declared rate, within bounds —
// enough to ride out a policed cycle or two, small enough for many cameras per process.
constexpr double kQueueS = 1.5;
constexpr double kMinQueueBytes = 256 * 1024;
constexpr double kMaxQueueBytes = 8 * 1024 * 1024;

}  // namespace

RecorderSession::RecorderSession(RecordOptions options, PacketSource& input, proto::Envelope open,
                                 std::optional<std::int64_t> wall_offset_us, const std::atomic<bool>& stop)
    : options_(std::move(options)),
      input_(input),
      open_(std::move(open)),
      wall_offset_us_(wall_offset_us),
      stop_(stop) {}

// Nullopt when the stream is open; else the exit code (a refusal is final; an unreachable vigild
// is retried by reconnect()).
std::optional<int> RecorderSession::connect() {
  try {
    client_ = std::make_unique<WireClient>(options_.server, std::chrono::seconds(30));
    client_->hello("vigil-record", options_.token);
  } catch (const std::exception& e) {
    *options_.log << "vigil record: cannot reach vigild at " << options_.server << ": " << e.what() << "\n";
    return exit_code::kUnreachable;
  }
  auto* o = open_.mutable_open_record();
  if (const auto* next = window_.next_stream_first(); connections_ > 0 && next) {
    // A new stream continues from the keyframe of the GOP that was being sent (or where the last
    // acknowledged packet left off), at its capture time.
    const auto& first = next->env.media_packet();
    if (wall_offset_us_ && first.has_pts()) o->set_first_wall_us(input_.to_us(first.pts()) + *wall_offset_us_);
    o->set_gap_reason(!reopen_reason_.empty()       ? reopen_reason_
                      : options_.gap_reason.empty() ? "recorder lost its connection to vigild; reconnected"
                                                    : options_.gap_reason);
  } else if (wall_offset_us_ && input_.first_pts()) {
    o->set_first_wall_us(input_.to_us(*input_.first_pts()) + *wall_offset_us_);
  }
  reopen_reason_.clear();
  try {
    client_->send(open_);
    auto reply = client_->receive();
    if (reply.msg.has_refuse()) {
      *options_.log << "vigil record: refused by admission: " << reply.msg.refuse().reason()
                    << " (largest rate that fits: " << static_cast<double>(reply.msg.refuse().largest_rate_bps()) / 1e6
                    << " Mbit/s)\n";
      return exit_code::kRefused;
    }
    if (!reply.msg.has_admit()) throw std::runtime_error("unexpected reply to open-record");
    window_.renumber(reply.msg.admit().stream_id());
    cycle_us_ = reply.msg.admit().cycle_us();
    buffer_bytes_ = reply.msg.admit().buffer_bytes();
    too_large_ = 0;
    *options_.log << "vigil record: admitted as stream " << window_.stream_id() << " at "
                  << static_cast<double>(reply.msg.admit().admitted_rate_bps()) / 1e6 << " Mbit/s, cycle "
                  << static_cast<double>(reply.msg.admit().cycle_us()) / 1e3 << " ms\n";
  } catch (const std::exception& e) {
    *options_.log << "vigil record: " << e.what() << "\n";
    return exit_code::kUnreachable;
  }
  ++connections_;
  return std::nullopt;
}

// Keeps what is not acknowledged and reconnects with backoff for up to --retry-for seconds.
// Nullopt when a new stream is open.
std::optional<int> RecorderSession::reconnect(const std::exception& why) {
  *options_.log << "vigil record: lost vigild (" << why.what() << "); " << window_.size()
                << " packets kept for resending\n";
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.retry_for_s);
  auto delay = kFirstRetry;
  std::optional<int> rc = exit_code::kUnreachable;
  while (rc && !stop_.load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, kLongestRetry);
    rc = connect();
    if (rc && *rc != exit_code::kUnreachable) return rc;  // refused: final
  }
  if (rc) {
    *options_.log << "vigil record: gave up reconnecting; " << window_.size() << " packets were not stored\n";
    return exit_code::kFailed;
  }
  return std::nullopt;
}

int RecorderSession::run() {
  // Reading starts before vigild answers: a camera is never held up by the recorder.
  const double rate_bps = static_cast<double>(open_.open_record().declared_peak_rate_bps());
  // The window holds as much again: a policed recorder's backlog waits in the reader's queue.
  // Both hold what was read ahead to measure the rate besides: that backlog of the start (with
  // what arrives while vigild admits the stream) drains at the declared rate's margin, and must
  // not be dropped as "above the admitted rate" on the way.
  window_cap_bytes_ = static_cast<std::size_t>(std::clamp(rate_bps / 8 * kQueueS, kMinQueueBytes, kMaxQueueBytes)) +
                      input_.ahead_bytes();
  reader_ = std::make_unique<LiveReader>(input_, window_cap_bytes_, input_.live() || options_.as_live,
                                         options_.as_live && !options_.fast);
  const int rc = record();
  reader_.reset();  // the input is the caller's again (lost(), the next session)
  return rc;
}

int RecorderSession::record() {
  if (auto rc = connect()) return *rc;
  started_ = std::chrono::steady_clock::now();
  for (;;) {
    try {
      send_everything();
      if (too_large_) {
        if (auto rc = reopen_for_large_frame()) return *rc;
        continue;
      }
      finish_stream();
      if (window_.empty() || stop_.load()) return exit_code::kOk;
      throw std::runtime_error("vigild closed the stream before acknowledging everything");
    } catch (const ServerError& e) {
      // vigild's disk failed: it ended the stream at the last acknowledged packet, and the window
      // still holds every packet after it, which a new stream resends.
      if (e.code == proto::ERROR_CODE_IO_ERROR) {
        if (auto rc = reconnect(e)) return *rc;
        continue;
      }
      *options_.log << "vigil record: " << e.what() << " (last acknowledged packet " << window_.acked() << ")\n";
      return exit_code::kFailed;
    } catch (const std::exception& e) {
      if (auto rc = reconnect(e)) return *rc;
    }
  }
}

// A packet larger than the stream's buffer half can never be taken at this rate: ends the stream
// once everything before it is durable, and opens a new one at a declared rate whose buffer holds
// it, from that packet on. Each re-open is for a larger frame than the last (its buffer holds the
// last one), so this never loops; admission ends it by refusing. Nullopt when the new stream is open.
std::optional<int> RecorderSession::reopen_for_large_frame() {
  while (window_.acked() + 1 < too_large_) take(client_->receive());
  const auto frame_bytes = window_.front().payload.size();
  finish_stream();
  auto* o = open_.mutable_open_record();
  const double old_bps = static_cast<double>(o->declared_peak_rate_bps());
  const double cycle_s = static_cast<double>(cycle_us_) / 1e6;
  const double new_bps = (static_cast<double>(frame_bytes) + kRecordHeaderBytes) * 8 / cycle_s * kLargeFrameHeadroom;
  *options_.log << "vigil record: packet " << window_.acked_total() + 1 << " (" << frame_bytes
                << " bytes) is larger than the stream's buffer (" << buffer_bytes_ << " bytes per cycle at "
                << old_bps / 1e6 << " Mbit/s); re-opening at " << new_bps / 1e6 << " Mbit/s\n";
  if (frame_bytes <= reopened_for_bytes_ || new_bps <= old_bps) {
    *options_.log << "vigil record: vigild refused a frame the re-opened stream's buffer should hold; giving up\n";
    return exit_code::kFailed;
  }
  reopened_for_bytes_ = frame_bytes;
  o->set_declared_peak_rate_bps(static_cast<std::uint64_t>(new_bps));
  reopen_reason_ = "re-opened at a higher declared rate for a frame larger than the stream's buffer";
  return connect();
}

// Bursts of ~100 ms of media in one write each; a refusal resends from the refused packet once
// what came before it is durable.
void RecorderSession::send_everything() {
  while (more_input_ || !window_.all_sent()) {
    std::uint64_t first_refused = 0;
    if (window_.payload_bytes() >= window_cap_bytes_ && window_.all_sent()) {
      // Policed and behind: the backlog waits in the reader's queue (where a live source's excess
      // is dropped and reported), not in the window. Every answer to what was sent first (a
      // barrier: no refusal comes after it), then the next acknowledgement makes room.
      first_refused = take_replies(true);
      if (!first_refused) {
        if (window_.payload_bytes() >= window_cap_bytes_) take(client_->receive());
        continue;
      }
    } else {
      pace(read_burst());
      for (const auto* p : window_.unsent()) client_->queue(p->env, p->payload);
      window_.mark_sent();
      const bool reported = queue_losses();
      client_->flush();
      if (reported) losses_.clear();  // written (a connection lost before they arrive loses the reports, not media)
      first_refused = take_replies(false);
      // Policed, or everything is sent: a ping as barrier — every refusal of what was sent arrives
      // before its pong — so nothing refused goes unnoticed before the end.
      if (first_refused || !more_input_) {
        const auto more_refused = take_replies(true);
        if (more_refused && (!first_refused || more_refused < first_refused)) first_refused = more_refused;
      }
    }
    if (too_large_ && too_large_ == first_refused) return;  // waiting would not help: run() re-opens
    too_large_ = 0;
    if (first_refused) {
      // Policed: the cycle's half was full. Once everything before the refused packet is
      // durable, that half has been written and a fresh one fills: resend from there. (Waiting
      // for "the next ack" instead would wait forever when it came already.)
      while (window_.acked() + 1 < first_refused) take(client_->receive());
      window_.resend_from(first_refused);
    }
  }
}

// Reads up to a burst of media into the window; returns the burst's end in media seconds (< 0
// when nothing was read).
double RecorderSession::read_burst() {
  double burst_end_s = -1;
  while (more_input_ && window_.payload_bytes() < window_cap_bytes_) {
    auto p = reader_->next(kBurstS);
    const auto ts = p ? timestamp_of(*p) : std::nullopt;
    if (ts && !media_t0_) media_t0_ = ts;
    const double at_s = ts ? static_cast<double>(*ts - *media_t0_) * input_.time_base_s() : 0;
    if (!p || (options_.duration_s > 0 && at_s >= options_.duration_s)) {
      more_input_ = false;
      break;
    }
    window_.push(to_pending(*p));
    ++packets_read_;
    if (burst_end_s < 0) burst_end_s = at_s + kBurstS;
    if (at_s >= burst_end_s) break;
  }
  return burst_end_s;
}

// The reader's losses, as MediaLoss reports after the packets just queued: vigild places them on
// the stream's clock, which its first packet pins. Whether any were queued.
bool RecorderSession::queue_losses() {
  for (auto& l : reader_->take_losses()) {
    if (l.reason == Loss::Reason::rate_exceeded) {
      packets_dropped_ += l.packets;
      if (!told_dropping_) {
        told_dropping_ = true;
        *options_.log << "vigil record: the source sends more than vigild takes at the admitted rate; dropping to "
                         "the next keyframe while the queue is full (rate_exceeded gaps)\n";
      }
    } else {
      *options_.log << "vigil record: the source skipped " << input_.to_us(l.to_ts - l.from_ts) / 1000
                    << " ms of media (a source_loss gap)\n";
    }
    losses_.push_back(l);
  }
  if (losses_.empty() || window_.last_sent() == 0) return false;
  for (const auto& l : losses_) {
    proto::Envelope env;
    auto* m = env.mutable_media_loss();
    m->set_stream_id(window_.stream_id());
    m->set_reason(l.reason == Loss::Reason::rate_exceeded ? proto::MEDIA_LOSS_REASON_RATE_EXCEEDED
                                                          : proto::MEDIA_LOSS_REASON_SOURCE_LOSS);
    m->set_from_pts(l.from_ts);
    m->set_to_pts(l.to_ts);
    m->set_packets(l.packets);
    m->set_payload_bytes(l.payload_bytes);
    client_->queue(env);
  }
  return true;
}

// Real-time pacing: media is not sent before its time.
// A live source (a camera, or a file read `--as-live`, which the reader paces) paces itself: the
// recorder sends what it has at once, so the backlog of its start (the rate measurement, the
// connection, admission) drains at the admitted rate's margin instead of staying behind for
// good, where it would fill the reader's queue and be dropped.
void RecorderSession::pace(double burst_end_s) const {
  if (options_.fast || input_.live() || options_.as_live || burst_end_s <= 0) return;
  std::this_thread::sleep_until(started_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(burst_end_s - kBurstS)));
}

// Takes what vigild has said: without waiting, or (WAIT_FOR_BARRIER) up to the pong of a ping
// sent now. Returns the first packet refused for its rate (0: none).
std::uint64_t RecorderSession::take_replies(bool wait_for_barrier) {
  std::uint64_t first_refused = 0;
  read_replies(
      *client_, wait_for_barrier, window_.last_sent(), [this](const Received& r) { take(r); },
      [&](const ServerError& e) {
        if (e.code == proto::ERROR_CODE_FRAME_EXCEEDS_BUFFER) too_large_ = e.related_sequence;
        if (first_refused == 0 || e.related_sequence < first_refused) first_refused = e.related_sequence;
      });
  return first_refused;
}

void RecorderSession::take(const Received& reply) {
  if (reply.msg.has_durable_ack()) {
    window_.acknowledge(reply.msg.durable_ack().last_sequence());
    acked_now_.store(window_.acked_total(), std::memory_order_release);
  }
}

// Everything is sent: says so and reads acknowledgements until vigild ends the stream.
void RecorderSession::finish_stream() {
  client_->end_recording(window_.stream_id());
  try {
    for (;;) take(client_->receive());
  } catch (const std::exception&) {
    // the server closed after its last acknowledgement
  }
}

PendingPacket RecorderSession::to_pending(const AVPacket& p) const {
  PendingPacket pd;
  auto* m = pd.env.mutable_media_packet();
  m->set_has_pts(p.pts != AV_NOPTS_VALUE);
  m->set_pts(p.pts != AV_NOPTS_VALUE ? p.pts : 0);
  m->set_has_dts(p.dts != AV_NOPTS_VALUE);
  m->set_dts(p.dts != AV_NOPTS_VALUE ? p.dts : 0);
  m->set_duration(p.duration);
  m->set_keyframe((p.flags & AV_PKT_FLAG_KEY) != 0);
  m->set_payload_bytes(static_cast<std::uint32_t>(p.size));
  const auto* data = reinterpret_cast<const std::byte*>(p.data);
  pd.payload.assign(data, data + p.size);
  return pd;
}

}  // namespace vigil::client
