#include "tests/support/resending_recorder.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>

#include "client/wire/wire_client.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/recording_rig.hpp"
#include "tests/support/script_frames.hpp"

namespace vigil::test {
namespace {

// Camera frame FRAME as packet SEQ of STREAM (90 kHz, 25 fps; a keyframe every 25 frames and
// at the start of every stream).
std::pair<proto::Envelope, std::vector<std::byte>> packet(std::uint64_t stream, std::uint64_t seq, std::uint64_t frame,
                                                          std::uint64_t tag) {
  return media_packet(stream, seq, frame, tag, seq == 1 || frame % 25 == 1);
}

}  // namespace

void ResendingRecorder::record(std::uint64_t total, std::uint64_t burst, int max_sessions) {
  for (int s = 0; s < max_sessions && acked_frames() < total && refusal_.empty(); ++s) {
    try {
      run_session(total, burst);
    } catch (const SessionEnded&) {
      // an IO_ERROR: connect again and resend
    } catch (const client::ServerError& e) {
      FAIL_CHECK("unexpected server error " << static_cast<int>(e.code) << ": " << e.what());
      return;
    } catch (const std::exception&) {
      // the connection closed after the error: connect again
    }
  }
}

void ResendingRecorder::run_session(std::uint64_t total, std::uint64_t burst) {
  client::WireClient c(d_.wire(), std::chrono::seconds(30));
  c.hello("resending recorder " + name_, token());
  c.send(open_record(name_, rate_bps_));
  auto admitted = c.receive();
  if (!admitted.msg.has_admit()) {
    refusal_ = admitted.msg.has_refuse() ? admitted.msg.refuse().reason() : "no admit";
    return;
  }
  const std::uint64_t stream = admitted.msg.admit().stream_id();
  streams_.push_back(stream);
  const std::uint64_t base = acked_frames();  // stream sequence S is camera frame BASE + S
  std::uint64_t stream_acked = 0;
  auto take = [&](const client::Received& r) {
    if (!r.msg.has_durable_ack()) return;
    const auto upto = r.msg.durable_ack().last_sequence();
    CHECK(upto >= stream_acked);  // acknowledgements only grow
    for (std::uint64_t s = stream_acked + 1; s <= upto; ++s) acked_.push_back({base + s, stream, s});
    stream_acked = std::max(stream_acked, upto);
  };
  // Returns the first packet refused for its rate (0: none); SessionEnded on IO_ERROR.
  auto server_error = [&](const client::ServerError& e) -> std::uint64_t {
    if (e.code == proto::ERROR_CODE_IO_ERROR) {
      ++io_errors_;
      // The error names the first packet not durable: right after the last acknowledgement.
      CHECK(e.related_sequence == stream_acked + 1);
      throw SessionEnded{};
    }
    if (e.code == proto::ERROR_CODE_RATE_EXCEEDED) return e.related_sequence;
    if (e.code != proto::ERROR_CODE_INVALID_ARGUMENT) throw e;  // out of order after a refusal: expected
    return 0;
  };
  std::uint64_t next = 1;
  while (base + next <= total) {
    const std::uint64_t end = std::min(total - base, next + burst - 1);
    for (std::uint64_t s = next; s <= end; ++s) {
      auto [p, payload] = packet(stream, s, base + s, tag_);
      c.send(p, payload);
    }
    proto::Envelope ping;
    ping.mutable_ping()->set_nonce(end);
    c.send(ping);
    std::uint64_t first_refused = 0;
    for (;;) {
      try {
        auto r = c.receive();
        take(r);
        if (r.msg.has_pong()) break;
      } catch (const client::ServerError& e) {
        const auto refused = server_error(e);
        if (refused && (!first_refused || refused < first_refused)) first_refused = refused;
      }
    }
    if (!first_refused) {
      next = end + 1;
      continue;
    }
    next = first_refused;
    const auto before = stream_acked;  // resend once the next cycle took data
    while (stream_acked == before) {
      try {
        take(c.receive());
      } catch (const client::ServerError& e) {
        server_error(e);
      }
    }
  }
  // Everything sent: half-close and read the acknowledgements to the session's end.
  ::shutdown(c.native_handle(), SHUT_WR);
  for (;;) {
    try {
      take(c.receive());
    } catch (const client::ServerError& e) {
      server_error(e);
    } catch (const std::exception&) {
      return;  // the session ended
    }
  }
}

}  // namespace vigil::test
