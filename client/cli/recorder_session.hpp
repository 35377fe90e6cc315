#pragma once
// The recorder's conversation with vigild: connect, open the stream (admitted or refused), send
// the input's packets paced at real time in bursts, take durable acknowledgements and rate
// refusals, end the stream, and — when vigild goes away — reconnect with backoff and send what
// the unacked window still holds in a new stream. A frame larger than the stream's buffer half
// re-opens it, once per such frame, at a declared rate whose buffer holds it. The input is read on
// its own thread (live_reader.hpp), so a camera is never held back while the recorder waits on
// vigild; what it drops above the admitted rate, and the holes its source left, go to vigild as
// MediaLoss reports (gaps).
// Thread: the recorder's. Errors: run() returns an exit code (common/exit_codes.hpp) and prints
// why; nothing escapes it.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/cli/input_demuxer.hpp"
#include "client/cli/live_reader.hpp"
#include "client/cli/packet_source.hpp"
#include "client/wire/unacked_window.hpp"
#include "client/wire/wire_client.hpp"

namespace vigil::client {

struct RecordOptions {
  std::string server, token;       // vigild's wire address and the token for it
  std::string gap_reason;          // why this camera's previous recording ended (may be empty)
  double duration_s = 0;           // stop after this much media; 0: the whole input
  double retry_for_s = 300;        // how long to keep reconnecting to a vigild that went away
  bool fast = false;               // no real-time pacing
  bool as_live = false;            // read the input as a camera: at real time, never waiting for vigild (tests)
  std::ostream* log = &std::cerr;  // what the session says (an ingest worker: the camera's tagged lines)
};

class RecorderSession {
 public:
  // OPEN: the open-record to send (name, codec, declared rates). WALL_OFFSET_US: the recorder's
  // clock, wall = pts + offset, when the input's first packet had a timestamp.
  RecorderSession(RecordOptions options, PacketSource& input, proto::Envelope open,
                  std::optional<std::int64_t> wall_offset_us, const std::atomic<bool>& stop);

  // Records the whole input. The exit code: every packet acknowledged, or why not.
  int run();

  std::uint64_t packets_read() const { return packets_read_; }
  // Packets a live source sent beyond what vigild took and the recorder's queue held: dropped
  // and reported as rate_exceeded gaps (live_reader.hpp).
  std::uint64_t packets_dropped() const { return packets_dropped_; }
  std::uint64_t packets_acked() const { return window_.acked_total(); }
  // The same, from any thread while run() goes on (a test or a progress display).
  std::uint64_t packets_acked_now() const { return acked_now_.load(std::memory_order_acquire); }
  std::uint64_t stream_id() const { return window_.stream_id(); }
  int connections() const { return connections_; }

 private:
  int record();  // run() with the reader started
  std::optional<int> connect();
  std::optional<int> reconnect(const std::exception& why);
  std::optional<int> reopen_for_large_frame();
  void send_everything();
  double read_burst();
  void pace(double burst_end_s) const;
  std::uint64_t take_replies(bool wait_for_barrier);
  bool queue_losses();
  void take(const Received& reply);
  void finish_stream();
  PendingPacket to_pending(const AVPacket& p) const;

  RecordOptions options_;
  PacketSource& input_;
  proto::Envelope open_;
  std::optional<std::int64_t> wall_offset_us_;
  const std::atomic<bool>& stop_;
  UnackedWindow window_;
  std::unique_ptr<WireClient> client_;
  std::chrono::steady_clock::time_point started_;
  std::optional<std::int64_t> media_t0_;  // the first packet's timestamp: media time 0
  std::uint64_t packets_read_ = 0;
  int connections_ = 0;
  bool more_input_ = true;
  std::uint64_t cycle_us_ = 0, buffer_bytes_ = 0;  // of the open stream, from its Admit
  std::uint64_t too_large_ = 0;           // the packet of this stream refused as larger than its buffer (0: none)
  std::uint64_t reopened_for_bytes_ = 0;  // the largest frame a re-open was for
  std::string reopen_reason_;             // the gap reason of the next open, when it is a re-open
  std::atomic<std::uint64_t> acked_now_{0};
  std::unique_ptr<LiveReader> reader_;  // reads the input on its own thread during run()
  std::vector<Loss> losses_;            // found by the reader, not sent yet
  std::uint64_t packets_dropped_ = 0;
  std::size_t window_cap_bytes_ = 0;  // the window holds at most about this much (then the reader's queue does)
  bool told_dropping_ = false;
};

}  // namespace vigil::client
