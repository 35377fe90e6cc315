#pragma once
// A recorder for the fault tests: what `vigil record` does with a session that ends on a disk
// failure, with every acknowledgement logged. It sends a camera's frames 1..TOTAL over the wire
// protocol in bursts (a ping after each as a barrier; from a rate refusal it sends again once the
// next cycle acknowledged something). When the session ends — Error IO_ERROR naming the first
// packet not durable, or the connection closing — it connects again, opens a new stream of the
// same camera, and resends from the first frame not acknowledged. Camera frame C goes out as
// sequence C − base of the stream it is sent in, with script_frame(C, TAG)'s payload, so a
// verifier can tell which camera frame a record on a volume is.
// Thread: the caller's. Errors: Catch2 assertions (an IO_ERROR must name the packet after the
// last acknowledgement; acknowledgements only grow).
#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/vigild_process.hpp"

namespace vigil::test {

struct AckedFrame {
  std::uint64_t camera_frame = 0;
  std::uint64_t stream_id = 0;
  std::uint64_t sequence = 0;  // in its stream
};

class ResendingRecorder {
 public:
  ResendingRecorder(const VigildProcess& d, std::string name, std::uint64_t tag, std::uint64_t rate_bps)
      : d_(d), name_(std::move(name)), tag_(tag), rate_bps_(rate_bps) {}

  // Records frames 1..TOTAL; returns once all are acknowledged, a stream was refused, or after
  // MAX_SESSIONS sessions.
  void record(std::uint64_t total, std::uint64_t burst = 10, int max_sessions = 8);

  const std::vector<AckedFrame>& acked() const noexcept { return acked_; }
  std::uint64_t acked_frames() const noexcept { return acked_.size(); }
  const std::vector<std::uint64_t>& streams() const noexcept { return streams_; }
  int io_errors() const noexcept { return io_errors_; }
  const std::string& refusal() const noexcept { return refusal_; }

 private:
  struct SessionEnded {};
  void run_session(std::uint64_t total, std::uint64_t burst);

  const VigildProcess& d_;
  std::string name_;
  std::uint64_t tag_, rate_bps_;
  std::vector<AckedFrame> acked_;
  std::vector<std::uint64_t> streams_;
  int io_errors_ = 0;
  std::string refusal_;
};

}  // namespace vigil::test
