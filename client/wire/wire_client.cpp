#include "client/wire/wire_client.hpp"

#include <openssl/ssl.h>
#include <poll.h>

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/write.hpp>
#include <cstdlib>
#include <array>

namespace asio = boost::asio;

namespace vigil::client {

WireClient::WireClient(const std::string& address, std::chrono::milliseconds timeout) : socket_(io_) {
  const bool use_tls = address.rfind("tls://", 0) == 0;
  const std::string host_port = use_tls ? address.substr(6) : address;
  auto colon = host_port.rfind(':');
  if (colon == std::string::npos)
    throw std::invalid_argument("server address must be HOST:PORT, got '" + host_port + "'");
  std::string host = host_port.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  asio::ip::tcp::resolver resolver(io_);
  boost::system::error_code ec;
  auto results = resolver.resolve(host, host_port.substr(colon + 1), ec);
  if (ec) throw std::runtime_error("cannot resolve " + host_port + ": " + ec.message());
  asio::connect(socket_, results, ec);
  if (ec) throw std::runtime_error("cannot connect to vigild at " + host_port + ": " + ec.message());
  // Plain blocking IO with kernel timeouts: the CLI does one thing at a time.
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (!use_tls) return;
  tls_context_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  tls_context_->set_options(asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                            asio::ssl::context::no_tlsv1_1);
  if (const char* ca = std::getenv("VIGIL_TLS_CA"); ca && *ca) {
    tls_context_->load_verify_file(ca, ec);
    if (ec) throw std::runtime_error(std::string("cannot read VIGIL_TLS_CA ") + ca + ": " + ec.message());
  } else {
    tls_context_->set_default_verify_paths();
  }
  tls_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket_, *tls_context_);
  tls_->set_verify_mode(asio::ssl::verify_peer);
  tls_->set_verify_callback(asio::ssl::host_name_verification(host));
  SSL_set_tlsext_host_name(tls_->native_handle(), host.c_str());  // SNI: a courtesy; verification does not rely on it
  tls_->handshake(asio::ssl::stream_base::client, ec);
  if (ec) throw std::runtime_error("TLS handshake with vigild at " + host_port + " failed: " + ec.message());
}

void WireClient::end_recording(std::uint64_t stream_id) {
  proto::Envelope end;
  end.mutable_end_record()->set_stream_id(stream_id);
  send(end);
}

void WireClient::send(const proto::Envelope& msg, std::span<const std::byte> payload) {
  queue(msg, payload);
  flush();
}

void WireClient::queue(const proto::Envelope& msg, std::span<const std::byte> payload) {
  const std::size_t declared = msg.has_media_packet() ? msg.media_packet().payload_bytes() : 0;
  if (declared != payload.size()) {
    throw std::invalid_argument("queue: payload of " + std::to_string(payload.size()) +
                                " bytes does not match the declared " + std::to_string(declared));
  }
  proto::append_frame_header(out_, msg);
  queued_.push_back({out_.size(), payload});
}

void WireClient::flush() {
  if (queued_.empty()) return;
  // Headers from out_, payloads from where the caller keeps them, in order.
  std::vector<asio::const_buffer> pieces;
  pieces.reserve(2 * queued_.size());
  std::size_t header_start = 0;
  for (const auto& q : queued_) {
    pieces.emplace_back(out_.data() + header_start, q.header_end - header_start);
    if (!q.payload.empty()) pieces.emplace_back(q.payload.data(), q.payload.size());
    header_start = q.header_end;
  }
  boost::system::error_code ec;
  if (tls_) asio::write(*tls_, pieces, ec);
  else asio::write(socket_, pieces, ec);
  out_.clear();
  queued_.clear();
  if (ec) throw std::runtime_error("sending to vigild failed: " + ec.message());
}

Received WireClient::receive() { return *receive_frame(true); }

std::optional<Received> WireClient::try_receive() { return receive_frame(false); }

bool WireClient::readable_now() {
  if (tls_ && ::SSL_pending(tls_->native_handle()) > 0) return true;
  pollfd p{socket_.native_handle(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;  // data, end of stream or an error: a read will not wait
}

std::optional<Received> WireClient::receive_frame(bool wait) {
  for (;;) {
    auto next = decoder_.next();
    if (!next) throw std::runtime_error("bad frame from vigild: " + next.error().message());
    if (*next) {
      Received r{std::move((*next)->msg), {(*next)->payload.begin(), (*next)->payload.end()}};
      if (r.msg.has_error()) {
        throw ServerError(r.msg.error().code(), r.msg.error().message(), r.msg.error().related_sequence(),
                          r.msg.error().request_id());
      }
      return r;
    }
    if (!wait && !readable_now()) return std::nullopt;
    boost::system::error_code ec;
    auto room = decoder_.prepare(64 * 1024);
    const auto buf = asio::buffer(room.data(), room.size());
    std::size_t n = tls_ ? tls_->read_some(buf, ec) : socket_.read_some(buf, ec);
    if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) {
      throw std::runtime_error("vigild closed the connection");
    }
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      throw std::runtime_error("vigild did not answer in time");
    }
    if (ec) throw std::runtime_error("reading from vigild failed: " + ec.message());
    decoder_.commit(n);
  }
}

proto::HelloReply WireClient::hello(const std::string& client_name, const std::string& token) {
  proto::Envelope msg;
  auto* h = msg.mutable_hello();
  h->set_client_name(client_name);
  h->set_client_version(VIGIL_VERSION);
  h->set_protocol_version(proto::kProtocolVersion);
  h->set_auth_token(token);
  send(msg);
  auto reply = receive();
  if (!reply.msg.has_hello_reply()) throw std::runtime_error("vigild answered hello with an unexpected message");
  return reply.msg.hello_reply();
}

}  // namespace vigil::client
