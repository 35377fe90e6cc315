#include "tests/support/paced_sender.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>

#include "client/wire/reply_reader.hpp"
#include "tests/support/recording_rig.hpp"

namespace vigil::test {

void PacedSender::take(const client::Received& r) {
  if (!r.msg.has_durable_ack()) return;
  CHECK(r.msg.durable_ack().last_sequence() >= counts_.acked);  // acknowledgements only grow
  counts_.acked = r.msg.durable_ack().last_sequence();
}

void PacedSender::send_until(std::uint64_t last, std::uint64_t burst) {
  while (next_ <= last) {
    const std::uint64_t end = std::min(last, next_ + burst - 1);
    for (std::uint64_t seq = next_; seq <= end; ++seq) {
      auto [p, payload] = media_packet(stream_, seq, seq, stream_, seq % gop_ == 1 % gop_);
      c_.send(p, payload);
    }
    std::uint64_t first_refused = 0;
    client::read_replies(
        c_, /*wait_for_barrier=*/true, end, [&](const client::Received& r) { take(r); },
        [&](const client::ServerError& e) {
          // The first refusal is for the rate; the packets after it are out of order until it is resent.
          if (first_refused == 0) {
            CHECK(e.code == proto::ERROR_CODE_RATE_EXCEEDED);
            first_refused = e.related_sequence;
          } else {
            CHECK(e.code == proto::ERROR_CODE_INVALID_ARGUMENT);
          }
          (e.code == proto::ERROR_CODE_RATE_EXCEEDED ? counts_.rate_refusals : counts_.other_refusals)++;
        });
    if (first_refused == 0) {
      next_ = end + 1;
      continue;
    }
    ++counts_.bursts_refused;
    next_ = first_refused;
    const auto before = counts_.acked;  // resend once the next cycle has taken the full half
    while (counts_.acked == before) take(c_.receive());
  }
}

RecordedSession record_acked(const VigildProcess& d, const std::string& name, std::uint64_t total, std::uint64_t burst,
                             std::uint64_t rate_bps) {
  client::WireClient c(d.wire(), std::chrono::seconds(30));
  c.hello("test recorder " + name, token());
  c.send(open_record(name, rate_bps));
  auto admitted = c.receive();
  REQUIRE(admitted.msg.has_admit());
  RecordedSession out;
  out.stream = admitted.msg.admit().stream_id();
  PacedSender sender(c, out.stream);
  sender.send_until(total, burst);
  sender.finish();
  out.counts = sender.counts();
  CHECK(out.counts.acked == total);
  return out;
}

void PacedSender::finish() {
  ::shutdown(c_.native_handle(), SHUT_WR);
  try {
    for (;;) take(c_.receive());
  } catch (const std::exception&) {
    // the session ended
  }
}

}  // namespace vigil::test
