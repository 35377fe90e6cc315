#pragma once
// One wire-protocol connection after accept (and the TLS handshake): hello and its token, then
// the session's recording (RecordingChannel) and playback (PlaybackChannel). Two coroutines on the
// session's thread: the reader takes the client's frames (straight into the decoder's buffer)
// and acts on them; the writer sends everything the session says — replies the reader queued,
// durability acknowledgements, playback frames when their time comes — in order, one write at
// a time. The writer sleeps on a timer that the reader, the disk's IO thread (acks, newly read
// GOPs) and the pacer (next frame due) wake. No per-read timer or cancellation: a burst of
// packets costs one wake-up and one read.
// Thread: the session's io_context; never touches a disk or the database itself. Errors: a
// framing error gets one Error frame, then the connection is closed; nothing a peer sends
// throws out of run().
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <string>

#include "server/wire/wire_server.hpp"

namespace vigil::server {

// STREAM: boost::beast::tcp_stream or an ssl::stream over one (instantiated in wire_session.cpp).
// HELLO_DUE: when the peer must have said hello (accept time + the hello timeout).
template <class Stream>
boost::asio::awaitable<void> run_wire_session(Stream& stream, std::uint64_t id, const std::string& peer,
                                              const WireOptions& options,
                                              std::chrono::steady_clock::time_point hello_due);

}  // namespace vigil::server
