#pragma once
// A recorder's reading of what vigild says while it sends: durable acknowledgements and the
// refusals of single packets (policing), without waiting or up to a barrier. Shared by `vigil
// record` and the crash bench's recorders.
// Thread: the recorder's. Errors: a ServerError that is not a packet refusal is thrown.
#include <cstdint>
#include <functional>

#include "client/wire/wire_client.hpp"

namespace vigil::client {

// Reads C: without waiting (what has arrived), or with WAIT_FOR_BARRIER up to the pong of a ping
// sent now with nonce LAST_SENT — every answer to what was sent before comes ahead of it. TAKE
// gets each reply; REFUSED each packet refusal (rate_exceeded, invalid_argument: out of order
// after a refused packet, frame_exceeds_buffer).
void read_replies(WireClient& c, bool wait_for_barrier, std::uint64_t last_sent,
                  const std::function<void(const Received&)>& take,
                  const std::function<void(const ServerError&)>& refused);

}  // namespace vigil::client
