#include "client/wire/reply_reader.hpp"

namespace vigil::client {

void read_replies(WireClient& c, bool wait_for_barrier, std::uint64_t last_sent,
                  const std::function<void(const Received&)>& take,
                  const std::function<void(const ServerError&)>& refused) {
  if (wait_for_barrier) {
    proto::Envelope ping;
    ping.mutable_ping()->set_nonce(last_sent);
    c.send(ping);
  }
  for (;;) {
    try {
      if (!wait_for_barrier) {
        auto r = c.try_receive();
        if (!r) return;
        take(*r);
        continue;
      }
      auto r = c.receive();
      take(r);
      if (r.msg.has_pong()) return;
    } catch (const ServerError& e) {
      if (e.code != proto::ERROR_CODE_RATE_EXCEEDED && e.code != proto::ERROR_CODE_INVALID_ARGUMENT &&
          e.code != proto::ERROR_CODE_FRAME_EXCEEDS_BUFFER) {
        throw;
      }
      refused(e);
    }
  }
}

}  // namespace vigil::client
