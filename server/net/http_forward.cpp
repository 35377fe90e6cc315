#include "server/net/http_forward.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <memory>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace vigil::server {
namespace {

constexpr std::size_t kChunkBytes = 256 * 1024;

struct Base {
  std::string host, port;
};

// "http://HOST:PORT" (HOST may be "[v6]").
Base parse_base(const std::string& base) {
  constexpr std::string_view scheme = "http://";
  if (base.rfind(scheme, 0) != 0) throw ForwardFailed("node address " + base + " is not http://HOST:PORT");
  const std::string rest = base.substr(scheme.size());
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon + 1 == rest.size())
    throw ForwardFailed("node address " + base + " has no port");
  std::string host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, rest.substr(colon + 1)};
}

// The node's answer, read as it arrives.
struct Upstream {
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  std::vector<std::byte> chunk;
  std::chrono::seconds timeout;
  explicit Upstream(asio::any_io_executor ex, std::chrono::seconds t) : stream(std::move(ex)), timeout(t) {
    parser.body_limit(boost::none);  // an export of any length: read chunk by chunk
  }

  // The next piece of the body; nullopt once it is all read.
  asio::awaitable<std::optional<std::vector<std::byte>>> next() {
    if (parser.is_done()) co_return std::nullopt;
    chunk.resize(kChunkBytes);
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    stream.expires_after(timeout);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
    (void)n;
    if (ec && ec != http::error::need_buffer) throw ForwardFailed("the node's answer broke off: " + ec.message());
    chunk.resize(kChunkBytes - parser.get().body().size);
    co_return std::move(chunk);
  }
};

// The node's header fields a viewer gets: all but the hop-by-hop ones (and the length and
// encoding, which the relaying answer sets for itself).
template <class From, class To>
void copy_fields(const From& from, To& to) {
  for (const auto& f : from) {
    switch (f.name()) {
      case http::field::connection:
      case http::field::keep_alive:
      case http::field::transfer_encoding:
      case http::field::content_length:
      case http::field::te:
      case http::field::trailer:
      case http::field::upgrade: continue;
      default: to.set(f.name_string(), f.value());
    }
  }
}

}  // namespace

asio::awaitable<HttpReply> forward_http(const std::string& base, const HttpRequest& req,
                                        const ForwardOptions& options) {
  const Base where = parse_base(base);
  auto ex = co_await asio::this_coro::executor;
  auto up = std::make_shared<Upstream>(ex, options.timeout);
  tcp::resolver resolver(ex);
  auto [rec, endpoints] = co_await resolver.async_resolve(where.host, where.port, asio::as_tuple(asio::use_awaitable));
  if (rec) throw ForwardFailed("node address " + base + " does not resolve: " + rec.message());
  up->stream.expires_after(options.timeout);
  auto [cec, ep] = co_await up->stream.async_connect(endpoints, asio::as_tuple(asio::use_awaitable));
  (void)ep;
  if (cec) throw ForwardFailed("node at " + base + " is unreachable: " + cec.message());

  http::request<http::empty_body> out{req.method(), req.target(), 11};
  out.set(http::field::host, where.host + ":" + where.port);
  out.set(kForwardedByField, options.from_node);
  for (auto f : {http::field::authorization, http::field::range, http::field::if_range, http::field::if_none_match,
                 http::field::accept}) {
    if (const auto v = req[f]; !v.empty()) out.set(f, v);
  }
  out.keep_alive(false);
  auto [wec, wn] = co_await http::async_write(up->stream, out, asio::as_tuple(asio::use_awaitable));
  (void)wn;
  if (wec) throw ForwardFailed("node at " + base + " is unreachable: " + wec.message());
  const bool head = req.method() == http::verb::head;
  if (head) up->parser.skip(true);
  auto [hec, hn] =
      co_await http::async_read_header(up->stream, up->buffer, up->parser, asio::as_tuple(asio::use_awaitable));
  (void)hn;
  if (hec) throw ForwardFailed("node at " + base + " did not answer: " + hec.message());
  const auto& got = up->parser.get();
  const auto length = up->parser.content_length();

  if (head || up->parser.is_done() || (length && *length <= options.whole_bytes)) {
    HttpResponse res{got.result(), req.version()};
    copy_fields(got, res);
    std::string body;
    for (;;) {
      // Awaited on its own line: GCC 12 mishandles a co_await in a loop's condition.
      std::optional<std::vector<std::byte>> piece = co_await up->next();
      if (!piece) break;
      body.append(reinterpret_cast<const char*>(piece->data()), piece->size());
    }
    res.keep_alive(req.keep_alive());
    if (head && length) {
      res.content_length(*length);  // what a GET would answer: the node's length, no body
    } else {
      res.body() = std::move(body);
      res.content_length(res.body().size());
    }
    co_return res;
  }
  StreamedResponse res{got.result(), req.version()};
  copy_fields(got, res);
  res.keep_alive(req.keep_alive());
  res.next = [up]() { return up->next(); };
  co_return res;
}

}  // namespace vigil::server
