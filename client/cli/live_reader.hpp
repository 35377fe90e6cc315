#pragma once
// The recorder's input read on its own thread, so that the camera is never back-pressured by
// vigild (docs/protocol.md, "Media loss"): while the recorder waits for acknowledgements after a
// refusal, this thread keeps reading at the source's pace into a queue of at most CAP_BYTES of
// payload (memory per camera stays bounded). A live source that runs ahead of what vigild takes
// for longer than the queue holds is dropped from deliberately — from the packet that does not fit
// up to the next keyframe that fits half the queue, so what is kept stays decodable — and each
// such run is reported as a Loss with reason rate_exceeded. A file is never dropped from: its
// reading waits for room instead. Holes in what the source delivered are reported as Losses with
// reason source_loss: exactly those the input says it dropped (frames_lost_before, packet.hpp: the
// buffered RTSP session after an RTP loss), and those found in the timestamps (source_gaps.hpp).
// Frames lost before the first packet delivered are not reported: recording starts at it.
// Losses come in the order they happened.
// Thread: the reader thread calls the source (nothing else may, once started); next(),
// take_losses() and the destructor are the recorder's. Errors: none thrown; the input's end or
// loss ends the queue (InputDemuxer::lost() says which, once next() returned null).
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>
#include <thread>
#include <vector>

#include "client/cli/input_demuxer.hpp"
#include "client/cli/packet_source.hpp"
#include "client/cli/source_gaps.hpp"

namespace vigil::client {

struct Loss {
  enum class Reason { source_loss, rate_exceeded } reason = Reason::source_loss;
  std::int64_t from_ts = 0, to_ts = 0;  // the stream's time base: [first missing instant, next packet kept)
  std::uint64_t packets = 0, payload_bytes = 0;
};

class LiveReader {
 public:
  // Starts reading INPUT (already opened; what it read ahead comes first). LIVE: drop beyond
  // CAP_BYTES; else wait for room. PACE: read no faster than real time (a file standing in for a
  // camera: `vigil record --as-live`).
  LiveReader(PacketSource& input, std::size_t cap_bytes, bool live, bool pace = false);
  ~LiveReader();  // interrupts the input's reading and joins the thread
  LiveReader(const LiveReader&) = delete;
  LiveReader& operator=(const LiveReader&) = delete;

  // The next packet kept; null at the end of the input. With the queue empty it waits until the
  // queue holds GATHER_S of media (first packet to last), half its cap, or the input ended: the
  // recorder, which sends ~100 ms per write anyway, is woken once per write, not per frame.
  PacketPtr next(double gather_s = 0);
  // The losses found since the last call.
  std::vector<Loss> take_losses();
  std::uint64_t dropped_packets() const;

 private:
  void read_all();
  void keep_or_drop(PacketPtr p, std::unique_lock<std::mutex>& lock);  // with mu_ held
  void end_drop_run(std::int64_t resumed_at_ts);                       // with mu_ held
  bool gathered() const;                                               // with mu_ held: next() may return

  PacketSource& input_;
  const std::size_t cap_bytes_;
  const bool live_, pace_;
  SourceGapDetector holes_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::deque<PacketPtr> queue_;            // guarded by mu_
  std::size_t queued_bytes_ = 0;           // guarded by mu_
  bool ended_ = false, stopping_ = false;  // guarded by mu_
  std::vector<Loss> losses_;               // guarded by mu_
  std::optional<std::int64_t> gather_ts_;  // guarded by mu_: next() waits for this much media (time base)
  bool full_ = false;                      // guarded by mu_: a file's reader waits for room
  bool dropping_ = false;                  // guarded by mu_: a rate_exceeded run is open
  Loss run_;                               // guarded by mu_: the open run
  std::optional<std::pair<std::chrono::steady_clock::time_point, std::int64_t>> pace_start_;  // the reader's
  std::int64_t last_end_ts_ = 0;       // the reader's: the latest packet's end (a drop run that ends with the input)
  bool delivered_any_ = false;         // the reader's: a packet with a timestamp was read
  std::uint64_t dropped_packets_ = 0;  // guarded by mu_
  std::thread thread_;                 // last: started once the rest is ready
};

}  // namespace vigil::client
